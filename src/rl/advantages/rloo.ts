/**
 * RLOO (Ahmadian et al., arXiv:2402.14740; as listed in arXiv:2504.13837): each episode's
 * baseline is the mean reward of the OTHER episodes of its group,
 *
 *   A_i = r_i - mean_{j≠i} r_j = n/(n-1) · (r_i - mean_g r)
 *
 * over the n scored episodes of the group (null outcomes excluded, advantage 0). A group with
 * fewer than two scored episodes has no "other" episodes: advantage 0; so does a group whose
 * scored rewards are all equal (exactly 0, not a rounding residue).
 */
import { allEqual, broadcast, checkBatch, groupIndices, moments } from "./groups.ts";
import { checkOptions } from "./options.ts";
import type { AdvantageEstimator } from "./types.ts";

export const rloo: AdvantageEstimator = (batch, options = {}) => {
  checkOptions(options);
  checkBatch(batch);
  const scores = batch.episodes.map(() => 0);
  for (const members of groupIndices(batch.episodes).values()) {
    const rewards = members.map((i) => batch.episodes[i].outcomeReward);
    const { count, mean } = moments(rewards);
    if (count < 2 || allEqual(rewards)) continue; // exactly 0, not a rounding residue
    members.forEach((i, j) => {
      const reward = rewards[j];
      if (reward !== null) scores[i] = (count / (count - 1)) * (reward - mean);
    });
  }
  return { advantages: batch.episodes.map((episode, i) => broadcast(episode, scores[i])) };
};
