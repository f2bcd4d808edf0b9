/**
 * Step 3 of an RL step (train.ts): the update batch of the kept episodes. With `gae` the critic
 * scores them once for their values V_old first (the lab's GPT: score.ts; a Hugging Face
 * checkpoint: its engine's `sequenceValues`, rl/hf-training.ts), with the params they were sampled
 * with; the named estimator
 * (src/rl/advantages/) gives one advantage per flattened token (and GAE's returns); with a KL term
 * the reference model scores them for its log-probs. Scores cover the ids cut to the context and
 * are padded back to the flattened length (masked there).
 */
import type { GptConfig } from "../policy/embedded/config.ts";
import type { GptParams } from "../policy/embedded/model.ts";
import { scoreTokens } from "../policy/embedded/score.ts";
import { flattenTrajectory, type Trajectory } from "../types/trajectory.ts";
import { advantageMetrics, computeAdvantages, toAdvantageBatch } from "./advantages/index.ts";
import { trainingIds } from "./assemble.ts";
import type { RlConfig } from "./config.ts";
import { advantageOptions } from "./rollout-step.ts";
import type { RlUpdateBatch } from "./train.ts";

/**
 * Per-token scores of token sequences, aligned with the ids (0 at t = 0): the KL reference's
 * log-probs (log p(ids[t] | ids[<t]) at the run's temperature, the KL term's anchor) or the
 * critic's values (V of the state before each token, GAE's V_old).
 */
export type SequenceScorer = (sequences: number[][]) => Promise<ArrayLike<number>[]>;

/** The lab GPT `params`' value head as a critic scorer. */
export function gptCriticScorer(params: GptParams, config: GptConfig, temperature: number): SequenceScorer {
  return async (sequences) =>
    (await scoreTokens(params, config, sequences, { temperature, values: true })).values!;
}

/** The lab GPT `params` as a reference scorer. */
export function gptReferenceScorer(
  params: GptParams,
  config: GptConfig,
  temperature: number,
): SequenceScorer {
  return async (sequences) => (await scoreTokens(params, config, sequences, { temperature })).logprobs;
}

/**
 * The update batch of `trajectories` (the kept groups, flattened) and its metrics: `value/*` (gae),
 * then `advantage/*` (advantageMetrics over the kept groups; the zero-variance fraction is the
 * rollout's, over every sampled group, so it is left out here).
 */
export async function buildUpdateBatch(
  step: number,
  trajectories: Trajectory[],
  critic: SequenceScorer | null,
  reference: SequenceScorer | null,
  config: RlConfig,
  maxLen: number,
): Promise<{ update: RlUpdateBatch; metrics: Record<string, number> }> {
  const metrics: Record<string, number> = {};
  if (!critic && config.estimator === "gae") throw new Error("rl: gae needs a critic (a value head)");
  if (config.klCoef > 0 && !reference) throw new Error("rl: a KL term needs a reference scorer");
  // The ids both scorers read: each episode's, cut to the context.
  const ids = trajectories.map((trajectory) => trainingIds(trajectory, maxLen));
  // The critic's values of the kept episodes (GAE only), padded to the flattened length.
  const oldValues = config.estimator === "gae" ? padToFlattened(trajectories, await critic!(ids)) : undefined;
  const advantageBatch = toAdvantageBatch(trajectories, { anchors: config.anchors, values: oldValues });
  const result = computeAdvantages(config.estimator, advantageBatch, advantageOptions(config));
  if (oldValues && result.returns) {
    Object.assign(metrics, valueMetrics(trajectories, oldValues, result.returns));
  }
  const { "rollout/zero_variance_group_fraction": _kept, ...advantageStats } = advantageMetrics(
    advantageBatch,
    result,
  );
  Object.assign(metrics, advantageStats);
  const update: RlUpdateBatch = { step, trajectories, advantages: result.advantages };
  if (oldValues && result.returns) update.critic = { oldValues, returns: result.returns };
  if (reference) update.refLogprobs = padToFlattened(trajectories, await reference(ids));
  return { update, metrics };
}

/** Per trajectory, `rows[i]` in a row of its flattened length (0 past the context). */
function padToFlattened(
  trajectories: readonly Trajectory[],
  rows: readonly ArrayLike<number>[],
): Float32Array[] {
  return trajectories.map((trajectory, i) => {
    const row = new Float32Array(flattenTrajectory(trajectory).tokenIds.length);
    row.set(rows[i]);
    return row;
  });
}

/**
 * Critic metrics over the update's policy tokens: `value/explained_variance` = 1 − Var(R − V)/Var(R)
 * (1: the values predict the returns; 0: no better than their mean; negative: worse) and
 * `value/return_mean`. Unscorable episodes (returns = values) are left out.
 */
export function valueMetrics(
  trajectories: readonly Trajectory[],
  values: readonly ArrayLike<number>[],
  returns: readonly ArrayLike<number>[],
): Record<string, number> {
  const targets: number[] = [];
  const residuals: number[] = [];
  trajectories.forEach((trajectory, i) => {
    if (trajectory.outcomeReward === null) return;
    const mask = flattenTrajectory(trajectory).lossMask;
    for (let t = 0; t < mask.length; t++) {
      if (!mask[t]) continue;
      targets.push(returns[i][t]);
      residuals.push(returns[i][t] - values[i][t]);
    }
  });
  const variance = (xs: number[]) => {
    const m = mean(xs);
    return mean(xs.map((x) => (x - m) ** 2));
  };
  const returnVariance = variance(targets);
  return {
    "value/explained_variance": returnVariance > 0 ? 1 - variance(residuals) / returnVariance : 0,
    "value/return_mean": mean(targets),
  };
}

function mean(values: readonly number[]): number {
  return values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
}
