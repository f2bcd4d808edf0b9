import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createRng, hashString } from "../core/random.ts";
import { renderAnswer } from "../env/protocol.ts";
import { createMockPolicy } from "../policy/mock.ts";
import type { Task } from "../types/task.ts";
import { loadDataset } from "./dataset.ts";
import {
  DEFAULT_MIX,
  difficultyOf,
  parseMix,
  rebalance,
  selectTasks,
  type TaskPassRate,
  zeroVarianceFraction,
} from "./select.ts";
import { loadSelectedTasks, selectDataset } from "./select-dataset.ts";
import { datasetTasks } from "./tasks.ts";

const fakeTask = (i: number): Task => ({ id: `t${i}`, question: "q", answer: "1", family: "lookup" });
const rate = (i: number, passes: number, m = 8): TaskPassRate => ({
  task: fakeTask(i),
  passes,
  rollouts: m,
  passRate: passes / m,
});

test("difficulty buckets: easy ≥ 0.75, hard ≤ 0.25, 0 and 1 dropped", () => {
  assert.equal(difficultyOf(0), null);
  assert.equal(difficultyOf(1), null);
  assert.equal(difficultyOf(0.125), "hard");
  assert.equal(difficultyOf(0.25), "hard");
  assert.equal(difficultyOf(0.375), "medium");
  assert.equal(difficultyOf(0.625), "medium");
  assert.equal(difficultyOf(0.75), "easy");
  assert.equal(difficultyOf(0.875), "easy");
});

test("parseMix normalises and names the valid buckets", () => {
  assert.deepEqual(parseMix("easy:3,medium:4,hard:3"), DEFAULT_MIX);
  assert.deepEqual(parseMix("medium=1"), { easy: 0, medium: 1, hard: 0 });
  assert.throws(() => parseMix("trivial:1"), /bucket one of easy, medium, hard/);
  assert.throws(() => parseMix("easy:0"), /must not all be 0/);
  assert.equal(parseMix(" all "), "all");
  assert.throws(() => parseMix("all:1"), /or the whole mix "all"/);
});

test("zero-variance fraction: groups with all-equal outcomes", () => {
  // [1,1,1] and [0,0,0] are flat, [1,0,1] is not: 2/3.
  assert.equal(
    zeroVarianceFraction([
      [true, true, true],
      [false, false, false],
      [true, false, true],
    ]),
    2 / 3,
  );
  assert.equal(zeroVarianceFraction([]), 0);
});

test("rebalance keeps only 0 < pass rate < 1 and hits the target mix exactly when it can", () => {
  // passes out of 8: 20 unsolved, 20 always solved, 30 easy (7/8), 40 medium (4/8), 15 hard (1/8).
  const rates = [
    ...Array.from({ length: 20 }, (_, i) => rate(i, 0)),
    ...Array.from({ length: 20 }, (_, i) => rate(100 + i, 8)),
    ...Array.from({ length: 30 }, (_, i) => rate(200 + i, 7)),
    ...Array.from({ length: 40 }, (_, i) => rate(300 + i, 4)),
    ...Array.from({ length: 15 }, (_, i) => rate(400 + i, 1)),
  ];
  const result = rebalance(rates, DEFAULT_MIX, { seed: 1 });
  assert.deepEqual(result.available, { easy: 30, medium: 40, hard: 15 });
  // Hard limits: 15 / 0.3 = 50 tasks → 15 easy, 20 medium, 15 hard.
  assert.equal(result.selected.length, 50);
  assert.deepEqual(result.chosen, { easy: 15, medium: 20, hard: 15 });
  assert.ok(result.mixMet);
  assert.ok(result.selected.every((s) => s.passRate > 0 && s.passRate < 1));
  assert.equal(new Set(result.selected.map((s) => s.task.id)).size, 50);
  for (const s of result.selected) assert.equal(s.difficulty, difficultyOf(s.passRate));
  // A cap on the count keeps the mix: 10 → 3 / 4 / 3.
  assert.deepEqual(rebalance(rates, DEFAULT_MIX, { count: 10, seed: 1 }).chosen, {
    easy: 3,
    medium: 4,
    hard: 3,
  });
  // Deterministic in the seed, different across seeds.
  const ids = (seed: number) => rebalance(rates, DEFAULT_MIX, { seed }).selected.map((s) => s.task.id);
  assert.deepEqual(ids(1), ids(1));
  assert.notDeepEqual(ids(1), ids(2));
});

test("rebalance renormalises when a bucket is empty and reports the mix as not met", () => {
  const rates = [
    ...Array.from({ length: 10 }, (_, i) => rate(i, 6)),
    ...Array.from({ length: 10 }, (_, i) => rate(50 + i, 4)),
  ];
  const result = rebalance(rates, DEFAULT_MIX);
  assert.equal(result.mixMet, false);
  // 6/8 is easy, 4/8 medium, no hard task: the 0.3 / 0.4 mix of easy / medium becomes 3/7 and 4/7;
  // medium limits N to floor(10 / (4/7)) = 17 → 7.29 easy and 9.71 medium → 7 and 10.
  assert.deepEqual(result.available, { easy: 10, medium: 10, hard: 0 });
  assert.ok(Math.abs(result.target.easy - 3 / 7) < 1e-12 && result.target.hard === 0);
  assert.deepEqual(result.chosen, { easy: 7, medium: 10, hard: 0 });
  assert.equal(result.selected.length, 17);
  assert.ok(result.selected.every((s) => s.passRate > 0 && s.passRate < 1));
});

test('rebalance with "all" keeps every task with signal, in the measured shares, up to the count', () => {
  // a hard family: 1 easy, 3 medium, 12 hard, and 30 never or always solved; DEFAULT_MIX keeps 3
  const rates = [
    ...Array.from({ length: 25 }, (_, i) => rate(i, 0)),
    ...Array.from({ length: 5 }, (_, i) => rate(50 + i, 8)),
    rate(100, 7),
    ...Array.from({ length: 3 }, (_, i) => rate(200 + i, 4)),
    ...Array.from({ length: 12 }, (_, i) => rate(300 + i, 1)),
  ];
  assert.equal(rebalance(rates, DEFAULT_MIX, { seed: 1 }).selected.length, 3);
  const all = rebalance(rates, "all", { seed: 1 });
  assert.deepEqual(all.chosen, { easy: 1, medium: 3, hard: 12 });
  assert.ok(all.mixMet);
  assert.deepEqual(
    all.selected.map((s) => s.task.id).sort(),
    rates
      .filter((r) => r.passRate > 0 && r.passRate < 1)
      .map((r) => r.task.id)
      .sort(),
  );
  // a count keeps the measured shares by largest remainder: 8 of 16 → 0.5 / 1.5 / 6, floors 0 / 1 / 6,
  // the one left to the tie of remainders 0.5 broken towards the easier bucket
  assert.deepEqual(rebalance(rates, "all", { count: 8, seed: 1 }).chosen, { easy: 1, medium: 1, hard: 6 });
});

/** A mock policy that answers right with a per-task probability (from its id), drawn per episode seed. */
function coinPolicy(probability: (task: Task) => number) {
  return createMockPolicy((context) => {
    const right = createRng(context.seed).next() < probability(context.task);
    return renderAnswer(right ? context.task.answer : "0");
  });
}

test("selectTasks on real rollouts: only tasks with 0 < pass rate < 1 survive, zero variance re-measured", async () => {
  const tasks = datasetTasks({ count: 40, seed: 2 });
  const levels = [0, 0.1, 0.5, 0.9, 1];
  const probability = (task: Task) => levels[hashString(task.id) % levels.length];
  const result = await selectTasks({ policy: coinPolicy(probability), tasks, m: 8, seed: 3 });
  assert.equal(result.candidates, 40);
  assert.equal(
    result.passHistogram.reduce((a, b) => a + b, 0),
    40,
  );
  assert.ok(result.dropped.unsolved >= tasks.filter((t) => probability(t) === 0).length);
  assert.ok(result.dropped.alwaysSolved >= tasks.filter((t) => probability(t) === 1).length);
  assert.ok(result.selected.length > 0);
  for (const s of result.selected) {
    assert.ok(s.passRate > 0 && s.passRate < 1, `${s.task.id}: ${s.passRate}`);
    assert.ok(probability(s.task) > 0 && probability(s.task) < 1);
  }
  assert.ok(result.zeroVariance.before >= 0.4, `before ${result.zeroVariance.before}`);
  assert.equal(result.zeroVariance.afterInSample, 0);
  assert.ok(
    result.zeroVariance.afterFresh !== null && result.zeroVariance.afterFresh < result.zeroVariance.before,
  );
});

test("selectDataset writes the rollouts, selection.json and a task file that loads back", async (t) => {
  const folder = mkdtempSync(join(tmpdir(), "agentrl-select-"));
  const out = join(folder, "selected");
  t.after(() => rmSync(folder, { recursive: true, force: true }));
  const result = await selectDataset({ policy: "mixed", tasks: { count: 24, seed: 4 }, m: 4, seed: 1, out });
  assert.ok(existsSync(join(out, "selection.json")));
  const selection = JSON.parse(readFileSync(join(out, "selection.json"), "utf8"));
  assert.equal(selection.selected.length, result.tasks.length);
  assert.equal(selection.m, 4);
  const loaded = loadSelectedTasks(out);
  assert.deepEqual(
    loaded.map((t) => t.id),
    result.tasks.map((t) => t.id),
  );
  for (const task of loaded) {
    const passRate = task.metadata?.passRate as number;
    assert.ok(passRate > 0 && passRate < 1);
    assert.ok(task.gold && task.gold.length > 0, "full world tasks, ready for RL");
  }
  const dataset = loadDataset(out);
  assert.equal(dataset.trajectories.length, 24 * 4);
  assert.equal(dataset.provenance.source, "select");
  assert.equal(dataset.provenance.policy, "mixed");
});
