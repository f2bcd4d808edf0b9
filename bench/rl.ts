/**
 * RL step throughput: `trainRl` itself (rollouts with the KV-cache sampler, rewards, advantages,
 * one PPO update) on a small config: 8 tasks × groups of 8 on lookup and bridge tasks, GRPO,
 * token-mean, no boundary tracking. The policy is the shipped `models/base-strong` (realistic
 * episode lengths); without it, a randomly initialised model of the same shape (its episodes are
 * short format failures, so the figures are not comparable: `rl_shipped_base` says which).
 * The first step compiles and is not counted; the figures are over the next three.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { keyFromSeed } from "../src/engine/init.ts";
import { disposeTree } from "../src/engine/tree.ts";
import { saveModelCheckpoint } from "../src/policy/embedded/checkpoint.ts";
import { initGpt } from "../src/policy/embedded/model.ts";
import { createWordTokenizer } from "../src/policy/embedded/tokenizer.ts";
import { DEFAULT_PRETRAIN_CONFIG } from "../src/pretrain/config.ts";
import { embeddedVocabulary } from "../src/pretrain/corpus.ts";
import { parseRlConfig } from "../src/rl/config.ts";
import { trainRl } from "../src/rl/train.ts";
import { createRunDirectory } from "../src/store/index.ts";

const SHIPPED_BASE = "models/base-strong";
const STEPS = 4;

export async function benchRl(): Promise<Record<string, number>> {
  const root = mkdtempSync(join(tmpdir(), "agentrl-bench-rl-"));
  try {
    let base = SHIPPED_BASE;
    if (!existsSync(join(SHIPPED_BASE, "checkpoint.json"))) {
      base = join(root, "random-base");
      const tokenizer = createWordTokenizer(embeddedVocabulary());
      const config = { vocabSize: tokenizer.vocabSize, ...DEFAULT_PRETRAIN_CONFIG.model };
      const params = initGpt(config, keyFromSeed(0));
      await saveModelCheckpoint(base, { config, tokenizer, params });
      disposeTree(params);
    }
    const config = parseRlConfig({
      name: "bench",
      base,
      steps: STEPS,
      families: ["lookup", "bridge"],
      tasksPerStep: 8,
      groupSize: 8,
      dynamicSampling: false,
      evalEvery: 0,
      checkpointEvery: STEPS,
    });
    const { directory, store, run } = createRunDirectory({ kind: "rl", root, config, id: "bench" });
    await trainRl({ config, runDir: directory, store, runId: run.id });
    const series = (key: string) =>
      store
        .metrics(run.id, key)
        .filter((point) => point.step > 1)
        .map((point) => point.value);
    const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
    const rollout = series("perf/rollout_seconds");
    const update = series("perf/update_seconds");
    const seconds = sum(rollout) + sum(update);
    // Every episode that ran: the scored ones and those left out for an infra failure.
    const infraFailures = sum(series("rollout/infra_failures"));
    const episodes = sum(series("rollout/episodes")) + infraFailures;
    const tokens = sum(series("perf/tokens_per_s").map((rate, i) => rate * (rollout[i] + update[i])));
    store.close();
    return {
      rl_episodes_per_s: episodes / seconds,
      rl_infra_failures: infraFailures,
      rl_tokens_per_s: tokens / seconds,
      rl_rollout_share: sum(rollout) / seconds,
      rl_update_share: sum(update) / seconds,
      rl_shipped_base: base === SHIPPED_BASE ? 1 : 0,
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
