import assert from "node:assert/strict";
import { test } from "node:test";
import { drGrpo, grpo } from "./grpo.ts";
import { rloo } from "./rloo.ts";
import { assertNear, perTurn, sketchBatch } from "./testing.ts";

const near = assertNear;

/** The advantage each episode's first policy token got. */
function firstOf(result: { advantages: Float32Array[] }, batch: ReturnType<typeof sketchBatch>): number[] {
  return batch.episodes.map((episode, i) => perTurn(episode, result.advantages[i])[0]);
}

const group = (rewards: (number | null)[], name = "g") =>
  sketchBatch(rewards.map((outcome) => ({ group: name, outcome })));

test("grpo: group [1,0,0]: mean 1/3, sample std 0.577 → [1.155, -0.577, -0.577]", () => {
  // std = sqrt(((2/3)² + 2·(1/3)²) / (3 - 1)) = sqrt(1/3) = 0.57735 (sample, n-1)
  // (1 - 1/3)/0.57735 = 1.1547; (0 - 1/3)/0.57735 = -0.57735  (a population std, 0.4714, would give 1.414)
  const batch = group([1, 0, 0]);
  near(firstOf(grpo(batch), batch), [1.1547005, -0.5773503, -0.5773503]);
});

test("grpo: epsilon is added to the std, outside the square root", () => {
  // [1, 0]: std = 0.70711; with ε = 1: 0.5 / (0.70711 + 1) = 0.29289 (not 0.5 / sqrt(0.5 + 1) = 0.40825)
  const batch = group([1, 0]);
  near(firstOf(grpo(batch, { epsilon: 1 }), batch), [0.2928932, -0.2928932]);
});

test("grpo: a group of one, an all-equal group and null rewards", () => {
  // group of one → 0; [1,1,1]: zero variance → exactly 0; [1, null, 0]: mean 0.5, std 0.70711 → ±0.70711, null → 0
  const batch = sketchBatch([
    { group: "one", outcome: 1 },
    { group: "same", outcome: 1 },
    { group: "same", outcome: 1 },
    { group: "same", outcome: 1 },
    { group: "null", outcome: 1 },
    { group: "null", outcome: null },
    { group: "null", outcome: 0 },
    { group: "lonely", outcome: 1 },
    { group: "lonely", outcome: null },
  ]);
  const result = grpo(batch);
  near(firstOf(result, batch), [0, 0, 0, 0, 0.7071057, 0, -0.7071057, 0, 0]);
  // Every token of a zero-advantage episode is exactly 0.
  for (const i of [0, 1, 5]) assert.ok(result.advantages[i].every((value) => value === 0));
});

test("grpo writes on policy tokens only; prompt and observation tokens get 0", () => {
  const batch = sketchBatch([
    { group: "g", outcome: 1, turnTokens: [2, 1], promptTokens: 2, observationTokens: 2 },
    { group: "g", outcome: 0, turnTokens: [1] },
  ]);
  const [first] = grpo(batch).advantages;
  // layout: prompt ×2, turn 0 ×2, observation ×2, turn 1 ×1; A = 0.5/0.70711 = 0.70711
  near([...first], [0, 0, 0.7071058, 0.7071058, 0, 0, 0.7071058]);
});

test("dr-grpo: only centred: [1,0,0] → [2/3, -1/3, -1/3]", () => {
  const batch = group([1, 0, 0]);
  near(firstOf(drGrpo(batch), batch), [2 / 3, -1 / 3, -1 / 3]);
  // normalization "none" on grpo is the same estimator.
  near(firstOf(grpo(batch, { normalization: "none" }), batch), [2 / 3, -1 / 3, -1 / 3]);
});

test("rloo: r_i - mean of the others", () => {
  // [1,0,0]: 1 - mean(0,0) = 1; 0 - mean(1,0) = -0.5; = 3/2 · (r - 1/3)
  let batch = group([1, 0, 0]);
  near(firstOf(rloo(batch), batch), [1, -0.5, -0.5]);
  // nulls are left out: [1, null, 0, 0] is [1, 0, 0] with a 0 for the null
  batch = group([1, null, 0, 0]);
  near(firstOf(rloo(batch), batch), [1, 0, -0.5, -0.5]);
  // group of one and zero variance → 0
  batch = sketchBatch([
    { group: "a", outcome: 1 },
    { group: "b", outcome: 0.5 },
    { group: "b", outcome: 0.5 },
  ]);
  near(firstOf(rloo(batch), batch), [0, 0, 0]);
});
