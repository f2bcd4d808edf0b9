/**
 * Gradient parity with PyTorch for full fine-tuning (scripts/hf-full-fixtures.py): on the tiny
 * Qwen3 (untied head, q/k norms), Qwen2.5 (tied head, q/k/v biases) and GPT-2 (tied, learned
 * positions, Conv1D weights, fused c_attn) checkpoints in float32, the lab's token losses through
 * the whole model (hfFullTokenLoss: PPO-clip on Qwen3, masked cross-entropy on the others) give
 * transformers' loss and the gradient of every parameter within 1e-4, both eagerly on jax-js and
 * from the compiled gradient program the trainer runs (createFullTrainer, ONNX Runtime). Our
 * gradients are compared in transformers' names and layouts (weights.ts `hfTensorsOfParams`: a
 * tied embedding's gradient is the sum of its two uses, GPT-2's q/k/v gradients fused back).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { type JaxArray, jax } from "../../engine/jax.ts";
import { readSafetensorsFile } from "../../engine/safetensors.ts";
import { disposeTree, flattenTree, type HostTensor, type ParamTree } from "../../engine/tree.ts";
import { ppoLoss } from "../../rl/loss.ts";
import { crossEntropy, type PerTokenLoss, type TokenBatch } from "../embedded/losses.ts";
import { createFullTrainer, fullParams } from "./lora-trainer.ts";
import type { HfParams } from "./model.ts";
import { FIXTURES, maxAbsDiff } from "./testing-fixtures.ts";
import { floats, referenceTokenBatch } from "./testing-lora.ts";
import { hfFullTokenLoss } from "./token-loss.ts";
import { hfTensorsOfParams, loadHfCheckpoint } from "./weights.ts";

const TOLERANCE = 1e-4;
const FULL_FIXTURES = join(FIXTURES, "full");

interface FullReference {
  base: string;
  loss: "sft" | "ppo";
  value: number;
  ids: number[][];
  mask: number[][];
  advantages: string;
  old_logprobs: string;
  clip: [number, number];
}

function batchOf(reference: FullReference): TokenBatch {
  return referenceTokenBatch(
    reference.ids,
    reference.mask,
    reference.loss === "ppo"
      ? { oldLogprobs: floats(reference.old_logprobs), advantages: floats(reference.advantages) }
      : undefined,
  );
}

/** Our gradient tree in transformers' tensor names and layouts. */
async function hfNamed(
  config: ReturnType<typeof loadHfCheckpoint>["config"],
  grads: ParamTree,
): Promise<Record<string, HostTensor>> {
  const byPath: Record<string, HostTensor> = {};
  for (const [path, leaf] of flattenTree(grads))
    byPath[path] = {
      dtype: "float32",
      shape: [...leaf.shape],
      data: leaf.ref.dataSync() as HostTensor["data"],
    };
  disposeTree(grads);
  return hfTensorsOfParams(config, byPath);
}

/** Max |Δ| per tensor against the reference's gradients (asserting the same names and the tolerance). */
function compare(got: Record<string, HostTensor>, expected: Record<string, HostTensor>, label: string) {
  assert.deepEqual(Object.keys(got).sort(), Object.keys(expected).sort());
  let worst = 0;
  let largest = 0;
  for (const [name, tensor] of Object.entries(expected)) {
    assert.deepEqual(got[name].shape, tensor.shape, `${label} ${name}: shape`);
    const error = maxAbsDiff(got[name].data as Float32Array, tensor.data as Float32Array);
    assert.ok(error <= TOLERANCE, `${label} ${name}: max |Δgrad| ${error}`);
    worst = Math.max(worst, error);
    largest = Math.max(
      largest,
      maxAbsDiff(tensor.data as Float32Array, new Float32Array(tensor.data.length)),
    );
  }
  // Something to compare: the gradients are far from zero.
  assert.ok(largest > 1e-1, `${label}: largest |grad| ${largest}`);
  return worst;
}

for (const name of ["qwen3-untied-sharded", "qwen2.5", "gpt2"] as const) {
  const reference = JSON.parse(
    readFileSync(join(FULL_FIXTURES, name, "reference.json"), "utf8"),
  ) as FullReference;
  const expected = readSafetensorsFile(join(FULL_FIXTURES, name, "grads.safetensors")).tensors;
  const checkpoint = loadHfCheckpoint(join(FIXTURES, reference.base));
  const perToken: PerTokenLoss =
    reference.loss === "ppo"
      ? ppoLoss({ clipLow: reference.clip[0], clipHigh: reference.clip[1] })
      : crossEntropy;
  const entropy = reference.loss === "ppo";
  const title = reference.loss === "ppo" ? "PPO-clip" : "masked cross-entropy";

  test(`${name}, ${title}: the loss and every parameter's gradient equal transformers' within ${TOLERANCE}`, async (t) => {
    const loss = hfFullTokenLoss(checkpoint.config, perToken, { entropy });
    const [[value, metrics], grads] = jax.valueAndGrad(
      (p: HfParams, b: TokenBatch) => {
        const out = loss(p, b);
        return [out.loss, out.metrics] as never;
      },
      { hasAux: true },
    )(fullParams(checkpoint) as never, batchOf(reference) as never) as unknown as [
      [JaxArray, Record<string, JaxArray>],
      HfParams,
    ];
    const got = value.item() as number;
    assert.ok(Math.abs(got - reference.value) <= TOLERANCE, `loss ${got}, transformers ${reference.value}`);
    if (reference.loss === "ppo") {
      const clipped = metrics["policy/clip_fraction"].item() as number;
      assert.ok(clipped > 0 && clipped < 1, `some tokens clipped, some not (${clipped})`);
    } else for (const metric of Object.values(metrics)) metric.dispose();
    const worst = compare(await hfNamed(checkpoint.config, grads), expected, name);
    t.diagnostic(
      `${name} ${reference.loss}: |Δloss| ${Math.abs(got - reference.value).toExponential(2)}, max |Δgrad| ${worst.toExponential(2)} over ${Object.keys(expected).length} tensors`,
    );
  });

  test(`${name}, ${title}: the compiled gradient program (ONNX Runtime) gives the same within ${TOLERANCE}`, async (t) => {
    const trainer = createFullTrainer(checkpoint, { loss: perToken, lossOptions: { entropy } });
    const params = fullParams(checkpoint);
    const fallbacks: string[] = [];
    const onWarning = (warning: Error) => {
      if (/runs on jax-js/.test(warning.message)) fallbacks.push(warning.message.slice(-120));
    };
    process.on("warning", onWarning);
    try {
      const { loss, grads } = await trainer.gradients(params, [batchOf(reference)]);
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
      assert.deepEqual(fallbacks, [], "the gradient program ran on ONNX Runtime");
      assert.ok(
        Math.abs(loss - reference.value) <= TOLERANCE,
        `loss ${loss}, transformers ${reference.value}`,
      );
      const worst = compare(await hfNamed(checkpoint.config, grads), expected, `${name} compiled`);
      t.diagnostic(`${name} ${reference.loss} compiled: max |Δgrad| ${worst.toExponential(2)}`);
    } finally {
      process.off("warning", onWarning);
      trainer.dispose();
      disposeTree(params as never);
    }
  });
}
