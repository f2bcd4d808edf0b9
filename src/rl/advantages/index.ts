/**
 * Advantage estimators, looked up by name (verl `core_algos.py` style): one input type
 * (`AdvantageBatch`), one output type (`AdvantageResult`), a closed map from name to function.
 * See each file for its formula, conventions and paper.
 */
import { gae } from "./gae.ts";
import { gigpo } from "./gigpo.ts";
import { drGrpo, grpo } from "./grpo.ts";
import { mtGrpo } from "./mt-grpo.ts";
import { reinforcePlusPlus } from "./reinforce-pp.ts";
import { rloo } from "./rloo.ts";
import type { AdvantageBatch, AdvantageEstimator, AdvantageOptions, AdvantageResult } from "./types.ts";

export const ADVANTAGE_ESTIMATORS = {
  grpo,
  "dr-grpo": drGrpo,
  rloo,
  "reinforce-pp": reinforcePlusPlus,
  "mt-grpo": mtGrpo,
  gigpo,
  gae,
} as const satisfies Record<string, AdvantageEstimator>;

export type AdvantageEstimatorName = keyof typeof ADVANTAGE_ESTIMATORS;
export const ADVANTAGE_ESTIMATOR_NAMES = Object.keys(ADVANTAGE_ESTIMATORS) as AdvantageEstimatorName[];

export function isAdvantageEstimatorName(name: string): name is AdvantageEstimatorName {
  return Object.hasOwn(ADVANTAGE_ESTIMATORS, name);
}

/** The estimator of that name; an unknown name throws, listing the valid ones. */
export function advantageEstimator(name: string): AdvantageEstimator {
  if (!isAdvantageEstimatorName(name)) {
    const valid = ADVANTAGE_ESTIMATOR_NAMES.map((known) => `"${known}"`).join(", ");
    throw new Error(`unknown advantage estimator "${name}"; valid: ${valid}`);
  }
  return ADVANTAGE_ESTIMATORS[name];
}

export function computeAdvantages(
  name: string,
  batch: AdvantageBatch,
  options?: AdvantageOptions,
): AdvantageResult {
  return advantageEstimator(name)(batch, options);
}

export {
  type AnchorMode,
  anchorKeys,
  type EpisodeOptions,
  toAdvantageBatch,
  toAdvantageEpisode,
} from "./from-trajectory.ts";
export { gae, tokenRewards } from "./gae.ts";
export { discountedStepReturns, gigpo, stepLevelAdvantages } from "./gigpo.ts";
export {
  broadcast,
  type GroupSignal,
  groupIndices,
  groupSignals,
  isZeroVarianceGroup,
  type Moments,
  moments,
} from "./groups.ts";
export { drGrpo, grpo, outcomeGroupAdvantages } from "./grpo.ts";
export { mtGrpo, turnLevelAdvantages } from "./mt-grpo.ts";
export { ADVANTAGE_DEFAULTS } from "./options.ts";
export { reinforcePlusPlus } from "./reinforce-pp.ts";
export { rloo } from "./rloo.ts";
export { type AdvantageStats, advantageMetrics, advantageStats } from "./stats.ts";
export type {
  AdvantageBatch,
  AdvantageEpisode,
  AdvantageEstimator,
  AdvantageOptions,
  AdvantageResult,
} from "./types.ts";
