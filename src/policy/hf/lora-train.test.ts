/**
 * The LoRA pieces compose with the lab's trainer (engine/train.ts): compiled steps of AdamW on the
 * adapter alone, with the frozen base passed in the batch, run on ONNX Runtime and lower the masked
 * cross-entropy of the fixture batch; the base weights are not touched. (Dropout needs a random key
 * as an input, which the ONNX lowering does not take: with dropout > 0 the step runs on jax-js.)
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { np, random } from "../../engine/jax.ts";
import { createTrainer } from "../../engine/train.ts";
import { disposeTree, flattenTree, refTree, treeFromHost } from "../../engine/tree.ts";
import { crossEntropy } from "../embedded/losses.ts";
import { initLora, type LoraParams } from "./lora.ts";
import type { HfParams } from "./model.ts";
import { maxAbsDiff } from "./testing-fixtures.ts";
import { type LoraReference, readLoraReference } from "./testing-lora.ts";
import { type HfLoraBatch, hfLoraTokenLoss } from "./token-loss.ts";

/** The fixture batch with token-mean weights over the masked tokens (cross-entropy needs no extras). */
function sftBatch(reference: LoraReference, base: HfParams): HfLoraBatch {
  const [B, T] = [reference.ids.length, reference.ids[0].length];
  const mask = reference.mask.flat();
  const count = mask.reduce((a, b) => a + b, 0);
  return {
    ids: np.array(Int32Array.from(reference.ids.flat()), { shape: [B, T], dtype: np.int32 }),
    weights: np.array(
      Float32Array.from(mask, (m) => m / count),
      { shape: [B, T] },
    ),
    extra: {},
    base,
  };
}

/**
 * Records the compiled programs that fell back to jax-js (a warning each) until `stop()`, which
 * returns them; process warnings are emitted on the next tick, so it waits for one.
 */
function watchFallbacks(): { stop(): Promise<string[]> } {
  const fallbacks: string[] = [];
  const onWarning = (warning: Error) => {
    if (/runs on jax-js/.test(warning.message)) fallbacks.push(warning.message.slice(-120));
  };
  process.on("warning", onWarning);
  return {
    async stop() {
      await new Promise((resolve) => setImmediate(resolve));
      process.off("warning", onWarning);
      return fallbacks;
    },
  };
}

for (const name of ["llama3-bf16", "gpt2"] as const)
  test(`${name}: the compiled gradient program (ONNX Runtime) gives PEFT's LoRA gradients within 1e-4`, async () => {
    const reference = readLoraReference(name);
    const trainer = createTrainer<LoraParams, HfLoraBatch>({
      loss: hfLoraTokenLoss(reference.base.config, reference.config, crossEntropy),
    });
    const params = treeFromHost<LoraParams>(reference.adapter);
    const watch = watchFallbacks();
    try {
      const { loss, grads } = await trainer.gradients(params, [
        sftBatch(reference, treeFromHost(reference.base.tensors)),
      ]);
      assert.ok(
        Math.abs(loss - reference.losses.sft.value) <= 1e-4,
        `loss ${loss}, PEFT ${reference.losses.sft.value}`,
      );
      for (const [path, leaf] of flattenTree(grads)) {
        const error = maxAbsDiff(leaf.dataSync() as Float32Array, reference.losses.sft.grads[path]);
        assert.ok(error <= 1e-4, `${path}: max |Δgrad| ${error}`);
      }
      assert.deepEqual(await watch.stop(), [], "the gradient program ran on ONNX Runtime");
    } finally {
      trainer.dispose();
      disposeTree(params as never);
    }
  });

test("compiled AdamW steps on a fresh adapter lower the masked loss; the base is unchanged", async () => {
  const reference = readLoraReference("qwen3-tied");
  const model = reference.base.config;
  const config = reference.config; // dropout 0
  const trainer = createTrainer<LoraParams, HfLoraBatch>({
    loss: hfLoraTokenLoss(model, config, crossEntropy),
  });
  const base = treeFromHost<HfParams>(reference.base.tensors);
  const batch = (): HfLoraBatch => sftBatch(reference, refTree(base));
  const watch = watchFallbacks();
  let state = trainer.init(initLora(config, model, random.key(0)));
  const losses: number[] = [];
  try {
    for (let step = 0; step < 8; step++) {
      const [next, result] = await trainer.step(state, [batch()], 1e-2);
      state = next;
      losses.push(result.loss);
    }
    // The step (the forward's backward included) lowers to ONNX Runtime, as the lab's GPT steps do.
    assert.deepEqual(await watch.stop(), []);
  } finally {
    trainer.dispose();
  }
  // B starts at 0: the first loss is the base model's; training moves it down.
  assert.ok(losses.at(-1)! < losses[0] - 0.5, `losses ${losses.map((l) => l.toFixed(3)).join(" ")}`);
  const embed = base.embed.ref.dataSync() as Float32Array;
  assert.deepEqual(embed, reference.base.tensors.embed.data);
  disposeTree(base as never);
  disposeTree(state.params as never);
});
