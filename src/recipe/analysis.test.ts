import assert from "node:assert/strict";
import { test } from "node:test";
import { createRng } from "../core/random.ts";
import { quantileSorted } from "../eval/bootstrap.ts";
import type { TaskCount } from "../eval/task-counts.ts";
import {
  boundStatus,
  byHops,
  crossDifference,
  gainShrinkage,
  groupDifference,
  marginNote,
  meanPassAtK,
  noSignalProbability,
  pairedDifference,
  positiveStatus,
  powerNote,
  proportionDifference,
  seedBootstrap,
  seedPairedDifference,
  seedPowerNote,
  seedsToDecide,
} from "./analysis.ts";

const row = (taskId: string, n: number, c: number, template?: string): TaskCount => ({
  taskId,
  family: "lookup",
  ...(template ? { template } : {}),
  n,
  c,
  policyErrors: 0,
});

test("paired differences are over shared tasks only, b − a, with an interval around the mean", () => {
  const a = [row("t1", 4, 0), row("t2", 4, 2), row("t3", 4, 4), row("only-a", 4, 4)];
  const b = [row("t1", 4, 4), row("t2", 4, 2), row("t3", 4, 4), row("only-b", 4, 0)];
  const d = pairedDifference(a, b)!;
  assert.equal(d.tasks, 3);
  assert.ok(Math.abs(d.mean - 1 / 3) < 1e-12); // (1 − 0 + 0.5 − 0.5 + 1 − 1) / 3
  assert.ok(d.interval.lower <= d.mean && d.mean <= d.interval.upper);
  assert.equal(pairedDifference(a, [row("x", 4, 1)]), null);
});

test("an upper bound (RL pass@1 ≤ start pass@k) is broken only beyond noise; one lucky sample is inconclusive", () => {
  const tasks = (cs: number[], n = 16) => cs.map((c, i) => row(`t${i}`, n, c));
  const start = tasks(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? 4 : 0)));
  const below = tasks(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? 8 : 0)));
  const bound = (rl: TaskCount[], from = start) =>
    crossDifference(
      { counts: from, value: (c) => (c.c > 0 ? 1 : 0) }, // pass@16 with 16 samples: any correct
      { counts: rl, value: (c) => c.c / c.n }, // pass@1
    );
  // RL sharpened inside the start's reach: pass@1 0.25 on the solvable half, pass@16 1 there
  const sharpened = bound(below)!;
  assert.ok(sharpened.mean < 0 && sharpened.tasks === 40);
  assert.equal(boundStatus([sharpened]), "reproduced");
  // a start that solves nothing and an RL that solved 1 sample of 640: above, within noise
  const zero = tasks(Array.from({ length: 40 }, () => 0));
  const lucky = tasks(Array.from({ length: 40 }, (_, i) => (i === 0 ? 1 : 0)));
  assert.equal(boundStatus([sharpened, bound(lucky, zero)]), "inconclusive");
  // an RL that solves half of every task the start never solved: the bound is broken
  const broad = tasks(Array.from({ length: 40 }, () => 8));
  assert.equal(boundStatus([sharpened, bound(broad, zero)]), "not reproduced");
  assert.equal(boundStatus([sharpened, null]), "not measured");
});

test("gain shrinkage: a sharpened policy (better pass@1, same pass@k) shrinks; a broadened one does not", () => {
  // base: every task 1 of 4 correct; RL: 4 of 4 on half the tasks, 0 of 4 on the other half
  const base = Array.from({ length: 8 }, (_, i) => row(`t${i}`, 4, 1));
  const sharpened = Array.from({ length: 8 }, (_, i) => row(`t${i}`, 4, i < 4 ? 4 : 0));
  const shrink = gainShrinkage(base, sharpened, 4)!;
  // per task: rl@1 − rl@4 = 0 both halves; base@1 − base@4 = 0.25 − 1 = −0.75 → +0.75
  assert.ok(Math.abs(shrink.mean - 0.75) < 1e-12);
  assert.equal(positiveStatus(shrink), "reproduced");
  const same = gainShrinkage(base, base, 4)!;
  assert.equal(same.mean, 0);
  assert.equal(positiveStatus(same), "inconclusive");
});

test("status follows the interval: above zero, below zero, straddling, missing", () => {
  assert.equal(positiveStatus({ mean: 0.2, interval: { lower: 0.1, upper: 0.3 }, tasks: 9 }), "reproduced");
  assert.equal(
    positiveStatus({ mean: -0.2, interval: { lower: -0.3, upper: -0.1 }, tasks: 9 }),
    "not reproduced",
  );
  assert.equal(
    positiveStatus({ mean: 0.1, interval: { lower: -0.1, upper: 0.3 }, tasks: 9 }),
    "inconclusive",
  );
  assert.equal(positiveStatus(null), "not measured");
  const p = proportionDifference(0.2, 0.6, 100);
  assert.ok(Math.abs(p.mean - 0.4) < 1e-12 && p.interval.lower > 0);
  assert.equal(positiveStatus(proportionDifference(0.2, 0.3, 4)), "inconclusive");
});

test("by chain length: hops from the template, pass rate, p(1 − p) and the no-signal share", () => {
  const counts = [
    row("a", 4, 4, "capital-pop"), // world templates: capital-pop has fewer hops than founder-capital-pop
    row("b", 4, 2, "capital-pop"),
    row("c", 4, 0, "founder-capital-pop"),
    row("d", 4, 1, "founder-capital-pop"),
    row("e", 4, 1),
  ];
  const rows = byHops(counts);
  assert.equal(rows.length, 2);
  const [short, long] = rows;
  assert.ok(short.hops < long.hops);
  assert.equal(short.tasks, 2);
  assert.ok(Math.abs(short.passRate - 0.75) < 1e-12);
  assert.ok(Math.abs(short.returnVariance - 0.125) < 1e-12); // (0 + 0.25) / 2
  assert.equal(short.zeroVariance, 0.5);
  assert.equal(
    meanPassAtK(counts, 1, (c) => c.template === undefined),
    0.25,
  );
});

test("group difference of independent samples", () => {
  const d = groupDifference([0, 0, 0, 0, 1], [1, 1, 1, 1, 0], 3)!;
  assert.ok(Math.abs(d.mean - 0.6) < 1e-12);
  assert.ok(d.interval.lower <= d.mean && d.mean <= d.interval.upper);
  assert.equal(groupDifference([], [1]), null);
});

test("the margin calls a claim against the article when the interval rules out an effect that large", () => {
  const small = { mean: 0.01, interval: { lower: -0.02, upper: 0.04 }, tasks: 40 };
  assert.equal(positiveStatus(small), "inconclusive");
  assert.equal(positiveStatus(small, 0.05), "not reproduced");
  assert.match(marginNote(small, 0.05), /rules out a gain of 0\.05/);
  const wide = { mean: 0.01, interval: { lower: -0.1, upper: 0.12 }, tasks: 40 };
  assert.equal(positiveStatus(wide, 0.05), "inconclusive");
  assert.equal(marginNote(wide, 0.05), "");
  // a zero-width interval at zero compares nothing: it stays inconclusive, and says why
  const floor = { mean: 0, interval: { lower: 0, upper: 0 }, tasks: 12 };
  assert.equal(positiveStatus(floor, 0.05), "inconclusive");
  assert.match(powerNote(floor, 0.05), /zero width/);
  // half-width 0.11 at mean 0.01: against the claim needs mean + half < 0.05 → half < 0.04 → 40·(0.11/0.04)² tasks
  assert.match(powerNote(wide, 0.05), /half-width 0\.110 over 40 tasks.*about 303 tasks/);
  const positive = { mean: 0.1, interval: { lower: -0.02, upper: 0.22 }, tasks: 30 };
  assert.match(powerNote(positive), /about 44 tasks \(×1\.5\)/);
});

test("no-signal probability of a group of g drawn from n samples; a bound exceeded by less than the margin holds", () => {
  const count = (n: number, c: number): TaskCount => ({
    taskId: "t",
    family: "lookup",
    n,
    c,
    policyErrors: 0,
  });
  assert.equal(noSignalProbability(count(8, 0), 4), 1);
  assert.equal(noSignalProbability(count(8, 8), 4), 1);
  // n = 4, c = 2, g = 2: pairs {cc}=1, {ww}=1 of C(4,2)=6
  assert.ok(Math.abs(noSignalProbability(count(4, 2), 2) - 2 / 6) < 1e-12);
  assert.equal(noSignalProbability(count(8, 1), 8), 0);
  const tiny = { mean: 0.002, interval: { lower: 0, upper: 0.005 }, tasks: 32 };
  assert.equal(boundStatus([tiny]), "inconclusive");
  assert.equal(boundStatus([tiny], 0.05), "reproduced");
  assert.equal(
    boundStatus([{ mean: 0.2, interval: { lower: 0.1, upper: 0.3 }, tasks: 32 }], 0.05),
    "not reproduced",
  );
});

test("two-level bootstrap: the hand-worked example (seeds, then tasks within a seed)", () => {
  // seed A [0, 1], seed B [2]: estimate (0.5 + 2)/2 = 1.25. Seeds drawn (A,A), (A,B), (B,A), (B,B)
  // with 1/4 each; A's resampled mean is 0, ½, 1 with 1/4, 1/2, 1/4. The lowest average, 0, needs
  // (A,A) and both of A's means at 0: 1/4 · 1/16 = 1/64 (1.6%) < 2.5%; the next, ¼ (A's means 0
  // and ½ in either order: 2 · 1/4 · 1/2), adds 1/4 · 1/4 = 4/64: 5/64 (7.8%) > 2.5%: lower bound ¼.
  // (B,B) alone has probability 1/4 > 2.5%: the upper bound is 2.
  const estimate = seedBootstrap([[0, 1], [2]], { resamples: 20_000, seed: 3 })!;
  assert.equal(estimate.mean, 1.25);
  assert.deepEqual(estimate.seeds, [0.5, 2]);
  assert.equal(estimate.tasks, 1);
  assert.equal(estimate.interval.lower, 0.25);
  assert.equal(estimate.interval.upper, 2);
  // a seed that measured nothing is left out, its place kept as null; nothing at all is null
  const partial = seedBootstrap([[], [1], [3]])!;
  assert.deepEqual(partial.seeds, [null, 1, 3]);
  assert.equal(partial.mean, 2);
  assert.equal(seedBootstrap([[], []]), null);
});

test("two-level bootstrap matches a plain reference implementation at the same random draws", () => {
  const rng = createRng(7);
  const units = [0, 1, 2].map(() => Array.from({ length: 5 + rng.int(6) }, () => rng.next() - 0.3));
  const resamples = 500;
  // the reference: the same draws from the same stream, written as plainly as possible
  const draw = createRng(11).fork("seed-bootstrap");
  const averages: number[] = [];
  for (let r = 0; r < resamples; r++) {
    let total = 0;
    for (let s = 0; s < units.length; s++) {
      const seedUnits = units[draw.int(units.length)];
      let sum = 0;
      for (let t = 0; t < seedUnits.length; t++) sum += seedUnits[draw.int(seedUnits.length)];
      total += sum / seedUnits.length;
    }
    averages.push(total / units.length);
  }
  averages.sort((x, y) => x - y);
  const estimate = seedBootstrap(units, { resamples, seed: 11 })!;
  assert.ok(Math.abs(estimate.interval.lower - quantileSorted(averages, 0.025)) < 1e-12);
  assert.ok(Math.abs(estimate.interval.upper - quantileSorted(averages, 0.975)) < 1e-12);
  const seedMeans = units.map((u) => u.reduce((a, b) => a + b, 0) / u.length);
  assert.ok(Math.abs(estimate.mean - seedMeans.reduce((a, b) => a + b, 0) / 3) < 1e-12);
});

test("the seed interval is wider than one seed's task interval when the seeds disagree", () => {
  const counts = (cs: number[]) => cs.map((c, i) => row(`t${i}`, 4, c));
  const base = counts(Array(20).fill(2));
  // three seeds: +0.25, +0.25 and −0.25 on every task: each seed alone is called, together not
  const seeds = [3, 3, 1].map((c) => ({ a: base, b: counts(Array(20).fill(c)) }));
  const estimate = seedPairedDifference(seeds)!;
  assert.deepEqual(estimate.seeds, [0.25, 0.25, -0.25]);
  assert.ok(Math.abs(estimate.mean - 0.25 / 3) < 1e-12);
  assert.equal(positiveStatus(estimate), "inconclusive");
  assert.equal(positiveStatus(seedPairedDifference([seeds[0]])), "reproduced");
  assert.match(seedPowerNote(estimate, 0.05), /seeds × 20 tasks/);
  // +1/12 is above the margin 0.05: only the lower end rising above 0 can call it, its own half
  // (mean − lower) shrinking below the mean: f = ((mean − lower)/mean)², R·f seeds
  const decide = seedsToDecide(estimate, 0.05)!;
  const lowerHalf = estimate.mean - estimate.interval.lower;
  assert.equal(decide.seeds, Math.ceil(3 * (lowerHalf / estimate.mean) ** 2));
  assert.equal(decide.tasksAtSameSeeds, Math.ceil(20 * (lowerHalf / estimate.mean) ** 2));
  // a skewed interval: [−0.14, +1.0] around +0.86 needs its lower half 1.0 to fit in 0.86: f = 1.35
  const skewed = { mean: 0.86, interval: { lower: -0.14, upper: 1 }, tasks: 6, seeds: [1, 0.72] };
  assert.equal(seedsToDecide(skewed, 0.05)!.seeds, Math.ceil(2 * (1 / 0.86) ** 2));
  assert.equal(decide.tasks, 20);
  assert.equal(seedsToDecide(seedPairedDifference([{ a: base, b: base }]), 0.05), null, "nothing compared");
});
