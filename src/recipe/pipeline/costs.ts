/**
 * Each stage's cost for the ETA: estimated seconds on one core of the 2-core reference machine, a
 * fixed part (process start, model loading, the stage's own evaluations) plus a part per unit of
 * work, fitted on that machine's default (10.8 min) and full (44.4 min) runs from empty folders.
 * Only the shares matter: the bar's rate is measured as it runs, so a faster machine gets the same
 * proportions and a correct ETA.
 */
export const STAGE_SECONDS = {
  /** per episode of an evaluation */
  evaluation: (episodes: number) => 3 + 0.051 * episodes,
  /** per rollout of the selection (measuring plus the fresh re-check) */
  select: (rollouts: number) => 1 + 0.095 * rollouts,
  /** per task of a dataset */
  data: (tasks: number) => 0.5 + 0.0005 * tasks,
  /** per episode of a model's own rollouts collected as data */
  modelData: (episodes: number) => (episodes > 0 ? 3 + 0.03 * episodes : 0),
  /** per token of SFT */
  sft: (tokens: number) => 11 + tokens / 3600,
  /** per training episode of RL, and per episode of its held-out tracking */
  rl: (episodes: number, evalEpisodes = 0) => 20 + 0.06 * episodes + 0.08 * evalEpisodes,
  /** RL under heavy tool noise: longer episodes (retries) */
  noisyRl: (episodes: number) => 10 + 0.166 * episodes,
  /** evaluations at several noise rates: one model load and pool per rate */
  noiseEval: (rates: number, episodes: number) => 5 * rates + 0.035 * episodes,
  /** the boundary stage: mostly fixed (two models loaded to score each other's solutions) */
  boundary: (evalEpisodes: number) => 13 + 0.001 * evalEpisodes,
  /** per orchestration episode */
  orchestra: (episodes: number) => 0.0193 * episodes,
  /**
   * per episode sampled for credit fidelity (no training): 576 episodes took 12.8 s, about 49 units
   * at the ratio of the single-seed default's 1,829 units to its 478 core-seconds
   */
  fidelity: (episodes: number) => 3 + 0.08 * episodes,
};
