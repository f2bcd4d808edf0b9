import assert from "node:assert/strict";
import { test } from "node:test";
import { groupSignals, isZeroVarianceGroup, moments } from "./groups.ts";
import { grpo } from "./grpo.ts";
import { advantageMetrics, advantageStats } from "./stats.ts";
import { sketchBatch } from "./testing.ts";

test("moments: sample std over the non-null values", () => {
  // [1, 0, 0, null]: mean 1/3, sample std sqrt(1/3)
  const { count, mean, std } = moments([1, 0, 0, null]);
  assert.equal(count, 3);
  assert.ok(Math.abs(mean - 1 / 3) < 1e-12 && Math.abs(std - Math.sqrt(1 / 3)) < 1e-12);
  assert.deepEqual(moments([null]), { count: 0, mean: 0, std: 0 });
  assert.deepEqual(moments([2]), { count: 1, mean: 2, std: 0 });
});

test("zero-variance groups carry no signal", () => {
  assert.equal(isZeroVarianceGroup([1, 1, 1]), true);
  assert.equal(isZeroVarianceGroup([1, null, 1]), true);
  assert.equal(isZeroVarianceGroup([1]), true);
  assert.equal(isZeroVarianceGroup([1, 0]), false);
  assert.equal(isZeroVarianceGroup([1, 0.999], 0.01), true);
  const signals = groupSignals(
    sketchBatch([
      { group: "flat", outcome: 1, turns: [1, 0] },
      { group: "flat", outcome: 1, turns: [0, 0] },
      { group: "mixed", outcome: 1 },
      { group: "mixed", outcome: 0 },
      { group: "dead", outcome: 0 },
      { group: "dead", outcome: 0 },
    ]),
  );
  assert.deepEqual(signals, [
    { group: "flat", size: 2, scored: 2, outcomeSignal: false, turnSignal: true },
    { group: "mixed", size: 2, scored: 2, outcomeSignal: true, turnSignal: false },
    { group: "dead", size: 2, scored: 2, outcomeSignal: false, turnSignal: false },
  ]);
});

test("advantage statistics and metrics over policy tokens", () => {
  // group [1, 0] (2 policy tokens each) → ±0.70711; group [1, 1] → 0, 0
  const batch = sketchBatch([
    { group: "a", outcome: 1 },
    { group: "a", outcome: 0 },
    { group: "b", outcome: 1 },
    { group: "b", outcome: 1 },
  ]);
  const result = grpo(batch);
  const stats = advantageStats(batch, result);
  assert.equal(stats.tokens, 8);
  assert.ok(Math.abs(stats.mean) < 1e-7);
  assert.ok(Math.abs(stats.max - Math.SQRT1_2) < 1e-4 && Math.abs(stats.min + Math.SQRT1_2) < 1e-4);
  assert.equal(stats.zeroFraction, 0.5);
  // population std over the 8 tokens: sqrt(4 · 0.5 / 8) = 0.5
  assert.ok(Math.abs(stats.std - 0.5) < 1e-4);
  const metrics = advantageMetrics(batch, result);
  assert.equal(metrics["rollout/zero_variance_group_fraction"], 0.5);
  assert.equal(metrics["advantage/zero_fraction"], 0.5);
});
