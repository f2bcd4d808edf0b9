/**
 * Trajectories + advantages → the token sequences of one PPO update (`makeTokenBatches` input).
 * Everything comes from `flattenTrajectory`: the ids exactly as sampled (never re-tokenised), the
 * loss mask (1 on the policy's tokens, 0 on prompt and tool/observation tokens) and the log-probs
 * recorded at sampling time, which are the PPO "old" log-probs. Off the mask every extra is 0, so
 * nothing there can reach the loss or its gradient (a NaN there would: NaN · 0 = NaN).
 */
import type { TokenSequence } from "../policy/embedded/batch.ts";
import { flattenTrajectory, type Trajectory } from "../types/trajectory.ts";
import { type AggregationMode, aggregationScales } from "./aggregation.ts";
import { PPO_EXTRAS } from "./loss.ts";

export interface AssembleOptions {
  aggregation: AggregationMode;
  /** L of `seq-mean-token-sum-norm`. */
  normLength: number;
  /** The model's context: longer sequences are cut there (only masked tokens may be cut). */
  maxLen: number;
  /** Reference log-probs per trajectory, aligned with `flattenTrajectory` (KL penalty). */
  refLogprobs?: readonly ArrayLike<number>[];
  /** The critic's values when the batch was scored and GAE's returns, per trajectory, aligned the same way (value loss). */
  critic?: { oldValues: readonly ArrayLike<number>[]; returns: readonly ArrayLike<number>[] };
}

/** The ids a trajectory's loss is computed on: its flattened tokens cut to the context. */
export function trainingIds(trajectory: Trajectory, maxLen: number): number[] {
  return flattenTrajectory(trajectory).tokenIds.slice(0, maxLen);
}

/**
 * One `TokenSequence` per trajectory with extras `oldLogprobs`, `advantages`, `lossScale`,
 * `metricScale` (and `refLogprobs`, `oldValues` and `returns` when given). Throws when a policy token has no recorded log-prob
 * or lies past the context, or when an advantage row does not line up with the trajectory.
 */
export function assembleSequences(
  trajectories: readonly Trajectory[],
  advantages: readonly ArrayLike<number>[],
  options: AssembleOptions,
): TokenSequence[] {
  if (advantages.length !== trajectories.length) {
    throw new Error(`assemble: ${advantages.length} advantage rows for ${trajectories.length} trajectories`);
  }
  const flats = trajectories.map((trajectory, i) => {
    for (const turn of trajectory.turns) {
      if (turn.tokenIds.length > 0 && (!turn.logprobs || turn.logprobs.length !== turn.tokenIds.length)) {
        throw new Error(
          `assemble: trajectory ${trajectory.id} turn ${turn.index} has no sampling log-probs for its tokens`,
        );
      }
    }
    const flat = flattenTrajectory(trajectory);
    if (advantages[i].length !== flat.tokenIds.length) {
      throw new Error(
        `assemble: trajectory ${trajectory.id} has ${flat.tokenIds.length} tokens but ${advantages[i].length} advantages`,
      );
    }
    for (const [name, rows] of Object.entries(options.critic ?? {})) {
      if (rows[i].length !== flat.tokenIds.length) {
        throw new Error(
          `assemble: trajectory ${trajectory.id} has ${flat.tokenIds.length} tokens but ${rows[i].length} ${name}`,
        );
      }
    }
    const length = Math.min(flat.tokenIds.length, options.maxLen);
    for (let t = length; t < flat.tokenIds.length; t++) {
      if (flat.lossMask[t]) {
        throw new Error(
          `assemble: trajectory ${trajectory.id} has a policy token past the context (${options.maxLen})`,
        );
      }
    }
    return { flat, length };
  });
  const masks = flats.map(({ flat, length }) => flat.lossMask.slice(0, length));
  const scales = aggregationScales(masks, options.aggregation, options.normLength);
  const policyTokens = masks.reduce((sum, mask) => sum + mask.reduce((a, b) => a + b, 0), 0);
  return flats.map(({ flat, length }, i) => {
    const mask = masks[i];
    const masked = (values: ArrayLike<number>) =>
      Array.from({ length }, (_, t) => (mask[t] ? Number(values[t]) : 0));
    const extra: Record<string, number[]> = {
      [PPO_EXTRAS.oldLogprobs]: masked(flat.logprobs),
      [PPO_EXTRAS.advantages]: masked(advantages[i]),
      [PPO_EXTRAS.lossScale]: Array.from(scales[i]),
      [PPO_EXTRAS.metricScale]: mask.map((m) => (m && policyTokens > 0 ? 1 / policyTokens : 0)),
    };
    if (options.refLogprobs) extra[PPO_EXTRAS.refLogprobs] = masked(options.refLogprobs[i]);
    if (options.critic) {
      extra[PPO_EXTRAS.oldValues] = masked(options.critic.oldValues[i]);
      extra[PPO_EXTRAS.returns] = masked(options.critic.returns[i]);
    }
    return { ids: flat.tokenIds.slice(0, length), mask, extra };
  });
}
