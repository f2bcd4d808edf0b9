import assert from "node:assert/strict";
import { test } from "node:test";
import { gae, tokenRewards } from "./gae.ts";
import { sketchBatch } from "./testing.ts";

const near = (actual: ArrayLike<number>, expected: number[], tolerance = 1e-5) => {
  assert.equal(actual.length, expected.length);
  for (let i = 0; i < expected.length; i++) {
    assert.ok(Math.abs(actual[i] - expected[i]) <= tolerance, `[${i}] ${actual[i]} != ${expected[i]}`);
  }
};

// Layout: prompt ×1, turn 0 ×2, observation ×1, turn 1 ×1. Values on masked tokens (9) must not matter.
const sketch = {
  group: "g",
  outcome: 1,
  turns: [0.5, 0],
  turnTokens: [2, 1],
  promptTokens: 1,
  observationTokens: 1,
  values: [9, 0.1, 0.2, 9, 0.3],
};

test("rewards sit on each turn's last policy token, the outcome on the episode's last", () => {
  const [episode] = sketchBatch([sketch]).episodes;
  near(tokenRewards(episode, 1), [0, 0, 0.5, 0, 1]);
});

test("gae over policy tokens, skipping the observation: worked example", () => {
  // γ = 0.9, λ = 0.8 (γλ = 0.72), policy values [0.1, 0.2, 0.3], rewards [0, 0.5, 1]:
  //   p2: δ = 1 + 0 - 0.3 = 0.7;                A = 0.7;                     return 1.0
  //   p1: δ = 0.5 + 0.9·0.3 - 0.2 = 0.57;       A = 0.57 + 0.72·0.7 = 1.074;  return 1.274
  //   p0: δ = 0 + 0.9·0.2 - 0.1 = 0.08;         A = 0.08 + 0.72·1.074 = 0.85328; return 0.95328
  const batch = sketchBatch([sketch]);
  const result = gae(batch, { gamma: 0.9, lambda: 0.8, whiten: false });
  near(result.advantages[0], [0, 0.85328, 1.074, 0, 0.7]);
  near(result.returns?.[0] ?? [], [0, 0.95328, 1.274, 0, 1]);
});

test("gae with γ = λ = 1 is the Monte-Carlo return minus the value", () => {
  // total reward after each policy token: p0 1.5, p1 1.5, p2 1 → minus values [0.1, 0.2, 0.3]
  const result = gae(sketchBatch([sketch]), { whiten: false });
  near(result.advantages[0], [0, 1.4, 1.3, 0, 0.7]);
});

test("gae: whitening, null outcomes and missing values", () => {
  const batch = sketchBatch([sketch, { ...sketch, outcome: 0 }, { ...sketch, outcome: null }]);
  const result = gae(batch, { gamma: 0.9, lambda: 0.8 });
  // Whitened over the 6 policy tokens of the two scored episodes: mean 0, unbiased std 1.
  const tokens = [1, 2, 4].flatMap((i) => [result.advantages[0][i], result.advantages[1][i]]);
  const mean = tokens.reduce((sum, value) => sum + value, 0) / tokens.length;
  const variance = tokens.reduce((sum, value) => sum + (value - mean) ** 2, 0) / (tokens.length - 1);
  assert.ok(Math.abs(mean) < 1e-6 && Math.abs(variance - 1) < 1e-5, `${mean} ${variance}`);
  // The null-outcome episode: advantage 0, returns = values (no value-loss gradient).
  assert.ok(result.advantages[2].every((value) => value === 0));
  near(result.returns?.[2] ?? [], [0, 0.1, 0.2, 0, 0.3]);
  assert.throws(() => gae(sketchBatch([{ group: "g", outcome: 1 }])), /episode 0 has no values/);
});
