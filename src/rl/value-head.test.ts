/**
 * The critic of MT-PPO (`gae`): the value loss trains the value head toward GAE's returns, and by
 * default only the head (the policy's trunk is untouched when no policy gradient flows).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { keyFromSeed } from "../engine/init.ts";
import { adamw } from "../engine/optim.ts";
import { createTrainer } from "../engine/train.ts";
import { disposeTree, treeToHost } from "../engine/tree.ts";
import { makeTokenBatches } from "../policy/embedded/batch.ts";
import type { GptConfig } from "../policy/embedded/config.ts";
import { type TokenBatch, tokenLoss } from "../policy/embedded/losses.ts";
import { type GptParams, initGpt, initValueHead, withoutValueHead } from "../policy/embedded/model.ts";
import { scoreTokens } from "../policy/embedded/score.ts";
import { sketchTrajectory } from "../reward/testing.ts";
import { flattenTrajectory } from "../types/trajectory.ts";
import { ppoLoss } from "./loss.ts";
import { valueMetrics } from "./update-batch.ts";

const config: GptConfig = { vocabSize: 16, dModel: 16, nLayers: 1, nHeads: 2, dFF: 32, maxLen: 16 };
const ids = [
  [1, 2, 3, 4, 5, 6, 7, 8],
  [1, 2, 3, 9, 10, 11, 12, 13],
];
const mask = [0, 0, 0, 1, 1, 1, 1, 1];
// Returns: 1 on every policy token of the first sequence (a success), 0 on the second.
const returns = [mask.map((m) => m * 1), mask.map(() => 0)];

/** Mean squared error of the values on the policy tokens. */
function valueError(values: Float32Array[]): number {
  let sum = 0;
  let count = 0;
  values.forEach((row, i) => {
    mask.forEach((m, t) => {
      if (!m) return;
      sum += (row[t] - returns[i][t]) ** 2;
      count++;
    });
  });
  return sum / count;
}

async function train(valueGradient: boolean, steps: number) {
  const params: GptParams = { ...initGpt(config, keyFromSeed(4)), value: initValueHead(config) };
  const trunkBefore = await treeToHost(withoutValueHead(params));
  const trainer = createTrainer<GptParams, TokenBatch>({
    loss: tokenLoss(config, ppoLoss({ valueCoef: 1, valueClip: 10 }), {
      entropy: true,
      values: true,
      valueGradient,
    }),
    optimizer: adamw({ weightDecay: 0 }),
  });
  let state = trainer.init(params);
  const first = await scoreTokens(state.params, config, ids, { values: true });
  for (let step = 0; step < steps; step++) {
    // V_old is the current value each step (as the trainer scores before each update); A = 0.
    const scored = await scoreTokens(state.params, config, ids, { values: true });
    const sequences = ids.map((row, i) => ({
      ids: row,
      mask,
      extra: {
        oldLogprobs: Array.from(scored.logprobs[i], (lp, t) => (mask[t] ? lp : 0)),
        advantages: mask.map(() => 0),
        lossScale: mask.map((m) => m / 10),
        metricScale: mask.map((m) => m / 10),
        oldValues: Array.from(scored.values![i], (v, t) => (mask[t] ? v : 0)),
        returns: returns[i],
      },
    }));
    [state] = await trainer.step(
      state,
      makeTokenBatches(sequences, { maxLen: config.maxLen, normalization: "sum" }),
      0.02,
    );
  }
  const last = await scoreTokens(state.params, config, ids, { values: true });
  const trunkAfter = await treeToHost(withoutValueHead(state.params));
  const trunkChanged = Object.keys(trunkBefore).filter((path) =>
    trunkBefore[path].data.some((value, i) => value !== trunkAfter[path].data[i]),
  ).length;
  disposeTree(state.params);
  disposeTree(state.opt as never);
  trainer.dispose();
  return {
    before: valueError(first.values!),
    after: valueError(last.values!),
    trunkChanged,
    last: last.values!,
  };
}

test("the value loss trains the values toward the returns; by default only the head learns", async () => {
  const head = await train(false, 30);
  // Fresh head: every value 0, so the error is the mean squared return, 5 ones and 5 zeros: 0.5.
  assert.ok(Math.abs(head.before - 0.5) < 1e-6, `initial error ${head.before}`);
  assert.ok(head.after < 0.25 * head.before, `value error ${head.before} → ${head.after}`);
  assert.equal(head.trunkChanged, 0, "no policy gradient (A = 0) and the value gradient stops at the head");
  // The first sequence's values sit near 1, the second's near 0.
  const meanOn = (row: Float32Array) => mask.reduce((sum, m, t) => sum + m * row[t], 0) / 5;
  assert.ok(
    meanOn(head.last[0]) > 0.7 && meanOn(head.last[1]) < 0.3,
    `${meanOn(head.last[0])}, ${meanOn(head.last[1])}`,
  );
  // With valueGradient the same loss reshapes the trunk too.
  const shared = await train(true, 3);
  assert.ok(shared.trunkChanged > 0, "valueGradient: the trunk learns from the value loss");
});

test("value metrics: explained variance over the policy tokens of scorable episodes", () => {
  const trajectory = sketchTrajectory([{ act: "search:x" }, { act: "answer:y" }], { correct: true });
  const scored = { ...trajectory, outcomeReward: 1 };
  const length = flattenTrajectory(scored).tokenIds.length;
  const policy = flattenTrajectory(scored).lossMask;
  // Returns 1 on the first policy token, 0 elsewhere; values predict them exactly → 1.
  const targets = Float32Array.from(policy, (m, t) => (m && t === policy.indexOf(1) ? 1 : 0));
  assert.equal(valueMetrics([scored], [targets], [targets])["value/explained_variance"], 1);
  // Constant values at the mean return → 0; an unscorable episode is left out.
  const mean =
    targets.reduce((sum, v, t) => sum + (policy[t] ? v : 0), 0) / policy.reduce((a, b) => a + b, 0);
  const flat = new Float32Array(length).fill(mean);
  const metrics = valueMetrics(
    [scored, { ...scored, outcomeReward: null }],
    [flat, flat],
    [targets, new Float32Array(length)],
  );
  assert.ok(Math.abs(metrics["value/explained_variance"]) < 1e-6);
  assert.ok(Math.abs(metrics["value/return_mean"] - mean) < 1e-6);
});
