/**
 * Gradient parity with PyTorch + PEFT (scripts/hf-lora-fixtures.py): on the tiny Qwen3 (tied),
 * Llama 3 and GPT-2 checkpoints with r = 4, alpha = 8 adapters on every projection (the seven;
 * GPT-2's c_attn, c_proj, c_fc) (B random, not PEFT's zero), the lab's token losses through the adapted forward (hfLoraTokenLoss with crossEntropy and
 * ppoLoss) give PEFT's loss and every lora_A / lora_B gradient within 1e-4 in float32.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type JaxArray, jax } from "../../engine/jax.ts";
import { disposeTree, flattenTree, treeFromHost } from "../../engine/tree.ts";
import { ppoLoss } from "../../rl/loss.ts";
import { crossEntropy, type PerTokenLoss } from "../embedded/losses.ts";
import type { LoraParams } from "./lora.ts";
import { maxAbsDiff } from "./testing-fixtures.ts";
import {
  LORA_FIXTURE_NAMES,
  type LoraReference,
  loraReferenceBatch,
  readLoraReference,
} from "./testing-lora.ts";
import { type HfLoraBatch, hfLoraTokenLoss } from "./token-loss.ts";

const TOLERANCE = 1e-4;

function lossAndGrads(reference: LoraReference, perToken: PerTokenLoss, entropy: boolean) {
  const loss = hfLoraTokenLoss(reference.base.config, reference.config, perToken, { entropy });
  const [[value, metrics], grads] = jax.valueAndGrad(
    (p: LoraParams, b: HfLoraBatch) => {
      const out = loss(p, b);
      return [out.loss, out.metrics] as never;
    },
    { hasAux: true },
  )(
    treeFromHost<LoraParams>(reference.adapter) as never,
    loraReferenceBatch(reference) as never,
  ) as unknown as [[JaxArray, Record<string, JaxArray>], LoraParams];
  const got = new Map(
    flattenTree(grads).map(([path, leaf]) => [path, leaf.ref.dataSync() as Float32Array] as const),
  );
  disposeTree(grads as never);
  const metricValues = Object.fromEntries(
    Object.entries(metrics).map(([name, m]) => [name, m.item() as number] as const),
  );
  return { value: value.item() as number, grads: got, metrics: metricValues };
}

for (const name of LORA_FIXTURE_NAMES) {
  const reference = readLoraReference(name);
  const cases: [string, "sft" | "ppo", PerTokenLoss, boolean][] = [
    ["masked cross-entropy", "sft", crossEntropy, false],
    ["PPO-clip", "ppo", ppoLoss({ clipLow: reference.clip[0], clipHigh: reference.clip[1] }), true],
  ];
  for (const [title, key, perToken, entropy] of cases) {
    test(`${name}, ${title}: the loss and every LoRA gradient equal PEFT's within ${TOLERANCE}`, (t) => {
      const expected = reference.losses[key];
      const { value, grads, metrics } = lossAndGrads(reference, perToken, entropy);
      assert.ok(Math.abs(value - expected.value) <= TOLERANCE, `loss ${value}, PEFT ${expected.value}`);
      const paths = Object.keys(expected.grads);
      assert.deepEqual([...grads.keys()].sort(), [...paths].sort());
      let worst = 0;
      const largest = { a: 0, b: 0 };
      for (const path of paths) {
        const error = maxAbsDiff(grads.get(path)!, expected.grads[path]);
        assert.ok(error <= TOLERANCE, `${path}: max |Δgrad| ${error}`);
        worst = Math.max(worst, error);
        const part = path.endsWith(".a") ? "a" : "b";
        largest[part] = Math.max(largest[part], ...expected.grads[path].map(Math.abs));
      }
      // The comparison has something to compare: both factors' gradients are far from zero.
      assert.ok(largest.a > 1e-2 && largest.b > 1e-2, `largest |grad| A ${largest.a}, B ${largest.b}`);
      if (key === "ppo") {
        const clipped = metrics["policy/clip_fraction"];
        assert.ok(clipped > 0 && clipped < 1, `some tokens clipped, some not (${clipped})`);
      }
      t.diagnostic(
        `${name} ${key}: |Δloss| ${Math.abs(value - expected.value).toExponential(2)}, max |Δgrad| ${worst.toExponential(2)} over ${paths.length} tensors`,
      );
    });
  }
}
