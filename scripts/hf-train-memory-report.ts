/**
 * The memory record of an `hf:` RL run (scripts/hf-train-memory.sh): per step the peak resident
 * set, the rollout and update seconds and the tokens of its episodes, read from the run's store.
 *
 *   node scripts/hf-train-memory-report.ts <run directory> <config file>
 */
import { readFileSync } from "node:fs";
import { directoryRun, openRunDirectory } from "../src/store/index.ts";
import { flattenTrajectory } from "../src/types/trajectory.ts";

const [directory, configFile] = process.argv.slice(2);
const store = openRunDirectory(directory, { readOnly: true });
const run = directoryRun(store, directory);
const value = (key: string, step: number) =>
  store.metrics(run.id, key).find((p) => p.step === step)?.value ?? null;
const steps = store.metrics(run.id, "memory/peak_rss_mb").map((point) => ({
  step: point.step,
  peak_rss_mb: Math.round(point.value),
  rollout_seconds: Number(value("perf/rollout_seconds", point.step)?.toFixed(1)),
  update_seconds: Number(value("perf/update_seconds", point.step)?.toFixed(1)),
  episode_tokens: store
    .trajectories(run.id, { step: point.step })
    .map((t) => flattenTrajectory(t).tokenIds.length),
}));
const model = JSON.parse(
  readFileSync(`${(run.config as { base: string }).base.slice(3)}/config.json`, "utf8"),
);
console.log(
  JSON.stringify(
    {
      what: "train rl --policy hf: with LoRA on a random Qwen3 at SmolLM2-135M's size (scripts/hf-train-memory.sh)",
      model: {
        layers: model.num_hidden_layers,
        hidden: model.hidden_size,
        vocab: model.vocab_size,
        dtype: "float32",
      },
      config: JSON.parse(readFileSync(configFile, "utf8")),
      steps,
    },
    null,
    2,
  ),
);
store.close();
