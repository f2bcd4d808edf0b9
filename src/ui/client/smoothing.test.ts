import assert from "node:assert/strict";
import { test } from "node:test";
import { ema } from "./smoothing.ts";

test("ema: debiased like TensorBoard, worked example", () => {
  // w = 0.5: m1 = 0.5 → 0.5/0.5 = 1; m2 = 0.25 → 0.25/0.75 = 1/3; m3 = 0.125 + 0.5 = 0.625 → 0.625/0.875 = 5/7
  const smoothed = ema([1, 0, 1], 0.5);
  assert.deepEqual(
    smoothed.map((value) => value.toFixed(6)),
    [1, 1 / 3, 5 / 7].map((value) => value.toFixed(6)),
  );
  assert.deepEqual(ema([3, 1, 2], 0), [3, 1, 2], "weight 0 leaves values unchanged");
});

test("ema: non-finite values pass through and stay out of the average", () => {
  const smoothed = ema([1, Number.NaN, 0], 0.5);
  assert.ok(Number.isNaN(smoothed[1]));
  assert.equal(smoothed[2].toFixed(6), (1 / 3).toFixed(6), "as if the NaN were not there");
  assert.throws(() => ema([1], 1), /\[0, 1\)/);
});
