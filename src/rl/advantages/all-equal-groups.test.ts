/**
 * Groups whose rewards are all equal carry no relative signal and must get exactly 0, at any ε,
 * whatever the rewards' rounding. Before the explicit check (groups.ts `allEqual`):
 * - GRPO at ε = 0 on {1, 1}: (1 - 1)/(0 + 0) = NaN for both episodes;
 * - GRPO at ε = 0 on {0.1, 0.1, 0.1}: mean 0.30000000000000004/3 = 0.10000000000000002, so
 *   r - mean = -1.4e-17 and the sample std 1.7e-17: every member got -0.8165;
 * - GRPO at the default ε = 1e-6 on the same group: -1.4e-17/1e-6 ≈ -1.4e-11, not 0;
 * - MT-GRPO at ε = 0 with every turn reward 0: D = 0, σ = 0, A^T = 0/0 = NaN on every token.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { allEqual, groupNormalize } from "./groups.ts";
import { ADVANTAGE_ESTIMATORS } from "./index.ts";
import { perTurn, sketchBatch } from "./testing.ts";

const flatGroups = [
  [1, 1],
  [0, 0, 0],
  [0.1, 0.1, 0.1],
  [0.7, 0.7, null, 0.7],
];

test("allEqual compares the values, nulls left out", () => {
  assert.equal(allEqual([0.1, 0.1, 0.1]), true);
  assert.equal(allEqual([0.7, null, 0.7]), true);
  assert.equal(allEqual([null]), true);
  assert.equal(allEqual([0.1, 0.1 + 1e-17, 0.2]), false);
  assert.equal(allEqual([1, 0]), false);
});

test("groupNormalize: an all-equal group is exactly 0 at ε = 0 and at the default ε", () => {
  // the arithmetic alone leaves a residue here (the reason for the check)
  const mean = (0.1 + 0.1 + 0.1) / 3;
  assert.notEqual(0.1 - mean, 0);
  for (const values of flatGroups) {
    for (const epsilon of [0, 1e-6]) {
      for (const normalization of ["std", "none"] as const) {
        const scores = groupNormalize(values, normalization, epsilon);
        assert.deepEqual(
          scores,
          values.map((value) => (value === null ? null : 0)),
          `${JSON.stringify(values)} ε=${epsilon} ${normalization}`,
        );
      }
    }
  }
  // a group with signal is unchanged: {1, 0}: mean 0.5, sample std 0.7071 → ±0.7071
  const [high, low] = groupNormalize([1, 0], "std", 0) as number[];
  assert.ok(Math.abs(high - Math.SQRT1_2) < 1e-12 && Math.abs(low + Math.SQRT1_2) < 1e-12);
});

test("every estimator gives an all-equal group exactly 0 on every token, at ε = 0 and the default", () => {
  for (const values of flatGroups) {
    const batch = sketchBatch(
      values.map((outcome, i) => ({
        group: "g",
        outcome,
        turns: [0, 0],
        anchors: ["start", `s${i}`],
        values: Array.from({ length: 7 }, () => 0.5), // prompt 2 + turn 2 + observation 1 + turn 2
      })),
    );
    for (const [name, estimator] of Object.entries(ADVANTAGE_ESTIMATORS)) {
      if (name === "gae") continue; // a critic's baseline, not a group's: nonzero by design
      for (const epsilon of [0, 1e-6]) {
        const { advantages } = estimator(batch, { epsilon });
        for (const tokens of advantages) {
          for (const value of tokens) {
            assert.ok(value === 0, `${name} ${JSON.stringify(values)} ε=${epsilon}: ${value}`);
          }
        }
      }
    }
  }
});

test("MT-GRPO: an all-zero turn-reward group gets A^T = 0 (no NaN at ε = 0), A^O unchanged", () => {
  // outcomes {1, 0}: A^O = ±0.7071 at ε = 0; turn rewards all 0: A^T = 0 on every turn
  const batch = sketchBatch([
    { group: "g", outcome: 1, turns: [0, 0, 0] },
    { group: "g", outcome: 0, turns: [0, 0] },
  ]);
  const { advantages } = ADVANTAGE_ESTIMATORS["mt-grpo"](batch, { epsilon: 0 });
  const [first, second] = advantages.map((tokens, i) => perTurn(batch.episodes[i], tokens));
  for (const value of first) assert.ok(Math.abs(value - Math.SQRT1_2) < 1e-6, `${value}`);
  for (const value of second) assert.ok(Math.abs(value + Math.SQRT1_2) < 1e-6, `${value}`);
});

test("MT-GRPO: a flat turn index adds nothing, a varying one still scores", () => {
  // turn 0 rewards {0.1, 0.1} (flat: d = 0 exactly), turn 1 rewards {1, 0}: b_1 = 0.5,
  // d_{·,1} = ±0.5, D_{·,0} = D_{·,1} = ±0.5 (γ_T = 1), σ = 0.7071 → A^T = ±0.7071 on both turns;
  // outcomes equal: A^O = 0
  const batch = sketchBatch([
    { group: "g", outcome: 1, turns: [0.1, 1] },
    { group: "g", outcome: 1, turns: [0.1, 0] },
  ]);
  const { advantages } = ADVANTAGE_ESTIMATORS["mt-grpo"](batch, { epsilon: 0 });
  const [first, second] = advantages.map((tokens, i) => perTurn(batch.episodes[i], tokens));
  for (const value of first) assert.ok(Math.abs(value - Math.SQRT1_2) < 1e-6, `${value}`);
  for (const value of second) assert.ok(Math.abs(value + Math.SQRT1_2) < 1e-6, `${value}`);
});

test("GiGPO: a step group of one gets A^S = 0; a flat step group gets exactly 0", () => {
  // outcomes {1, 0}, turn rewards 0: A^E = ±0.7071 at ε = 0. Turn 0 starts from "start" for both
  // (returns γ·outcome = 0.95 and 0: a real step group), turn 1 from a state of its own (groups of
  // one: A^S = 0). So turn 0 gets A^E ± 0.7071, turn 1 gets A^E alone.
  const batch = sketchBatch([
    { group: "g", outcome: 1, turns: [0, 0], anchors: ["start", "a"] },
    { group: "g", outcome: 0, turns: [0, 0], anchors: ["start", "b"] },
  ]);
  const { advantages } = ADVANTAGE_ESTIMATORS.gigpo(batch, { epsilon: 0 });
  const [first, second] = advantages.map((tokens, i) => perTurn(batch.episodes[i], tokens));
  assert.ok(Math.abs(first[0] - 2 * Math.SQRT1_2) < 1e-6 && Math.abs(first[1] - Math.SQRT1_2) < 1e-6);
  assert.ok(Math.abs(second[0] + 2 * Math.SQRT1_2) < 1e-6 && Math.abs(second[1] + Math.SQRT1_2) < 1e-6);
  // equal outcomes and the same states: every step group flat, all exactly 0
  const flat = sketchBatch([
    { group: "g", outcome: 0.1, turns: [0, 0], anchors: ["start", "a"] },
    { group: "g", outcome: 0.1, turns: [0, 0], anchors: ["start", "a"] },
  ]);
  for (const tokens of ADVANTAGE_ESTIMATORS.gigpo(flat, { epsilon: 0 }).advantages) {
    for (const value of tokens) assert.equal(value, 0);
  }
});
