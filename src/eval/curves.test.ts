import assert from "node:assert/strict";
import { test } from "node:test";
import { infraFailure } from "../types/failure.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { curveMetrics, formatCurveTable, passAtKCurves } from "./curves.ts";
import { countByTask, countTotals } from "./task-counts.ts";

let serial = 0;

function sample(taskId: string, correct: boolean, endReason: Trajectory["endReason"] = "answer"): Trajectory {
  return {
    id: `${taskId}-${serial++}`,
    taskId,
    family: "from-trajectory",
    policyId: "p",
    seed: 0,
    prompt: { text: "", tokenIds: [] },
    turns: [],
    finalAnswer: correct ? "1" : null,
    correct,
    outcomeReward: correct ? 1 : 0,
    endReason,
  };
}

const tasks = [
  { id: "a", family: "lookup", template: "city-pop" },
  { id: "b", family: "lookup", template: "country-pop" },
  { id: "c", family: "bridge", template: "capital-pop" },
];

test("countByTask follows the task list, counts policy errors as failures, leaves infra out, ignores strangers", () => {
  const infra = { ...sample("b", false, "policy-error"), failure: infraFailure("upstream-5xx", "HTTP 503") };
  const trajectories = [
    sample("a", true),
    sample("a", false, "policy-error"),
    infra,
    sample("b", false),
    sample("b", false),
    sample("c", true),
    sample("c", true),
    sample("zzz", true),
  ];
  const counts = countByTask(trajectories, tasks);
  assert.deepEqual(counts, [
    { taskId: "a", family: "lookup", template: "city-pop", n: 2, c: 1, policyErrors: 1, infraFailures: 0 },
    { taskId: "b", family: "lookup", template: "country-pop", n: 2, c: 0, policyErrors: 0, infraFailures: 1 },
    { taskId: "c", family: "bridge", template: "capital-pop", n: 2, c: 2, policyErrors: 0, infraFailures: 0 },
  ]);
  assert.deepEqual(countTotals(counts), {
    tasks: 3,
    samples: 6,
    correct: 3,
    policyErrors: 1,
    infraFailures: 1,
    solved: 2,
  });
  // Without a task list: every task seen, with the trajectory's family.
  assert.equal(countByTask(trajectories).length, 4);
  assert.equal(countByTask(trajectories)[3].family, "from-trajectory");

  // pass@1: a 1/2, b 0, c 1 → 1/2 overall; lookup (1/2 + 0)/2 = 1/4; bridge 1. pass@2: a 1, b 0, c 1 → 2/3.
  const curves = passAtKCurves(counts, { bootstrap: false });
  assert.deepEqual(curves.ks, [1, 2]);
  assert.deepEqual(
    curves.overall.map((point) => point.passAtK),
    [0.5, 2 / 3],
  );
  assert.deepEqual(Object.keys(curves.families), ["bridge", "lookup"]);
  assert.deepEqual(
    curves.families.lookup.map((point) => point.passAtK),
    [0.25, 0.5],
  );
  assert.deepEqual(Object.keys(curves.templates), ["capital-pop", "city-pop", "country-pop"]);
  assert.equal(curves.templates["country-pop"][1].passAtK, 0);
  // pass^2: a (c=1 of 2) 0, b 0, c (2 of 2) 1 → 1/3; lookup 0; bridge 1. pass^1 = pass@1.
  assert.deepEqual(curveMetrics(curves), {
    "eval/pass@1": 0.5,
    "eval/pass^1": 0.5,
    "eval/pass@2": 2 / 3,
    "eval/pass^2": 1 / 3,
    "eval/bridge/pass@1": 1,
    "eval/bridge/pass^1": 1,
    "eval/bridge/pass@2": 1,
    "eval/bridge/pass^2": 1,
    "eval/lookup/pass@1": 0.25,
    "eval/lookup/pass^1": 0.25,
    "eval/lookup/pass@2": 0.5,
    "eval/lookup/pass^2": 0,
  });
  assert.equal(
    formatCurveTable(curves),
    [
      "     k     all  bridge  lookup  pass^k",
      "     1   0.500   1.000   0.250   0.500",
      "     2   0.667   1.000   0.500   0.333",
    ].join("\n"),
  );
});

test("curves: bootstrap bands contain the estimate; a task without samples is an error", () => {
  const counts = countByTask(
    [
      sample("a", true),
      sample("a", false),
      sample("b", false),
      sample("b", true),
      sample("c", false),
      sample("c", false),
    ],
    tasks,
  );
  const curves = passAtKCurves(counts, { bootstrap: { resamples: 200, seed: 1 } });
  for (const point of curves.overall)
    assert.ok(point.lower! <= point.passAtK && point.passAtK <= point.upper!);
  assert.throws(() => passAtKCurves(countByTask([sample("a", true)], tasks)), /task b has no samples/);
});
