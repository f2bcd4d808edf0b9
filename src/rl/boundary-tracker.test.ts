import assert from "node:assert/strict";
import { test } from "node:test";
import { type BoundaryPoint, isSharpening, sharpeningFlags, sharpeningWarning } from "./boundary-tracker.ts";

const point = (step: number, passAt1: number, passAtK: number): BoundaryPoint => ({
  step,
  passAt1,
  passAtK,
  k: 32,
});

test("sharpening: pass@k_large falls while pass@1 rises, both beyond the tolerance", () => {
  assert.equal(isSharpening(point(0, 0.3, 0.9), point(10, 0.5, 0.8), 0.01), true);
  assert.equal(isSharpening(point(0, 0.3, 0.9), point(10, 0.5, 0.95), 0.01), false, "pass@k rose");
  assert.equal(isSharpening(point(0, 0.3, 0.9), point(10, 0.2, 0.8), 0.01), false, "pass@1 fell too");
  assert.equal(isSharpening(point(0, 0.3, 0.9), point(10, 0.305, 0.8), 0.01), false, "pass@1 within noise");
  assert.equal(isSharpening(point(0, 0.3, 0.9), point(10, 0.5, 0.895), 0.01), false, "pass@k within noise");
});

test("flags against the previous evaluation and against the start, and the warning line", () => {
  // Start 0.30/0.90; step 10 0.40/0.88 (sharpening vs start and previous); step 20 0.45/0.885:
  // vs previous pass@k rose (no flag), vs start still sharper (flag since start).
  const history = [point(0, 0.3, 0.9), point(10, 0.4, 0.88)];
  assert.deepEqual(sharpeningFlags(history.slice(0, 1), 0.01), { sincePrevious: false, sinceStart: false });
  const at10 = sharpeningFlags(history, 0.01);
  assert.deepEqual(at10, { sincePrevious: true, sinceStart: true });
  assert.match(
    sharpeningWarning(history, at10)!,
    /sharpening at step 10: pass@32 0\.900 → 0\.880 while pass@1 0\.300 → 0\.400 \(since step 0 and since the start\)/,
  );
  const later = [...history, point(20, 0.45, 0.885)];
  const at20 = sharpeningFlags(later, 0.01);
  assert.deepEqual(at20, { sincePrevious: false, sinceStart: true });
  assert.match(sharpeningWarning(later, at20)!, /pass@32 0\.900 → 0\.885 .*\(since the start\)/);
  const healthy = [...history, point(20, 0.5, 0.95)];
  assert.equal(sharpeningWarning(healthy, sharpeningFlags(healthy, 0.01)), null);
});
