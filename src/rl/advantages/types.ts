/**
 * The one input and one output of every advantage estimator (verl `core_algos.py` style: each
 * estimator is a pure function over the same batch type, looked up by name; nothing at the call
 * site knows which one runs).
 *
 * Token-level arrays of an episode are aligned with `flattenTrajectory` (src/types/trajectory.ts):
 * the prompt, then per turn the policy's tokens (loss mask 1) and the observation (loss mask 0).
 * Advantages are written on loss-mask-1 tokens only; every other token gets 0.
 */

export interface AdvantageEpisode {
  /** Episodes with the same group id (rollouts of one task) are compared with each other. */
  group: string | number;
  /** Outcome reward; null = unscorable: excluded from every baseline, all its advantages are 0. */
  outcomeReward: number | null;
  /**
   * One reward per turn, in turn order (turn index t ↔ `turnRewards[t]`); 0 where the turn earned
   * nothing. null = neutral (a turn spoiled by injected tool noise): mt-grpo leaves it out of its
   * turn baseline; gigpo and gae count it as 0. Empty for outcome-only estimators is fine.
   */
  turnRewards: readonly (number | null)[];
  /** Turn index of each token (-1 for the prompt), from `flattenTrajectory`. */
  turnIndex: ArrayLike<number>;
  /** 1 on the tokens the policy wrote, 0 elsewhere, from `flattenTrajectory`. */
  lossMask: ArrayLike<number>;
  /** Critic value of each token (GAE only); read on loss-mask-1 tokens. */
  values?: ArrayLike<number>;
  /** Anchor state key of the state each turn starts from (GiGPO only), one per turn. */
  anchorKeys?: readonly string[];
}

export interface AdvantageBatch {
  episodes: readonly AdvantageEpisode[];
}

/** Options shared by the estimators; each reads the fields it needs. Defaults in `ADVANTAGE_DEFAULTS`. */
export interface AdvantageOptions {
  /** Added to the std before dividing (verl's 1e-6; TRL and MT-GRPO use 1e-4). */
  epsilon?: number;
  /** `std`: divide centred rewards by the group's sample std; `none`: only centre (Dr. GRPO). grpo, mt-grpo, gigpo. */
  normalization?: "std" | "none";
  /** MT-GRPO: weight λ of the turn-level term (paper: 1). */
  turnWeight?: number;
  /** MT-GRPO: discount of turn rewards in the turn-level reward-to-go (1: undiscounted; 0: the turn's own reward). */
  turnDiscount?: number;
  /** GiGPO: weight ω of the step-level term (paper: 1). */
  stepWeight?: number;
  /** Discount γ: GiGPO step returns (default 0.95, the paper's) and GAE (default 1, verl's). */
  gamma?: number;
  /** GAE λ (default 1, verl's). */
  lambda?: number;
  /** GAE and REINFORCE++: whiten advantages over the batch's policy tokens (default true). */
  whiten?: boolean;
}

export interface AdvantageResult {
  /** Per episode, one advantage per token (0 off the loss mask). */
  advantages: Float32Array[];
  /** Per episode, per-token returns (value targets), for estimators that define them (GAE). */
  returns?: Float32Array[];
}

export type AdvantageEstimator = (batch: AdvantageBatch, options?: AdvantageOptions) => AdvantageResult;
