import assert from "node:assert/strict";
import { test } from "node:test";
import { discountedStepReturns, gigpo, stepLevelAdvantages } from "./gigpo.ts";
import { assertNear, perTurn, sketchBatch } from "./testing.ts";

const near = assertNear;

test("discounted step returns: turn rewards plus the outcome on the last turn", () => {
  // rewards [0.5, null, 0] + outcome 1 on the last: R_2 = 1, R_1 = 0 + 0.95·1, R_0 = 0.5 + 0.95·0.95
  near(discountedStepReturns([0.5, null, 0], 1, 0.95), [0.5 + 0.9025, 0.95, 1]);
});

test("gigpo: episode advantage + ω · step advantage within anchor-state groups", () => {
  // Outcome-only rewards, γ = 0.95. Episodes a (1), b (0), c (0):
  //   A^E: [1,0,0] → [1.1547, -0.5774, -0.5774]
  //   step returns: a [0.95, 1], b [0, 0], c [0, 0]
  //   state s0 = {a0 0.95, b0 0, c0 0}: mean 0.3167, std 0.5485 → [1.1547, -0.5774, -0.5774]
  //   state s1 = {a1 1, b1 0}: → [0.7071, -0.7071]
  //   state s2 = {c1}: a step group of one → 0
  const batch = sketchBatch([
    { group: "g", outcome: 1, turns: [0, 0], anchors: ["s0", "s1"] },
    { group: "g", outcome: 0, turns: [0, 0], anchors: ["s0", "s1"] },
    { group: "g", outcome: 0, turns: [0, 0], anchors: ["s0", "s2"] },
  ]);
  const result = gigpo(batch);
  const turns = batch.episodes.map((episode, i) => perTurn(episode, result.advantages[i]));
  near(turns[0], [1.1547005 + 1.1547005, 1.1547005 + 0.7071064]);
  near(turns[1], [-0.5773503 - 0.5773503, -0.5773503 - 0.7071064]);
  near(turns[2], [-0.5773503 - 0.5773503, -0.5773503]);
  // normalisation "none" (verl-agent's mean_norm): s0 → 0.95 - 0.31667 = 0.63333, s1 → ±0.5
  near(stepLevelAdvantages(batch, { normalization: "none" })[0], [0.6333333, 0.5]);
  // ω = 0: plain GRPO on the episode reward.
  near(perTurn(batch.episodes[0], gigpo(batch, { stepWeight: 0 }).advantages[0]), [1.1547005, 1.1547005]);
});

test("gigpo: states revisited, groups of one, all-equal rewards, nulls, missing anchors", () => {
  const batch = sketchBatch([
    { group: "one", outcome: 1, turns: [0], anchors: ["s0"] },
    { group: "same", outcome: 1, turns: [0, 0], anchors: ["s0", "s1"] },
    { group: "same", outcome: 1, turns: [0, 0], anchors: ["s0", "s1"] },
    { group: "n", outcome: null, turns: [0], anchors: ["s0"] },
    { group: "n", outcome: 1, turns: [0], anchors: ["s0"] },
    { group: "n", outcome: 0, turns: [0], anchors: ["s0"] },
  ]);
  const result = gigpo(batch);
  for (const i of [0, 1, 2, 3])
    assert.ok(
      result.advantages[i].every((value) => value === 0),
      `episode ${i}`,
    );
  near(perTurn(batch.episodes[4], result.advantages[4]), [0.7071064 + 0.7071064]);
  // One rollout visiting a state twice: both visits join the step group.
  // returns of [loop, loop, done] with outcome 1: [0.9025, 0.95, 1]; state "loop" = {0.9025, 0.95}
  const loop = sketchBatch([{ group: "g", outcome: 1, turns: [0, 0, 0], anchors: ["loop", "loop", "end"] }]);
  near(stepLevelAdvantages(loop, { normalization: "none" })[0], [-0.02375, 0.02375, 0]);
  const missing = sketchBatch([{ group: "g", outcome: 1, turns: [0, 0] }]);
  assert.throws(() => gigpo(missing), /needs one anchor state key per turn \(2\), got none/);
});
