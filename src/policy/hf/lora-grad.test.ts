/**
 * Gradient parity with PyTorch + PEFT (scripts/hf-lora-fixtures.py): on the tiny Qwen3 (tied),
 * Llama 3 and GPT-2 checkpoints with r = 4, alpha = 8 adapters on every projection (the seven;
 * GPT-2's c_attn, c_proj, c_fc) (B random, not PEFT's zero), the lab's token losses through the adapted forward (hfLoraTokenLoss with crossEntropy and
 * ppoLoss) give PEFT's loss and every lora_A / lora_B gradient within 1e-4 in float32.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { maxAbsDiff } from "./testing-fixtures.ts";
import { fusedLoraGradients, LORA_FIXTURE_NAMES, loraLossCases, readLoraReference } from "./testing-lora.ts";

const TOLERANCE = 1e-4;

for (const name of LORA_FIXTURE_NAMES) {
  const reference = readLoraReference(name);
  for (const [title, key, perToken, entropy] of loraLossCases(reference)) {
    test(`${name}, ${title}: the loss and every LoRA gradient equal PEFT's within ${TOLERANCE}`, (t) => {
      const expected = reference.losses[key];
      const { loss: value, grads, metrics } = fusedLoraGradients(reference, perToken, { entropy });
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
