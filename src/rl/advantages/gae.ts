/**
 * GAE for multi-turn PPO (MT-PPO in arXiv:2505.11821; Schulman et al. 2016; verl's
 * `compute_gae_advantage_return` with its multi-turn masking). The time steps are the episode's
 * POLICY tokens only (loss mask 1), in order: observation and prompt tokens are skipped, so the
 * value after a turn's last token is the value of the next turn's first token, across the tool's
 * output (treating a masked observation as an episode boundary would cut the reward off the
 * tokens before it). Rewards: each turn's reward on that turn's last policy token (null → 0; no
 * turn rewards at all is fine: outcome only), the outcome added on the episode's last policy token. Then, backwards over policy tokens p:
 *
 *   δ_p = r_p + γ · V_{p+1} - V_p      (V after the last token = 0)
 *   A_p = δ_p + γλ · A_{p+1}
 *   returns_p = A_p + V_p              (the critic's targets, before any whitening)
 *
 * `whiten` (default true, as verl) whitens the advantages over the batch's policy tokens
 * (whiten.ts). Defaults γ = λ = 1 (verl's). A null outcome gives advantage 0 and returns equal to
 * the values (no value-loss gradient), and the episode stays out of the whitening statistics.
 */
import { checkBatch } from "./groups.ts";
import { ADVANTAGE_DEFAULTS, checkOptions } from "./options.ts";
import type { AdvantageEpisode, AdvantageEstimator } from "./types.ts";
import { whitenInPlace } from "./whiten.ts";

/** Per-token rewards on the policy tokens: turn rewards on each turn's last token, the outcome on the last. */
export function tokenRewards(episode: AdvantageEpisode, outcome: number): Float64Array {
  const rewards = new Float64Array(episode.lossMask.length);
  let last = -1;
  for (let i = 0; i < rewards.length; i++) {
    if (!episode.lossMask[i]) continue;
    const turn = episode.turnIndex[i];
    let next = i + 1;
    while (next < rewards.length && !episode.lossMask[next]) next++;
    if (next >= rewards.length || episode.turnIndex[next] !== turn) {
      if (episode.turnRewards.length > 0 && !(turn >= 0 && turn < episode.turnRewards.length)) {
        throw new Error(
          `gae: a policy token has turn index ${turn}, outside 0..${episode.turnRewards.length - 1}`,
        );
      }
      rewards[i] += episode.turnRewards[turn] ?? 0;
    }
    last = i;
  }
  if (last >= 0) rewards[last] += outcome;
  return rewards;
}

export const gae: AdvantageEstimator = (batch, options = {}) => {
  checkOptions(options);
  checkBatch(batch);
  const gamma = options.gamma ?? ADVANTAGE_DEFAULTS.gaeGamma;
  const lambda = options.lambda ?? ADVANTAGE_DEFAULTS.lambda;
  const advantages: Float32Array[] = [];
  const returns: Float32Array[] = [];
  batch.episodes.forEach((episode, e) => {
    const values = episode.values;
    if (!values) throw new Error(`gae: episode ${e} has no values (a critic value per token is required)`);
    const length = episode.lossMask.length;
    const advantage = new Float32Array(length);
    const ret = new Float32Array(length);
    if (episode.outcomeReward === null) {
      for (let i = 0; i < length; i++) if (episode.lossMask[i]) ret[i] = values[i];
    } else {
      const rewards = tokenRewards(episode, episode.outcomeReward);
      let nextValue = 0;
      let running = 0;
      for (let i = length - 1; i >= 0; i--) {
        if (!episode.lossMask[i]) continue;
        const delta = rewards[i] + gamma * nextValue - values[i];
        running = delta + gamma * lambda * running;
        advantage[i] = running;
        ret[i] = running + values[i];
        nextValue = values[i];
      }
    }
    advantages.push(advantage);
    returns.push(ret);
  });
  if (options.whiten ?? ADVANTAGE_DEFAULTS.whiten) {
    whitenInPlace(
      batch.episodes,
      advantages,
      batch.episodes.map((episode) => episode.outcomeReward !== null),
    );
  }
  return { advantages, returns };
};
