/** Reward functions: outcome, format, DemyAgent, overlong shaping, turn-level, noise-aware. */

export { noiseAware } from "./noise.ts";
export { normalizeAnswerText } from "./normalize.ts";
export {
  type AnswerMatchOptions,
  containsAnswerReward,
  demyAgentReward,
  exactMatchReward,
  formatReward,
  isCorrect,
} from "./outcome.ts";
export { type OverlongOptions, overlongPenalty, overlongReward, policyTokenCount } from "./overlong.ts";
export {
  OUTCOME_REWARD_NAMES,
  OUTCOME_REWARDS,
  type OutcomeRewardName,
  type OutcomeTerm,
  REWARD_PRESETS,
  type RewardPresetName,
  type RewardScores,
  type RewardSpec,
  resolveRewardSpec,
  scoreTrajectory,
  TURN_REWARD_NAMES,
  TURN_REWARD_TOTAL,
  TURN_REWARDS,
  type TurnRewardName,
  type TurnTerm,
  withRewards,
} from "./spec.ts";
export {
  type CalcCorrectOptions,
  calcCorrectReward,
  type EvidenceOptions,
  evidenceReward,
  type ToolExecutedOptions,
  toolExecutedReward,
} from "./turn.ts";
export type { OutcomeRewardFn, TurnRewardFn } from "./types.ts";
