import assert from "node:assert/strict";
import { test } from "node:test";
import type { Trajectory, Turn } from "../types/trajectory.ts";
import { flattenTrajectory } from "../types/trajectory.ts";
import { computeAdvantages, toAdvantageBatch } from "./advantages/index.ts";
import { aggregationScales } from "./aggregation.ts";
import { assembleSequences } from "./assemble.ts";
import { groupsWithSignal } from "./dynamic-sampling.ts";

function near(actual: number, expected: number, tolerance = 1e-4, label = "") {
  assert.ok(Math.abs(actual - expected) <= tolerance, `${label}: ${actual} != ${expected}`);
}

interface TurnSketch {
  tokens: number;
  /** Observation text (and its token count = words). Absent on the answer turn. */
  observation?: string;
  reward: number | null;
}

/** A trajectory with `tokens` policy ids per turn (log-probs −0.5 each), observations as given. */
function trajectory(id: string, group: number, outcome: number, turns: TurnSketch[]): Trajectory {
  return {
    id,
    taskId: "t",
    family: "chain",
    policyId: "test",
    seed: 0,
    group,
    prompt: { text: "question", tokenIds: [1, 2, 3] },
    turns: turns.map(
      (sketch, index): Turn => ({
        index,
        text: `turn ${index}`,
        tokenIds: Array.from({ length: sketch.tokens }, (_, i) => 10 + index * 5 + i),
        logprobs: Array.from({ length: sketch.tokens }, () => -0.5),
        action: sketch.observation
          ? { type: "tool-call", tool: "search", arguments: { query: "x" } }
          : { type: "answer", answer: "a" },
        ...(sketch.observation
          ? {
              observation: {
                text: sketch.observation,
                tokenIds: sketch.observation.split(" ").map((word) => 100 + word.length),
              },
            }
          : {}),
        rewards: { total: sketch.reward },
      }),
    ),
    finalAnswer: "a",
    correct: outcome === 1,
    outcomeReward: outcome,
    endReason: "answer",
  };
}

/** The advantage carried by each turn's tokens (asserting they all carry the same), from the assembled batch. */
function turnAdvantages(t: Trajectory, advantages: readonly number[], oldLogprobs: readonly number[]) {
  const flat = flattenTrajectory(t);
  const perTurn = new Map<number, number>();
  flat.turnIndex.forEach((turn, i) => {
    if (!flat.lossMask[i]) {
      assert.equal(advantages[i], 0, "a masked token carries an advantage");
      assert.equal(oldLogprobs[i], 0, "a masked token carries an old log-prob");
      return;
    }
    assert.equal(oldLogprobs[i], -0.5);
    const seen = perTurn.get(turn);
    if (seen === undefined) perTurn.set(turn, advantages[i]);
    else near(advantages[i], seen, 1e-7, `turn ${turn} tokens differ`);
  });
  return [...perTurn.entries()].sort((a, b) => a[0] - b[0]).map(([, value]) => value);
}

const ASSEMBLE = { aggregation: "token-mean", normLength: 100, maxLen: 256 } as const;

test("MT-GRPO: each turn's tokens carry A^O + λ·A^T through the trainer's assembly", () => {
  // One group, a tool turn then an answer turn each. Turn rewards [0.7, 0], [0, 0], [0.2, 0];
  // outcomes 1, 0, 0.
  // A^O: mean 1/3, sample std √(1/3) = 0.57735 → [1.15470, −0.57735, −0.57735].
  // A^T: baseline turn 0 = 0.3, turn 1 = 0; D_·,0 = [0.4, −0.3, −0.1], D_·,1 = 0; σ = sample std of
  //      D_·,0 = √0.13 = 0.36056 → A^T_·,0 = [1.10940, −0.83205, −0.27735], A^T_·,1 = 0.
  // Turn 0 tokens: [2.26410, −1.40940, −0.85470]; turn 1 tokens: A^O.
  const trajectories = [
    trajectory("a", 0, 1, [
      { tokens: 3, observation: "doc one", reward: 0.7 },
      { tokens: 2, reward: 0 },
    ]),
    trajectory("b", 0, 0, [
      { tokens: 4, observation: "no results here", reward: 0 },
      { tokens: 2, reward: 0 },
    ]),
    trajectory("c", 0, 0, [
      { tokens: 2, observation: "doc two", reward: 0.2 },
      { tokens: 3, reward: 0 },
    ]),
  ];
  const result = computeAdvantages("mt-grpo", toAdvantageBatch(trajectories));
  const sequences = assembleSequences(trajectories, result.advantages, ASSEMBLE);
  const expected = [
    [2.2641, 1.1547],
    [-1.4094, -0.57735],
    [-0.8547, -0.57735],
  ];
  trajectories.forEach((t, i) => {
    const extra = sequences[i].extra!;
    const turns = turnAdvantages(t, extra.advantages, extra.oldLogprobs);
    assert.equal(turns.length, 2);
    for (const [turn, value] of turns.entries())
      near(value, expected[i][turn], 1e-4, `episode ${t.id} turn ${turn}`);
    assert.deepEqual(sequences[i].ids, flattenTrajectory(t).tokenIds);
  });
});

test("GiGPO: steps are compared only with steps from the identical state", () => {
  // Three rollouts of one task. a and b search and get the SAME observation ("doc zenda"), so
  // their answer turns start from the same state; c gets another observation. Outcomes 1, 0, 0;
  // no turn rewards.
  // A^E: totals [1, 0, 0] → [1.15470, −0.57735, −0.57735].
  // Turn 0 (all three start from the prompt): returns γ·outcome = [0.95, 0, 0] → normalised like A^E:
  //   [1.15470, −0.57735, −0.57735].
  // Turn 1: a and b share a state: returns [1, 0] → [0.70711, −0.70711]; c is alone → 0.
  const trajectories = [
    trajectory("a", 0, 1, [
      { tokens: 2, observation: "doc zenda", reward: 0 },
      { tokens: 2, reward: 0 },
    ]),
    trajectory("b", 0, 0, [
      { tokens: 3, observation: "doc zenda", reward: 0 },
      { tokens: 2, reward: 0 },
    ]),
    trajectory("c", 0, 0, [
      { tokens: 2, observation: "doc other", reward: 0 },
      { tokens: 2, reward: 0 },
    ]),
  ];
  const batch = toAdvantageBatch(trajectories, { anchors: "observation" });
  const result = computeAdvantages("gigpo", batch);
  const sequences = assembleSequences(trajectories, result.advantages, ASSEMBLE);
  const turns = trajectories.map((t, i) =>
    turnAdvantages(t, sequences[i].extra!.advantages, sequences[i].extra!.oldLogprobs),
  );
  near(turns[0][0], 1.1547 + 1.1547, 1e-4, "a turn 0");
  near(turns[1][0], -0.57735 - 0.57735, 1e-4, "b turn 0");
  near(turns[0][1], 1.1547 + Math.SQRT1_2, 1e-4, "a turn 1");
  near(turns[1][1], -0.57735 - Math.SQRT1_2, 1e-4, "b turn 1");
  near(turns[2][1], -0.57735, 1e-4, "c turn 1: alone in its state, episode advantage only");
  // Change c's observation to a's: now c's answer turn joins the state group and gets a step term.
  const merged = [
    trajectories[0],
    trajectories[1],
    trajectory("c", 0, 0, [
      { tokens: 2, observation: "doc zenda", reward: 0 },
      { tokens: 2, reward: 0 },
    ]),
  ];
  const mergedResult = computeAdvantages("gigpo", toAdvantageBatch(merged, { anchors: "observation" }));
  const cTurn1 = mergedResult.advantages[2][flattenTrajectory(merged[2]).lossMask.lastIndexOf(1)];
  near(cTurn1, -0.57735 - 0.57735, 1e-4, "c turn 1 in a three-member state group");
});

test("aggregation scales: token-mean, seq-mean-token-mean, seq-mean-token-sum-norm by hand", () => {
  const masks = [
    [0, 1, 1, 0],
    [0, 1, 1, 1, 1, 0],
  ];
  // token-mean: 6 policy tokens → 1/6 each.
  assert.deepEqual(
    aggregationScales(masks, "token-mean", 0).map((row) => Array.from(row).map((x) => Number(x.toFixed(6)))),
    [
      [0, 0.166667, 0.166667, 0],
      [0, 0.166667, 0.166667, 0.166667, 0.166667, 0],
    ],
  );
  // seq-mean-token-mean: 1/(2·2) = 0.25 in the first, 1/(2·4) = 0.125 in the second.
  assert.deepEqual(
    aggregationScales(masks, "seq-mean-token-mean", 0).map((row) => Array.from(row)),
    [
      [0, 0.25, 0.25, 0],
      [0, 0.125, 0.125, 0.125, 0.125, 0],
    ],
  );
  // seq-mean-token-sum-norm with L = 10: 1/(2·10) = 0.05 everywhere on the mask.
  const norm = aggregationScales(masks, "seq-mean-token-sum-norm", 10);
  assert.deepEqual(
    norm.map((row) => Array.from(row).map((x) => Number(x.toFixed(6)))),
    [
      [0, 0.05, 0.05, 0],
      [0, 0.05, 0.05, 0.05, 0.05, 0],
    ],
  );
  assert.throws(() => aggregationScales(masks, "seq-sum" as never, 1), /valid: token-mean/);
});

test("assemble: metric scale is 1/policy tokens, KL reference masked, missing log-probs rejected", () => {
  const t = trajectory("a", 0, 1, [
    { tokens: 3, observation: "doc one", reward: 0 },
    { tokens: 2, reward: 0 },
  ]);
  const length = flattenTrajectory(t).tokenIds.length;
  const [sequence] = assembleSequences([t], [new Float32Array(length).fill(1)], {
    ...ASSEMBLE,
    refLogprobs: [new Float32Array(length).fill(-2)],
  });
  const mask = sequence.mask!;
  assert.deepEqual(
    sequence.extra!.metricScale,
    mask.map((m) => m / 5),
  );
  assert.deepEqual(
    sequence.extra!.refLogprobs,
    mask.map((m) => (m ? -2 : 0)),
  );
  assert.deepEqual(
    sequence.extra!.advantages,
    mask.map((m) => m),
  );
  const noLogprobs = { ...t, turns: t.turns.map((turn) => ({ ...turn, logprobs: null })) };
  assert.throws(
    () => assembleSequences([noLogprobs], [new Float32Array(length)], ASSEMBLE),
    /no sampling log-probs/,
  );
  assert.throws(() => assembleSequences([t], [new Float32Array(length - 1)], ASSEMBLE), /advantages/);
  // A policy token past the context is an error; masked tokens past it are cut.
  assert.throws(
    () => assembleSequences([t], [new Float32Array(length)], { ...ASSEMBLE, maxLen: 8 }),
    /past the context/,
  );
  const open = trajectory("b", 0, 0, [
    { tokens: 2, observation: "doc one two", reward: 0 },
    { tokens: 2, observation: "x y z", reward: 0 },
  ]);
  const openLength = flattenTrajectory(open).tokenIds.length;
  const cut = assembleSequences([open], [new Float32Array(openLength)], {
    ...ASSEMBLE,
    maxLen: openLength - 2,
  });
  assert.equal(cut[0].ids.length, openLength - 2);
});

test("dynamic sampling keeps groups with signal for the estimator that runs", () => {
  const flat = (id: string, group: number, outcome: number, reward: number) =>
    trajectory(id, group, outcome, [
      { tokens: 2, observation: "doc", reward },
      { tokens: 1, reward: 0 },
    ]);
  const batch = toAdvantageBatch(
    [
      // group 0: outcomes differ → signal for everyone.
      flat("a", 0, 1, 0),
      flat("b", 0, 0, 0),
      // group 1: outcomes tie, turn rewards differ → signal for mt-grpo only.
      flat("c", 1, 0, 0.5),
      flat("d", 1, 0, 0),
      // group 2: everything ties at 0.2 (a float mean that is not exactly 0.2) → no signal.
      flat("e", 2, 0.2, 0),
      flat("f", 2, 0.2, 0),
      flat("g", 2, 0.2, 0),
    ],
    { anchors: "observation" },
  );
  assert.deepEqual(
    [...groupsWithSignal("grpo", batch)],
    [
      [0, true],
      [1, false],
      [2, false],
    ],
  );
  assert.deepEqual(
    [...groupsWithSignal("mt-grpo", batch)],
    [
      [0, true],
      [1, true],
      [2, false],
    ],
  );
  assert.deepEqual(
    [...groupsWithSignal("reinforce-pp", batch)].map(([, kept]) => kept),
    [true, false, false],
  );
});
