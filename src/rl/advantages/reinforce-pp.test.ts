import assert from "node:assert/strict";
import { test } from "node:test";
import { reinforcePlusPlus } from "./reinforce-pp.ts";
import { perTurn, sketchBatch } from "./testing.ts";

const near = (actual: number, expected: number, tolerance = 1e-5) =>
  assert.ok(Math.abs(actual - expected) <= tolerance, `${actual} != ${expected}`);

test("reinforce-pp: group baseline, then whitening over the batch's policy tokens", () => {
  // Group g1 [1 (3 tokens), 0 (1 token)] → centred [0.5, -0.5]; group g2 [1, 1] (2 tokens each) → [0, 0].
  // Tokens: 0.5 ×3, -0.5 ×1, 0 ×4: mean = (1.5 - 0.5)/8 = 0.125
  // squares: 3·0.375² + 0.625² + 4·0.125² = 0.875; unbiased var = 0.875/7 = 0.125, std = 0.353553
  // → (0.5 - 0.125)/0.353553 = 1.06066; (-0.5 - 0.125)/0.353553 = -1.76777; (0 - 0.125)/0.353553 = -0.353553
  const batch = sketchBatch([
    { group: "g1", outcome: 1, turnTokens: [3] },
    { group: "g1", outcome: 0, turnTokens: [1] },
    { group: "g2", outcome: 1, turnTokens: [2] },
    { group: "g2", outcome: 1, turnTokens: [2] },
  ]);
  const result = reinforcePlusPlus(batch);
  const firsts = batch.episodes.map((episode, i) => perTurn(episode, result.advantages[i])[0]);
  near(firsts[0], 1.06066);
  near(firsts[1], -1.767767);
  // A zero-variance group inside a mixed batch gets -mean/std, as in verl.
  near(firsts[2], -0.353553);
  near(firsts[3], -0.353553);
  // Without whitening: the centred values.
  const raw = reinforcePlusPlus(batch, { whiten: false });
  assert.deepEqual(
    batch.episodes.map((episode, i) => perTurn(episode, raw.advantages[i])[0]),
    [0.5, -0.5, 0, 0],
  );
});

test("reinforce-pp: an all-zero-variance batch, a group of one and nulls", () => {
  const flat = sketchBatch([
    { group: "a", outcome: 1 },
    { group: "a", outcome: 1 },
    { group: "b", outcome: 0 },
    { group: "c", outcome: 0.5 },
  ]);
  for (const row of reinforcePlusPlus(flat).advantages) assert.ok(row.every((value) => value === 0));
  // Nulls: excluded from the group mean and from the whitening statistics, advantage 0.
  // g [1, null, 0] → centred [0.5, ·, -0.5], tokens 0.5 ×2, -0.5 ×2: mean 0, var = 1/3 → ±0.866025
  const withNull = sketchBatch([
    { group: "g", outcome: 1 },
    { group: "g", outcome: null },
    { group: "g", outcome: 0 },
  ]);
  const result = reinforcePlusPlus(withNull);
  near(result.advantages[0][2], 0.866025);
  assert.ok(result.advantages[1].every((value) => value === 0));
  near(result.advantages[2][2], -0.866025);
});
