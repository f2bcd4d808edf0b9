import assert from "node:assert/strict";
import { test } from "node:test";
import { createRng } from "../../core/random.ts";
import { mtGrpo, turnLevelAdvantages } from "./mt-grpo.ts";
import { assertNear, perTurn, sketchBatch } from "./testing.ts";

const near = assertNear;

const turnsOf = (batch: ReturnType<typeof sketchBatch>, result: { advantages: Float32Array[] }) =>
  batch.episodes.map((episode, i) => perTurn(episode, result.advantages[i]));

test("two turns, turn reward on the first: the paper's A^O + λ·norm(turn reward) then A^O", () => {
  // outcome [1,0,0] → A^O = [1.1547, -0.5774, -0.5774]
  // turn-0 rewards [0.7, 0, 0.7]: mean 0.4667, sample std 0.3689 → A^T = [0.5774, -1.1547, 0.5774]
  // turn 1 (the answer) earned 0 everywhere → A^T = 0 there
  const batch = sketchBatch([
    { group: "g", outcome: 1, turns: [0.7, 0] },
    { group: "g", outcome: 0, turns: [0, 0] },
    { group: "g", outcome: 0, turns: [0.7, 0] },
  ]);
  near(turnsOf(batch, mtGrpo(batch)).flat(), [1.7320508, 1.1547005, -1.7320508, -0.5773503, 0, -0.5773503]);
  // λ = 0.5 halves the turn term.
  near(turnsOf(batch, mtGrpo(batch, { turnWeight: 0.5 }))[0], [1.1547005 + 0.2886751, 1.1547005]);
});

test("an episode that stops early stays in the baseline of every later turn (as 0)", () => {
  // Outcomes equal (A^O = 0), normalisation off to show the arithmetic. K = 3 turns.
  // a: search ok, answer          → r̃ = [1, 0, 0]   G_0 = 1, G_1 = 0
  // b: search ok, search ok, answer → r̃ = [1, 1, 0] G_0 = 2, G_1 = 1
  // c: search failed, answer      → r̃ = [0, 0, 0]   G_0 = 0, G_1 = 0
  // b_s = [2/3, 1/3, 0]; A^T_t = G_t - mean G_t: turn 0 [0, 1, -1]; turn 1 [-1/3, 2/3, -1/3]
  const batch = sketchBatch([
    { group: "g", outcome: 1, turns: [1, 0] },
    { group: "g", outcome: 1, turns: [1, 1, 0] },
    { group: "g", outcome: 1, turns: [0, 0] },
  ]);
  const turn = turnLevelAdvantages(batch, { normalization: "none" });
  near(turn[0], [0, -1 / 3, 0]);
  near(turn[1], [1, 2 / 3, 0]);
  near(turn[2], [-1, -1 / 3, 0]);
  // With normalisation, one group scale σ = max_t std_j D_{j,t} = std(0, 1, -1) = 1.
  near(turnLevelAdvantages(batch)[1], [1, 2 / 3, 0]);
});

test("the baseline does not depend on the episode's own stopping turn (random groups)", () => {
  // Without neutral turns, G_{j,t} - A^T_{j,t} must be the same number, mean_j G_{j,t}, for every
  // episode j of the group, including those that had already stopped (G = 0 there).
  const rng = createRng(5);
  for (let trial = 0; trial < 50; trial++) {
    const size = rng.range(2, 6);
    const sketches = Array.from({ length: size }, () => ({
      group: "g",
      outcome: rng.pick([0, 1]),
      turns: Array.from({ length: rng.range(1, 5) }, () => rng.pick([0, 0.5, 1])),
    }));
    const batch = sketchBatch(sketches);
    const turn = turnLevelAdvantages(batch, { normalization: "none" });
    const turns = Math.max(...sketches.map((sketch) => sketch.turns.length));
    for (let t = 0; t < turns; t++) {
      const baselines = sketches.map((sketch, j) => {
        const togo = sketch.turns.slice(t).reduce((sum, reward) => sum + reward, 0);
        // turn[j] runs over all K turn indices; past the episode's end it is what the end charged.
        return togo - turn[j][t];
      });
      for (const baseline of baselines) assert.ok(Math.abs(baseline - baselines[0]) < 1e-9, `${baselines}`);
      assert.ok(Math.abs(baselines[0] - turnLevelTail(sketches, t)) < 1e-9);
    }
  }
});

/** mean_j G_{j,t}: the group's mean zero-padded reward-to-go from turn t. */
function turnLevelTail(sketches: { turns: number[] }[], t: number): number {
  return (
    sketches.reduce((sum, sketch) => sum + sketch.turns.slice(t).reduce((s, r) => s + r, 0), 0) /
    sketches.length
  );
}

test("a neutral (noise) turn is left out of its turn baseline and earns nothing itself", () => {
  // a: injected failure (null), retry ok (1), answer; b, c: search ok, answer. Normalisation off.
  // b_0 = mean(1, 1) = 1 (a left out), b_1 = mean(1, 0, 0) = 1/3, b_2 = 0
  // a: d = [0, 2/3, 0] → A^T = [2/3, 2/3, 0]; b, c: d = [0, -1/3, 0] → [-1/3, -1/3]
  const aware = sketchBatch([
    { group: "g", outcome: 1, turns: [null, 1, 0] },
    { group: "g", outcome: 1, turns: [1, 0] },
    { group: "g", outcome: 1, turns: [1, 0] },
  ]);
  const turn = turnLevelAdvantages(aware, { normalization: "none" });
  near(turn[0], [2 / 3, 2 / 3, 0]);
  near(turn[1], [-1 / 3, -1 / 3, 0]);
  // Naive (the failure scored 0): b_0 = 2/3, a: d = [-2/3, 2/3, 0] → turn 0 gets 0, the failure cancels the retry.
  const naive = sketchBatch([
    { group: "g", outcome: 1, turns: [0, 1, 0] },
    { group: "g", outcome: 1, turns: [1, 0] },
    { group: "g", outcome: 1, turns: [1, 0] },
  ]);
  near(turnLevelAdvantages(naive, { normalization: "none" })[0], [0, 2 / 3, 0]);
});

test("the same total in a different order: one scale per group, no blow-up", () => {
  // a [1, 0], b [0, 1]: D_0 = [0, 0], D_1 = [-0.5, 0.5]; σ = max(0, 0.7071) → A^T_1 = ∓0.7071
  const batch = sketchBatch([
    { group: "g", outcome: 0, turns: [1, 0] },
    { group: "g", outcome: 0, turns: [0, 1] },
  ]);
  near(turnsOf(batch, mtGrpo(batch)).flat(), [0, -0.7071058, 0, 0.7071058]);
});

test("mt-grpo: group of one, all-equal rewards, null outcome; discount 0 = own turn reward", () => {
  const batch = sketchBatch([
    { group: "one", outcome: 1, turns: [1, 0] },
    { group: "same", outcome: 1, turns: [0.5, 0] },
    { group: "same", outcome: 1, turns: [0.5, 0] },
    { group: "n", outcome: null, turns: [1, 0] },
    { group: "n", outcome: 1, turns: [0, 0] },
    { group: "n", outcome: 0, turns: [1, 0] },
  ]);
  const result = mtGrpo(batch);
  for (const i of [0, 1, 2, 3])
    assert.ok(
      result.advantages[i].every((value) => value === 0),
      `episode ${i}`,
    );
  // group n without the null: outcome [1, 0] → ±0.7071; turns [0, 1] at turn 0 → ∓0.7071: they cancel on turn 0
  near(turnsOf(batch, result)[4], [0, 0.7071058]);
  // γ_T = 0: each turn is judged on its own reward (a [1, 0], b [0, 1] → turn 0 ±0.5, turn 1 ∓0.5)
  const order = sketchBatch([
    { group: "g", outcome: 0, turns: [1, 0] },
    { group: "g", outcome: 0, turns: [0, 1] },
  ]);
  near(turnLevelAdvantages(order, { normalization: "none", turnDiscount: 0 })[0], [0.5, -0.5]);
});

test("exact expected gradient of a stopping policy: ours is unbiased, per-turn-index is not", () => {
  // A policy that at each turn searches (turn reward 1) with probability p or answers (0, stop);
  // the third turn is a forced answer. Score of the logit θ: (1 - p) for search, -p for answer,
  // 0 for the forced answer. J = E[turn reward] = p + p², dJ/dθ = (1 + 2p)·p(1 - p).
  // Enumerating all 27 groups of 3 gives the exact expectation of Σ_t A^T_t ∇log π(a_t) per
  // episode. With a mean baseline that includes the episode itself, the unbiased value is
  // (1 - 1/n)·dJ/dθ. The per-turn-index construction of verl RFC #7244 (baseline of turn s over
  // the episodes that reached s, summed over the episode's own turns) misses it.
  const p = 0.6;
  const n = 3;
  const kinds = [
    { prob: 1 - p, turns: [0], scores: [-p] },
    { prob: p * (1 - p), turns: [1, 0], scores: [1 - p, -p] },
    { prob: p * p, turns: [1, 1, 0], scores: [1 - p, 1 - p, 0] },
  ];
  const perIndex = (groups: number[][]): number[][] => {
    const turns = Math.max(...groups.map((rewards) => rewards.length));
    const baseline = Array.from({ length: turns }, (_, s) => {
      const reached = groups.filter((rewards) => s < rewards.length).map((rewards) => rewards[s]);
      return reached.reduce((sum, reward) => sum + reward, 0) / reached.length;
    });
    return groups.map((rewards) =>
      rewards.map((_, t) => rewards.slice(t).reduce((sum, reward, k) => sum + reward - baseline[t + k], 0)),
    );
  };
  let ours = 0;
  let naive = 0;
  for (let c = 0; c < 27; c++) {
    const picks = [c % 3, Math.floor(c / 3) % 3, Math.floor(c / 9)].map((k) => kinds[k]);
    const prob = picks.reduce((product, kind) => product * kind.prob, 1);
    const groups = picks.map((kind) => kind.turns);
    const turn = turnLevelAdvantages(
      sketchBatch(groups.map((turns) => ({ group: "g", outcome: 1, turns }))),
      {
        normalization: "none",
      },
    );
    const biased = perIndex(groups);
    picks.forEach((kind, i) => {
      kind.scores.forEach((score, t) => {
        ours += (prob * turn[i][t] * score) / n;
        naive += (prob * biased[i][t] * score) / n;
      });
    });
  }
  const truth = (1 + 2 * p) * p * (1 - p); // 0.528
  near([ours], [(1 - 1 / n) * truth], 1e-12); // 0.352
  assert.ok(Math.abs(naive - (1 - 1 / n) * truth) > 0.1, `per-turn-index gave ${naive}`); // 0.229
});
