/**
 * REINFORCE++ with a group baseline (Hu et al., arXiv:2501.03262; verl's
 * `compute_reinforce_plus_plus_baseline_outcome_advantage`): subtract the group mean from each
 * outcome, write it on every policy token, then whiten over ALL policy tokens of the batch
 * (`whiten.ts`: token-weighted mean, unbiased variance, `1/sqrt(var + 1e-8)`).
 *
 * Consequences worth knowing: after whitening, a zero-variance group inside a mixed batch gets the
 * small nonzero advantage `-mean/std` of the batch (as in verl); a batch whose groups are all
 * zero-variance gets 0 everywhere. A group with fewer than two scored episodes is centred to 0
 * (verl uses baseline 0 there). Null outcomes: excluded from the group means and from the
 * whitening statistics, advantage 0. `whiten: false` returns the centred values.
 */
import { allEqual, broadcast, checkBatch, groupIndices, moments } from "./groups.ts";
import { ADVANTAGE_DEFAULTS, checkOptions } from "./options.ts";
import type { AdvantageEstimator } from "./types.ts";
import { whitenInPlace } from "./whiten.ts";

export const reinforcePlusPlus: AdvantageEstimator = (batch, options = {}) => {
  checkOptions(options);
  checkBatch(batch);
  const centred = batch.episodes.map(() => 0);
  for (const members of groupIndices(batch.episodes).values()) {
    const rewards = members.map((i) => batch.episodes[i].outcomeReward);
    const { count, mean } = moments(rewards);
    if (count < 2 || allEqual(rewards)) continue; // exactly 0, not a rounding residue
    members.forEach((i, j) => {
      const reward = rewards[j];
      if (reward !== null) centred[i] = reward - mean;
    });
  }
  const advantages = batch.episodes.map((episode, i) => broadcast(episode, centred[i]));
  if (options.whiten ?? ADVANTAGE_DEFAULTS.whiten) {
    whitenInPlace(
      batch.episodes,
      advantages,
      batch.episodes.map((episode) => episode.outcomeReward !== null),
    );
  }
  return { advantages };
};
