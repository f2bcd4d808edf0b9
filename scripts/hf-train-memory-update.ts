/**
 * The LoRA update alone on a checkpoint folder (scripts/hf-train-memory-checkpoint.py): STEPS
 * optimizer steps on one synthetic row of T tokens, printing the resident set after each (the
 * "update alone" rows of docs/real-checkpoints.md, outputs in docs/results/hf-train-memory-update.txt).
 * `full`: the same update with full fine-tuning (every weight trained, AdamW state for all of them;
 * outputs in docs/results/hf-train-memory-full.txt).
 *
 *   node scripts/hf-train-memory-update.ts <T> <checkpoint folder> [steps] [full]
 */

import { random } from "../src/engine/jax.ts";
import { makeTokenBatches } from "../src/policy/embedded/batch.ts";
import { crossEntropy } from "../src/policy/embedded/losses.ts";
import { initLora, resolveLoraConfig } from "../src/policy/hf/lora.ts";
import { createFullTrainer, createLoraTrainer, fullParams } from "../src/policy/hf/lora-trainer.ts";
import { loadHfCheckpoint } from "../src/policy/hf/weights.ts";

const mb = () =>
  `rss ${Math.round(process.memoryUsage().rss / 1048576)} MB, peak ${Math.round(process.resourceUsage().maxRSS / 1024)} MB`;
const T = Number(process.argv[2] ?? 512);
const STEPS = Number(process.argv[4] ?? 3);
console.log("start", mb());
const ckpt = loadHfCheckpoint(process.argv[3]);
console.log("loaded", mb());
const full = process.argv[5] === "full";
const lora = resolveLoraConfig({ rank: 8, alpha: 16, targets: ["q_proj", "v_proj"] }, ckpt.config);
const trainer = (
  full
    ? createFullTrainer(ckpt, { loss: crossEntropy })
    : createLoraTrainer(ckpt, lora, { loss: crossEntropy })
) as ReturnType<typeof createLoraTrainer>;
console.log(full ? "full fine-tuning trainer" : "trainer (base on jax)", mb());
let state = trainer.init((full ? fullParams(ckpt) : initLora(lora, ckpt.config, random.key(0))) as never);
console.log("state", mb());
const ids = Array.from({ length: T }, (_, i) => (i * 7) % 400);
const batches = () =>
  makeTokenBatches([{ ids, mask: ids.map(() => 1) }], {
    maxLen: 2048,
    microBatchSize: 1,
    lengthMultiple: 64,
    normalization: "token-mean",
  });
for (let s = 0; s < STEPS; s++) {
  const t0 = performance.now();
  const [next, out] = await trainer.step(state, batches(), 1e-3);
  state = next;
  console.log(
    `step ${s} T=${T} loss ${out.loss.toFixed(3)} ${((performance.now() - t0) / 1000).toFixed(1)}s`,
    mb(),
  );
}
