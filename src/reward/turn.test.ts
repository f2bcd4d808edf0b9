import assert from "node:assert/strict";
import { test } from "node:test";
import { noiseAware } from "./noise.ts";
import { sketchTrajectory, SKETCH_TASK as task } from "./testing.ts";
import { calcCorrectReward, evidenceReward, toolExecutedReward } from "./turn.ts";

test("tool-executed: 1 for ok calls, 0 for failed calls and format errors, null otherwise", () => {
  const trajectory = sketchTrajectory([
    { act: "search:zenda" },
    { act: "search:zenda", status: "error" },
    { act: "calc:1+", status: "empty" },
    { act: "format-error" },
    { act: "answer:4213" },
  ]);
  assert.deepEqual(toolExecutedReward(trajectory, task), [1, 0, 0, 0, null]);
  assert.deepEqual(toolExecutedReward(trajectory, task, { tool: "calc" }), [null, null, 0, null, null]);
});

test("evidence: a search result that brings a needed fact not seen before", () => {
  const trajectory = sketchTrajectory([
    { act: "search:zenda", refs: ["p-zenda"] }, // needed, new → 1
    { act: "search:zenda", refs: ["p-zenda"] }, // needed but already found → 0
    { act: "search:lorem", refs: ["p-lorem"] }, // not needed → 0
    { act: "search:ruritania", refs: ["c-ruritania"], status: "corrupted", injected: true }, // wrong doc → 0
    { act: "search:ruritania", refs: ["x", "c-ruritania"] }, // needed, new → 1
    { act: "answer:4213" },
  ]);
  assert.deepEqual(evidenceReward(trajectory, task), [1, 0, 0, 0, 1, null]);
  assert.deepEqual(evidenceReward(trajectory, { ...task, evidence: undefined }), [
    null,
    null,
    null,
    null,
    null,
    null,
  ]);
});

test("calc-correct: compares with the gold calc results, each paid once", () => {
  const trajectory = sketchTrajectory([
    { act: "calc:2020-1850", value: 170 }, // gold 170 → 1
    { act: "calc:2020-1850", value: 170 }, // already matched → 0
    { act: "calc:2020-1580", value: 440 }, // wrong operands → 0
    { act: "calc:2020-1850", status: "timeout" }, // no value → 0
    { act: "search:zenda" },
  ]);
  assert.deepEqual(calcCorrectReward(trajectory, task), [1, 0, 0, 0, null]);
  assert.deepEqual(calcCorrectReward(trajectory, { ...task, gold: undefined }), [
    null,
    null,
    null,
    null,
    null,
  ]);
  assert.deepEqual(calcCorrectReward(trajectory, { ...task, gold: [{ type: "answer", answer: "1" }] }), [
    0,
    0,
    0,
    0,
    null,
  ]);
});

test("noise-aware vs naive: an injected failure followed by a retry", () => {
  const trajectory = sketchTrajectory([
    { act: "search:zenda", status: "timeout", injected: true },
    { act: "search:zenda", refs: ["p-zenda"] }, // the retry works
    { act: "answer:4213" },
  ]);
  // Naive: the timeout is the policy's failure.
  assert.deepEqual(toolExecutedReward(trajectory, task), [0, 1, null]);
  assert.deepEqual(evidenceReward(trajectory, task), [0, 1, null]);
  // Noise-aware: the failed turn is neutral, the retry earns its reward.
  assert.deepEqual(noiseAware(toolExecutedReward)(trajectory, task), [null, 1, null]);
  assert.deepEqual(noiseAware(evidenceReward)(trajectory, task), [null, 1, null]);
});

test("noise-aware: answering blind after an injected failure earns 0 on the next turn", () => {
  const trajectory = sketchTrajectory([
    { act: "search:zenda", status: "error", injected: true },
    { act: "answer:17" },
  ]);
  assert.deepEqual(toolExecutedReward(trajectory, task), [0, null]); // naive
  assert.deepEqual(noiseAware(toolExecutedReward)(trajectory, task), [null, 0]);
  assert.deepEqual(noiseAware(evidenceReward)(trajectory, task), [null, 0]);
});

test("noise-aware: chains of injected failures, other tools, and a last failed turn", () => {
  const trajectory = sketchTrajectory([
    { act: "search:zenda", status: "error", injected: true },
    { act: "search:zenda person", status: "empty", injected: true }, // rephrased retry, hit again
    { act: "search:zenda", refs: ["p-zenda"] }, // retry works
    { act: "calc:2020-1850", status: "error", injected: true },
    { act: "search:ruritania", refs: ["c-ruritania"] }, // moved on from calc: gave up on it
    { act: "search:x", status: "timeout", injected: true }, // last turn: nothing to judge
  ]);
  assert.deepEqual(toolExecutedReward(trajectory, task), [0, 0, 1, 0, 1, 0]);
  assert.deepEqual(noiseAware(toolExecutedReward)(trajectory, task), [null, null, 1, null, 0, null]);
  // Search-only evidence ignores the calc noise: turn 4 is judged on its own result.
  assert.deepEqual(evidenceReward(trajectory, task), [0, 0, 1, null, 1, 0]);
  assert.deepEqual(noiseAware(evidenceReward)(trajectory, task), [null, null, 1, null, 1, null]);
  // Genuine (not injected) failures stay policy failures under both variants.
  const genuine = sketchTrajectory([{ act: "search:zenda", status: "empty" }, { act: "answer:1" }]);
  assert.deepEqual(noiseAware(toolExecutedReward)(genuine, task), [0, null]);
});

test("fraction: evidence and calc pay a share per new fact, so an episode sums to at most 1", () => {
  const trajectory = sketchTrajectory([
    { act: "search:zenda", refs: ["p-zenda"] }, // 1 of 2 needed facts → 1/2
    { act: "search:zenda", refs: ["p-zenda"] }, // repeat → 0
    { act: "search:both", refs: ["p-zenda", "c-ruritania"] }, // one new of 2 → 1/2
    { act: "search:again", refs: ["p-zenda", "c-ruritania"] }, // nothing new → 0
    { act: "calc:2020-1850", value: 170 }, // the only gold calc step → 1/1
    { act: "calc:2020-1850", value: 170 }, // already matched → 0
    { act: "answer:4213" },
  ]);
  const evidence = evidenceReward(trajectory, task, { fraction: true });
  assert.deepEqual(evidence, [0.5, 0, 0.5, 0, null, null, null]);
  assert.deepEqual(calcCorrectReward(trajectory, task, { fraction: true }), [
    null,
    null,
    null,
    null,
    1,
    0,
    null,
  ]);
  // Both new facts in one result pay 2/2 at once.
  const both = sketchTrajectory([{ act: "search:both", refs: ["c-ruritania", "p-zenda"] }]);
  assert.deepEqual(evidenceReward(both, task, { fraction: true }), [1]);
  // A task with two gold calc steps pays 1/2 each.
  const twoCalcs = {
    ...task,
    gold: [...task.gold!, { type: "calc" as const, expression: "170 * 2", result: "340" }],
  };
  const calcs = sketchTrajectory([
    { act: "calc:170*2", value: 340 },
    { act: "calc:1+1", value: 2 },
    { act: "calc:2020-1850", value: 170 },
  ]);
  assert.deepEqual(calcCorrectReward(calcs, twoCalcs, { fraction: true }), [0.5, 0, 0.5]);
});
