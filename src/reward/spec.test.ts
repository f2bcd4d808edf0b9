import assert from "node:assert/strict";
import { test } from "node:test";
import {
  type OutcomeTerm,
  type RewardSpec,
  resolveRewardSpec,
  scoreTrajectory,
  TURN_REWARD_TOTAL,
  withRewards,
} from "./spec.ts";
import { sketchTrajectory, SKETCH_TASK as task } from "./testing.ts";

const trajectory = sketchTrajectory(
  [
    { act: "search:zenda", status: "timeout", injected: true },
    { act: "search:zenda", refs: ["p-zenda"] },
    { act: "search:ruritania", refs: ["c-ruritania"] },
    { act: "answer:4213" },
  ],
  { correct: true },
);

test("mt-grpo preset: weighted outcome and turn sums", () => {
  const scores = scoreTrajectory(trajectory, task, "mt-grpo");
  // outcome: EM 1·1 + contained 0.5·1 + format 0.2·1 = 1.7
  assert.ok(Math.abs((scores.outcome as number) - 1.7) < 1e-12);
  // turns (naive): tool 0.2·[0,1,1,·] + evidence 0.5·[0,1,1,·]; calc judges no turn
  assert.deepEqual(scores.turnTerms["tool-executed"], [0, 1, 1, null]);
  assert.deepEqual(scores.turnTerms["calc-correct"], [null, null, null, null]);
  // The answer turn earns no turn reward: 0, not null.
  assert.deepEqual(scores.turns, [0, 0.7, 0.7, 0]);
  // Noise-aware: the injected timeout makes turn 0 neutral (null).
  const aware = scoreTrajectory(trajectory, task, "mt-grpo-noise-aware");
  assert.deepEqual(aware.turns, [null, 0.7, 0.7, 0]);
  // Answering blind after injected noise: 0 from tool-executed and evidence, neutral turn before it.
  const blind = sketchTrajectory([
    { act: "search:zenda", status: "error", injected: true },
    { act: "answer:1" },
  ]);
  assert.deepEqual(scoreTrajectory(blind, task, "mt-grpo-noise-aware").turns, [null, 0]);
  assert.deepEqual(scoreTrajectory(blind, task, "mt-grpo").turns, [0, 0]);
  // A task without evidence or gold: those terms judge nothing and drop out.
  const bare = { ...task, evidence: undefined, gold: undefined };
  assert.deepEqual(scoreTrajectory(trajectory, bare, "mt-grpo").turns, [0, 0.2, 0.2, 0]);
});

test("null outcome terms make the outcome null; withRewards fills a copy", () => {
  const broken = { ...trajectory, endReason: "policy-error" as const };
  assert.equal(scoreTrajectory(broken, task, "mt-grpo").outcome, null);
  const rewarded = withRewards(trajectory, task, "demyagent");
  assert.equal(rewarded.outcomeReward, 1);
  assert.equal(trajectory.outcomeReward, null); // the input is untouched
  const turned = withRewards(trajectory, task, {
    outcome: [{ name: "exact-match" }],
    turn: [{ name: "evidence" }],
  });
  assert.deepEqual(
    turned.turns.map((turn) => turn.rewards),
    [
      { evidence: 0, [TURN_REWARD_TOTAL]: 0 },
      { evidence: 1, [TURN_REWARD_TOTAL]: 1 },
      { evidence: 1, [TURN_REWARD_TOTAL]: 1 },
      { evidence: null, [TURN_REWARD_TOTAL]: 0 },
    ],
  );
  assert.deepEqual(trajectory.turns[0].rewards, {});
});

test("options reach the reward: overlong with its window", () => {
  // 4 turns × 3 policy tokens = 12; Lmax 14, Lcache 4: -(12 - 10)/4 = -0.5; EM 1 → 0.5
  const spec: RewardSpec = {
    outcome: [{ name: "exact-match" }, { name: "overlong", options: { maxLength: 14, cacheLength: 4 } }],
  };
  assert.equal(scoreTrajectory(trajectory, task, spec).outcome, 0.5);
  // @ts-expect-error options are typed by the reward's name
  const bad: OutcomeTerm = { name: "overlong", options: { maxLength: "x" } };
  assert.ok(bad);
});

test("unknown names and bad weights are rejected with the valid list", () => {
  assert.throws(
    () => resolveRewardSpec("nope"),
    /unknown reward preset "nope"; valid: "exact-match", "demyagent"/,
  );
  assert.throws(
    () => resolveRewardSpec({ outcome: [{ name: "nope" as "format" }] }),
    /unknown outcome reward "nope"; valid: "exact-match", "contains-answer", "format", "demyagent", "overlong"/,
  );
  assert.throws(
    () => resolveRewardSpec({ outcome: [], turn: [{ name: "nope" as "evidence" }] }),
    /unknown turn reward "nope"; valid: "tool-executed", "evidence", "calc-correct"/,
  );
  assert.throws(() => resolveRewardSpec({ outcome: [{ name: "format", weight: Number.NaN }] }), /finite/);
});

test("turn-credit preset: exact match only, and turn rewards a longer episode cannot inflate", () => {
  // A tool-free, well-formed wrong answer earns nothing (mt-grpo pays it the 0.2 format bonus).
  const blind = sketchTrajectory([{ act: "answer:1" }]);
  assert.equal(scoreTrajectory(blind, task, "turn-credit").outcome, 0);
  assert.ok(Math.abs((scoreTrajectory(blind, task, "mt-grpo").outcome as number) - 0.2) < 1e-12);
  // Ten calls that keep retrieving the same fact: the first pays 0.5 · 1/2, the rest 0 (mt-grpo:
  // 0.2 per executed call, so 2.0 + 0.5 in total).
  const farming = sketchTrajectory([
    ...Array.from({ length: 10 }, () => ({ act: "search:zenda", refs: ["p-zenda"] })),
    { act: "answer:1" },
  ]);
  const credit = scoreTrajectory(farming, task, "turn-credit").turns as number[];
  assert.deepEqual(credit, [0.25, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
  const paper = scoreTrajectory(farming, task, "mt-grpo").turns as number[];
  assert.ok(Math.abs(paper.reduce((a, b) => a + b, 0) - 2.5) < 1e-9);
  // The complete solution: both facts (0.25 each) and the gold calc (0.5): the cap, 1, is reached.
  const solved = sketchTrajectory(
    [
      { act: "search:zenda", refs: ["p-zenda"] },
      { act: "search:ruritania", refs: ["c-ruritania"] },
      { act: "calc:2020-1850", value: 170 },
      { act: "answer:4213" },
    ],
    { correct: true },
  );
  const scores = scoreTrajectory(solved, task, "turn-credit");
  assert.equal(scores.outcome, 1);
  assert.deepEqual(scores.turns, [0.25, 0.25, 0.5, 0]);
  // Noise-aware variant: an injected failure is neutral (null), as in mt-grpo-noise-aware.
  const noisy = sketchTrajectory([
    { act: "search:zenda", status: "timeout", injected: true },
    { act: "search:zenda", refs: ["p-zenda"] },
    { act: "answer:1" },
  ]);
  assert.deepEqual(scoreTrajectory(noisy, task, "turn-credit-noise-aware").turns, [null, 0.25, 0]);
  assert.deepEqual(scoreTrajectory(noisy, task, "turn-credit").turns, [0, 0.25, 0]);
});
