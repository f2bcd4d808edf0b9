/**
 * The Hugging Face forward is differentiable in jax-js (for training on these checkpoints): the
 * loss of the one-hot (gather-free) forward equals the one from transformers' logits, and its
 * gradient agrees with a central finite difference on the final norm's first weight.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { type JaxArray, jax, nn, np } from "../../engine/jax.ts";
import { disposeTree, type HostTensor, refTree, treeFromHost } from "../../engine/tree.ts";
import { type HfParams, hfLogits } from "./model.ts";
import { FIXTURES, readReference } from "./testing-fixtures.ts";
import { loadHfCheckpoint } from "./weights.ts";

test("Qwen3: the loss's gradient matches a finite difference", () => {
  const reference = readReference("qwen3-tied");
  const checkpoint = loadHfCheckpoint(join(FIXTURES, "qwen3-tied"));
  const config = checkpoint.config;
  const [B, T] = [reference.ids.length, reference.ids[0].length];
  const V = config.vocabSize;
  // Mean negative log-likelihood of each next token.
  const ids = Int32Array.from(reference.ids.flat());
  const targets = new Float32Array(B * (T - 1) * V);
  reference.ids.forEach((row, b) => {
    for (let t = 0; t < T - 1; t++) targets[(b * (T - 1) + t) * V + row[t + 1]] = 1;
  });
  const loss = (p: HfParams): JaxArray => {
    const logits = hfLogits(p, np.array(ids, { shape: [B, T], dtype: np.int32 }), config).slice(
      [],
      [0, T - 1],
    );
    const target = np.array(targets, { shape: [B, T - 1, V] });
    return nn
      .logSoftmax(logits, -1)
      .mul(target)
      .sum()
      .mul(-1 / (B * (T - 1)));
  };
  let expected = 0;
  reference.ids.forEach((row, b) => {
    for (let t = 0; t < T - 1; t++) {
      const z = reference.logits.subarray((b * T + t) * V, (b * T + t + 1) * V);
      const top = Math.max(...z);
      expected -= z[row[t + 1]] - (Math.log(z.reduce((s, x) => s + Math.exp(x - top), 0)) + top);
    }
  });
  expected /= B * (T - 1);

  const params = treeFromHost<HfParams>(checkpoint.tensors);
  const [value, grads] = jax.valueAndGrad(loss)(refTree(params)) as unknown as [JaxArray, HfParams];
  const got = value.item() as number;
  assert.ok(Math.abs(got - expected) < 1e-4, `loss ${got}, from transformers' logits ${expected}`);
  const analytic = (grads.norm.ref.dataSync() as Float32Array)[0];
  disposeTree(grads as never);

  const h = 1e-2;
  const shifted = (delta: number) => {
    const norm = checkpoint.tensors.norm;
    const data = Float32Array.from(norm.data as Float32Array);
    data[0] += delta;
    const tensors: Record<string, HostTensor> = { ...checkpoint.tensors, norm: { ...norm, data } };
    return loss(treeFromHost<HfParams>(tensors)).item() as number;
  };
  const numeric = (shifted(h) - shifted(-h)) / (2 * h);
  assert.ok(Math.abs(analytic) > 1e-4, `a gradient to compare (${analytic})`);
  assert.ok(
    Math.abs(analytic - numeric) <= 2e-2 * Math.abs(numeric) + 1e-4,
    `analytic ${analytic}, finite difference ${numeric}`,
  );
  disposeTree(params as never);
});
