/**
 * Do fully fine-tuned checkpoints load in transformers with the engine's logits? `train` runs a
 * `train rl` (2 steps of 4 episodes, src/rl/testing-hf.ts's config and environment, `lora: false`)
 * and a `train sft` (6 steps on 24 collected lookup episodes, `lora: false`) on fixtures/qwen3-chat
 * into <dir>/rl and <dir>/sft; scripts/hf-full-load-check.py then loads each `model/` folder with
 * transformers and writes its logits on fixed ids to <dir>/torch.json; `compare` prints the
 * largest difference from the engine's logits of the same folder (through `hf:`), and how far
 * training moved them from the base's.
 *
 *   node scripts/hf-full-load-check.ts train <dir>
 *   /work/pyvenv/bin/python scripts/hf-full-load-check.py <dir>
 *   node scripts/hf-full-load-check.ts compare <dir>
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { collectDataset } from "../src/data/collect.ts";
import { HfEngineModel } from "../src/policy/hf/engine.ts";
import { loadHfPolicy } from "../src/policy/hf/load.ts";
import { CHAT_FOLDER } from "../src/policy/hf/testing-chat-task.ts";
import { chatEnvironment, hfConfig } from "../src/rl/testing-hf.ts";
import { trainRl } from "../src/rl/train.ts";
import { parseSftConfig } from "../src/sft/config.ts";
import { trainSft } from "../src/sft/train.ts";
import { createRunDirectory } from "../src/store/index.ts";

const [mode, dir] = process.argv.slice(2);
const ids = Int32Array.from({ length: 48 }, (_, i) => (i * 37) % 400);

if (mode === "train") {
  const rlConfig = hfConfig({ lora: false, learningRate: 2e-3 });
  const rl = createRunDirectory({ kind: "rl", root: dir, config: rlConfig, id: "rl" });
  await trainRl({
    config: rlConfig,
    runDir: rl.directory,
    store: rl.store,
    runId: "rl",
    env: chatEnvironment(),
  });
  rl.store.close();
  const data = join(dir, "data");
  await collectDataset({ tasks: { count: 24, seed: 1, family: "lookup" }, seed: 1, noise: 0, out: data });
  const sftConfig = parseSftConfig({
    name: "hf-sft-full",
    base: `hf:${CHAT_FOLDER}`,
    data: [data],
    steps: 6,
    tokensPerStep: 1024,
    microBatchTokens: 2048,
    learningRate: 3e-3,
    warmupSteps: 0,
    heldoutFraction: 0.25,
    heldoutEvery: 6,
    lora: false,
  });
  const sft = createRunDirectory({ kind: "sft", root: dir, config: sftConfig, id: "sft" });
  await trainSft({ config: sftConfig, runDir: sft.directory, store: sft.store, runId: "sft" });
  sft.store.close();
  console.log(`wrote ${dir}/rl/model and ${dir}/sft/model`);
} else if (mode === "compare") {
  const torch = JSON.parse(readFileSync(join(dir, "torch.json"), "utf8")) as Record<string, number[]>;
  const base = HfEngineModel.load(CHAT_FOLDER);
  const baseLogits = base.logits(ids, 1);
  base.dispose();
  for (const run of ["rl", "sft"]) {
    const policy = await loadHfPolicy(join(dir, run, "model"));
    const logits = policy.model.logits(ids, 1);
    const max = (other: ArrayLike<number>) =>
      Array.from(logits).reduce((m, x, i) => Math.max(m, Math.abs(x - other[i])), 0);
    console.log(
      `${run}/model: engine vs transformers ${max(torch[run]).toExponential(2)}; trained vs base (engine) ${max(baseLogits).toFixed(3)}; largest |logit| ${Math.max(...Array.from(logits, Math.abs)).toFixed(2)}`,
    );
    policy.model.dispose();
    await policy.close();
  }
} else {
  throw new Error("usage: node scripts/hf-full-load-check.ts train|compare <dir>");
}
