import assert from "node:assert/strict";
import { test } from "node:test";
import { createRng } from "../core/random.ts";
import { bootstrapMeans, quantileSorted } from "./bootstrap.ts";
import {
  crossoverK,
  kGrid,
  meanPassAtK,
  meanPassHatK,
  type PassAtKCurve,
  passAtK,
  passAtKCurve,
  passHatK,
  samplingEfficiencyGap,
  type TaskSamples,
} from "./passk.ts";

const close = (actual: number, expected: number, tolerance = 1e-12) =>
  assert.ok(Math.abs(actual - expected) <= tolerance, `${actual} != ${expected}`);

test("worked values from the paper notes", () => {
  // (5,2,3): 1 - (1 - 3/4)(1 - 3/5) = 1 - 0.25 * 0.4 = 0.9
  close(passAtK(5, 2, 3), 0.9);
  // (8,1,4): 1 - (1 - 4/8) = 0.5
  close(passAtK(8, 1, 4), 0.5);
  // (10,9,2): n - c = 1 < k = 2, so every pair holds a correct sample
  assert.equal(passAtK(10, 9, 2), 1);
});

/** Fraction of the k-subsets of n samples (c correct, placed at random) holding a correct one. */
function bruteForce(n: number, c: number, k: number, seed: number): number {
  const correct = new Set(
    createRng(seed)
      .shuffle([...Array(n).keys()])
      .slice(0, c),
  );
  let hits = 0;
  let total = 0;
  const choose = (start: number, left: number, hit: boolean) => {
    if (left === 0) {
      total++;
      if (hit) hits++;
      return;
    }
    for (let i = start; i <= n - left; i++) choose(i + 1, left - 1, hit || correct.has(i));
  };
  choose(0, k, false);
  return hits / total;
}

test("matches brute-force enumeration of all k-subsets", () => {
  const rng = createRng(7);
  for (let trial = 0; trial < 60; trial++) {
    const n = rng.range(1, 11);
    const c = rng.range(0, n);
    const k = rng.range(1, n);
    close(passAtK(n, c, k), bruteForce(n, c, k, trial), 1e-12);
  }
});

test("equals c/n at k = 1, is 1 when n - c < k, and never decreases in k", () => {
  for (let n = 1; n <= 40; n++) {
    for (let c = 0; c <= n; c++) {
      close(passAtK(n, c, 1), c / n, 1e-12);
      let previous = -1;
      for (let k = 1; k <= n; k++) {
        const value = passAtK(n, c, k);
        if (n - c < k) assert.equal(value, 1);
        assert.ok(value >= previous - 1e-15, `not monotone at n=${n} c=${c} k=${k}`);
        assert.ok(value >= 0 && value <= 1);
        previous = value;
      }
    }
  }
});

test("stays exact for large n (product form, no binomials)", () => {
  // C(1024-1, 256) / C(1024, 256) = (1024-256)/1024 = 0.75 → pass@256 = 0.25
  close(passAtK(1024, 1, 256), 0.25, 1e-12);
  assert.equal(passAtK(1024, 0, 1024), 0);
});

test("rejects invalid input with clear errors", () => {
  assert.throws(() => passAtK(5, 2, 6), /k = 6 exceeds the number of samples n = 5/);
  assert.throws(() => passAtK(5, 6, 1), /c = 6 correct exceeds/);
  assert.throws(() => passAtK(5, -1, 1), /c must be a non-negative integer/);
  assert.throws(() => passAtK(-5, 0, 1), /n must be a non-negative integer/);
  assert.throws(() => passAtK(5, 1, 0), /k must be at least 1/);
  assert.throws(() => passAtK(5, 1.5, 1), /c must be a non-negative integer/);
  assert.throws(() => meanPassAtK([], 1), /no tasks/);
});

test("pass^k worked example: the chance that all k samples are correct, C(c,k)/C(n,k)", () => {
  // n = 5, c = 3, k = 2: C(3,2)/C(5,2) = 3/10 (= 3/5 * 2/4); pass@2 = 1 - C(2,2)/C(5,2) = 0.9.
  close(passHatK(5, 3, 2), 0.3);
  close(passAtK(5, 3, 2), 0.9);
  // Fewer correct samples than k: no k-subset is all correct. All correct: every one is.
  assert.equal(passHatK(5, 2, 3), 0);
  assert.equal(passHatK(4, 4, 4), 1);
  // k = 1: both are c/n. pass^k never rises with k, pass@k never falls; pass^k <= pass@k.
  for (let n = 1; n <= 24; n++) {
    for (let c = 0; c <= n; c++) {
      close(passHatK(n, c, 1), c / n, 1e-12);
      for (let k = 1; k <= n; k++) {
        assert.ok(passHatK(n, c, k) <= passAtK(n, c, k) + 1e-15);
        if (k > 1) assert.ok(passHatK(n, c, k) <= passHatK(n, c, k - 1) + 1e-15);
      }
    }
  }
  // By complement: pass^k of c correct = 1 - pass@k of the n - c wrong ones "correct".
  close(passHatK(16, 11, 4), 1 - passAtK(16, 5, 4), 1e-12);
  close(
    meanPassHatK(
      [
        { n: 5, c: 3 },
        { n: 5, c: 5 },
      ],
      2,
    ),
    (0.3 + 1) / 2,
  );
  assert.throws(() => passHatK(5, 2, 6), /pass\^k: k = 6 exceeds the number of samples n = 5/);
  assert.throws(() => passHatK(5, 6, 1), /c = 6 correct exceeds/);
});

test("k grid: powers of two up to n, then n", () => {
  assert.deepEqual(kGrid(1), [1]);
  assert.deepEqual(kGrid(8), [1, 2, 4, 8]);
  assert.deepEqual(kGrid(10), [1, 2, 4, 8, 10]);
  assert.deepEqual(kGrid(64), [1, 2, 4, 8, 16, 32, 64]);
});

test("curve is the mean over tasks at each k", () => {
  const tasks: TaskSamples[] = [
    { n: 8, c: 1 },
    { n: 8, c: 0 },
    { n: 8, c: 8 },
  ];
  const curve = passAtKCurve(tasks);
  assert.deepEqual(
    curve.map((point) => point.k),
    [1, 2, 4, 8],
  );
  // k=1: (1/8 + 0 + 1)/3 = 0.375; k=4: (0.5 + 0 + 1)/3 = 0.5; k=8: (1 + 0 + 1)/3
  close(curve[0].passAtK, 0.375);
  close(curve[2].passAtK, 0.5);
  close(curve[3].passAtK, 2 / 3);
  close(meanPassAtK(tasks, 4), 0.5);
  // pass^k beside it: k=1 as pass@1; k=2: (0 + 0 + 1)/3 (only the all-correct task).
  close(curve[0].passHatK as number, 0.375);
  close(curve[1].passHatK as number, 1 / 3);
  close(curve[3].passHatK as number, 1 / 3);
  // The grid follows the smallest n: a task with 4 samples caps it at 4.
  assert.deepEqual(
    passAtKCurve([...tasks, { n: 4, c: 1 }]).map((point) => point.k),
    [1, 2, 4],
  );
});

test("bootstrap interval contains the point estimate, is seeded, and narrows with level", () => {
  const rng = createRng(3);
  const tasks: TaskSamples[] = Array.from({ length: 50 }, () => {
    const n = 16;
    return { n, c: rng.chance(0.4) ? rng.range(0, n) : 0 };
  });
  const curve = passAtKCurve(tasks, { bootstrap: { resamples: 500, seed: 11 } });
  for (const point of curve) {
    assert.ok(point.lower !== undefined && point.upper !== undefined);
    assert.ok(point.lower <= point.passAtK && point.passAtK <= point.upper, JSON.stringify(point));
    assert.ok(point.upper - point.lower > 0);
    const { passHatK: hat, passHatKLower: hatLower, passHatKUpper: hatUpper } = point;
    assert.ok(hat !== undefined && hatLower !== undefined && hatUpper !== undefined);
    assert.ok(hatLower <= hat && hat <= hatUpper, JSON.stringify(point));
  }
  // The pass@k intervals are those of a pass@k-only bootstrap (pass^k's columns share the draws).
  const perTask = curve.map((point) => tasks.map((task) => passAtK(task.n, task.c, point.k)));
  const alone = bootstrapMeans(perTask, { resamples: 500, seed: 11 });
  assert.deepEqual(
    alone,
    curve.map((point) => ({ lower: point.lower, upper: point.upper })),
  );
  const again = passAtKCurve(tasks, { bootstrap: { resamples: 500, seed: 11 } });
  assert.deepEqual(again, curve);
  const narrow = passAtKCurve(tasks, { bootstrap: { resamples: 500, seed: 11, level: 0.5 } });
  for (let i = 0; i < curve.length; i++) {
    assert.ok(
      (narrow[i].upper as number) - (narrow[i].lower as number) <=
        (curve[i].upper as number) - (curve[i].lower as number),
    );
  }
});

test("bootstrap of identical tasks has a zero-width interval; options are validated", () => {
  const [interval] = bootstrapMeans([[0.5, 0.5, 0.5]], { resamples: 20 });
  assert.deepEqual(interval, { lower: 0.5, upper: 0.5 });
  assert.throws(() => bootstrapMeans([[1]], { level: 1 }), /level must lie strictly between 0 and 1/);
  assert.throws(() => bootstrapMeans([[1]], { resamples: 0 }), /resamples must be a positive integer/);
  // type-7 quantile: [0, 10] at q = 0.25 → 2.5
  close(quantileSorted([0, 10], 0.25), 2.5);
});

const curveOf = (values: number[]): PassAtKCurve => values.map((passAtK, i) => ({ k: 2 ** i, passAtK }));

test("crossover: smallest k where B reaches A after starting below", () => {
  const rl = curveOf([0.6, 0.7, 0.75, 0.78, 0.8]);
  const base = curveOf([0.3, 0.5, 0.7, 0.78, 0.9]);
  assert.equal(crossoverK(rl, base), 8); // 0.78 >= 0.78 at k = 8
  assert.equal(crossoverK(rl, curveOf([0.3, 0.4, 0.5, 0.6, 0.7])), null); // never catches up
  assert.equal(crossoverK(rl, curveOf([0.6, 0.9, 0.9, 0.9, 0.9])), null); // not below at k = 1
  // ΔSE = pass@16(base) - pass@1(rl) = 0.9 - 0.6
  close(samplingEfficiencyGap(base, rl, 16), 0.3);
  assert.throws(() => samplingEfficiencyGap(base, rl, 256), /no point at k = 256/);
});
