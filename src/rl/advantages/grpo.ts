/**
 * GRPO and Dr. GRPO: group-relative outcome advantages, the same on every policy token.
 *
 *   GRPO (DeepSeekMath, arXiv:2402.03300):  A_i = (r_i - mean_g r) / (std_g r + ε)
 *   Dr. GRPO (arXiv:2503.20783):            A_i =  r_i - mean_g r
 *
 * verl's conventions: SAMPLE std (torch.std, n - 1) and ε = 1e-6 added to the std, outside the
 * square root. Ours differs from verl in one place: a group with fewer than two scored episodes
 * gets 0 (verl keeps a singleton's raw reward). A group whose scored rewards are all equal gets
 * exactly 0, checked on the values (groups.ts): computing (r - mean)/(std + ε) there divides
 * rounding residue by rounding residue ({0.1, 0.1, 0.1} gave −0.8165 at ε = 0) and 0/0 at ε = 0
 * ({1, 1} gave NaN). Null outcomes: excluded from the group's mean and std,
 * advantage 0.
 */
import { broadcast, checkBatch, groupIndices, groupNormalize } from "./groups.ts";
import { ADVANTAGE_DEFAULTS, checkOptions } from "./options.ts";
import type { AdvantageBatch, AdvantageEstimator, AdvantageOptions } from "./types.ts";

/** The episode-level group-relative outcome advantage of each episode (null for unscorable ones). */
export function outcomeGroupAdvantages(
  batch: AdvantageBatch,
  normalization: "std" | "none",
  epsilon: number,
): (number | null)[] {
  const out: (number | null)[] = batch.episodes.map(() => null);
  for (const members of groupIndices(batch.episodes).values()) {
    const scores = groupNormalize(
      members.map((i) => batch.episodes[i].outcomeReward),
      normalization,
      epsilon,
    );
    members.forEach((i, j) => {
      out[i] = scores[j];
    });
  }
  return out;
}

function groupRelative(batch: AdvantageBatch, options: AdvantageOptions, normalization: "std" | "none") {
  checkOptions(options);
  checkBatch(batch);
  const scores = outcomeGroupAdvantages(batch, normalization, options.epsilon ?? ADVANTAGE_DEFAULTS.epsilon);
  return { advantages: batch.episodes.map((episode, i) => broadcast(episode, scores[i] ?? 0)) };
}

export const grpo: AdvantageEstimator = (batch, options = {}) =>
  groupRelative(batch, options, options.normalization ?? ADVANTAGE_DEFAULTS.normalization);

export const drGrpo: AdvantageEstimator = (batch, options = {}) => groupRelative(batch, options, "none");
