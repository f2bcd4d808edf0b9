/**
 * Dynamic sampling (DAPO, arXiv:2503.14476): a group whose rollouts all earned the same reward has
 * zero advantage everywhere, so it adds no gradient but dilutes the token mean; drop it and sample
 * more groups instead (up to a cap on extra rollouts).
 *
 * "Carries signal" is decided by the estimator itself: a group is kept iff the estimator, run on
 * that group alone, gives some policy token a nonzero advantage. For outcome-only estimators (grpo,
 * dr-grpo, rloo, reinforce-pp) that is exactly DAPO's rule, outcomes not all equal; for turn-level
 * ones it also keeps a group whose outcomes tie but whose turn rewards (mt-grpo) or per-state
 * step returns (gigpo) differ, which is what those estimators learn from. Groups are judged one at
 * a time so a batch-level normalisation (reinforce-pp's whitening) cannot leak signal between them.
 *
 * `gae` needs a critic's values, which are computed only for the kept groups, so it is judged by
 * gigpo's rule instead: the group's returns differ (its episode totals or its per-state step
 * returns). A critic could learn something from any group, but then dynamic sampling would keep
 * everything for gae and nothing comparable for the others; with this rule every estimator keeps
 * the groups whose rewards say something, and a comparison spends the same rollouts on each.
 */
import {
  type AdvantageBatch,
  type AdvantageOptions,
  computeAdvantages,
  groupIndices,
} from "./advantages/index.ts";

/**
 * Advantages at or below this are rounding, not signal: the mean of three equal rewards 0.2 is
 * 0.20000000000000004, and (r − mean)/(std + ε) then gives about 4e-11 instead of 0.
 */
export const SIGNAL_TOLERANCE = 1e-6;

/** For each group id of the batch, whether it carries a learning signal under the estimator. */
export function groupsWithSignal(
  estimator: string,
  batch: AdvantageBatch,
  options: AdvantageOptions = {},
): Map<string | number, boolean> {
  const out = new Map<string | number, boolean>();
  const judge = estimator === "gae" ? "gigpo" : estimator;
  for (const [group, members] of groupIndices(batch.episodes)) {
    const episodes = members.map((i) => batch.episodes[i]);
    const { advantages } = computeAdvantages(judge, { episodes }, options);
    out.set(
      group,
      advantages.some((row, e) =>
        row.some((value, t) => episodes[e].lossMask[t] === 1 && !(Math.abs(value) <= SIGNAL_TOLERANCE)),
      ),
    );
  }
  return out;
}
