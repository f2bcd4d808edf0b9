/**
 * MT-GRPO generalised to K turns (Zeng et al., arXiv:2505.11821): every policy token of turn t gets
 *
 *   A_{i,t} = A^O_i + λ · A^T_{i,t}
 *
 * A^O_i: the GRPO outcome advantage of episode i in its group (`normalization`, ε as in grpo.ts).
 * A^T_{i,t}: a turn-level advantage built so that its baseline does NOT depend on when episode i
 * stopped. For the scored episodes j of a group, K = the most turns any of them took, and
 *
 *   r̃_{j,s} = turnRewards_j[s] for s < T_j (the episode's own turns), 0 for s >= T_j (ended:
 *             collects nothing more; it stays in the comparison), null when neutral (tool noise)
 *   b_s     = mean over j of the non-null r̃_{j,s}            (turn-index baseline, whole group)
 *   d_{j,s} = r̃_{j,s} - b_s, or 0 when r̃_{j,s} is null      (a neutral turn neither gains nor loses)
 *   D_{j,t} = Σ_{s=t}^{K-1} γ_T^{s-t} d_{j,s}                 (turn reward-to-go minus baseline)
 *   A^T     = D / (σ + ε) (`std`), or D (`none`), with σ = max over t of the sample std over j
 *             of D_{j,t}: one scale per group (never per turn index), 0 only when D is all 0
 *
 * Without neutral turns D_{j,t} = G_{j,t} - mean_j G_{j,t}, G the zero-padded turn reward-to-go:
 * a reward-to-go advantage whose baseline depends only on the group and the turn index. With two
 * turns, turn rewards on the first and γ_T = 1, A^T_{i,0} is exactly the paper's
 * `norm(sum of turn rewards)` (σ is then the std of the total turn reward) and the answer turn
 * gets A^O only, as in the paper. σ is a max rather than the std of D_{·,0} alone because two
 * episodes can earn the same total in a different order (D_{·,0} all 0, later D_{·,t} not).
 *
 * Why not normalise per turn index over the episodes that reached it (verl RFC #7244, "a turn-level
 * baseline that stays unbiased under variable turn counts")? When the policy decides when to stop,
 * the episodes that stopped early drop out of the later turn indices, so each later-turn baseline
 * is computed over a self-selected subset, and summing per-index advantages over an episode's
 * own turns subtracts a number of baseline terms that the episode's own stopping decision chose:
 * an action-dependent baseline, hence a biased gradient (the RFC puts the bias at the accumulated
 * mean intermediate reward, a hidden length bonus or penalty). Per-index std scaling adds to it:
 * a late turn index reached by two episodes blows a tiny reward difference up to ±0.7. Here every
 * episode of the group sits in every turn index's baseline (an ended episode as 0) and every
 * D_{j,t} sums the same K - t terms, so the baseline is the same for every episode of the group
 * whatever it did; the only per-episode exclusions are neutral (noise) turns, which the
 * environment, not the policy, decides. A stopped episode is therefore charged the group's mean
 * later-turn reward that it forwent, and no more. mt-grpo.test.ts pins this exactly: for a toy
 * policy that decides when to stop, the expected Σ_t A^T_t ∇log π equals (1 - 1/n)·∇J (the usual
 * factor of a mean baseline that includes the episode itself), where per-turn-index
 * normalisation is off by a third.
 *
 * A group with fewer than two scored episodes gets 0; a null outcome gives the episode 0 and
 * removes it from both baselines. A turn index whose rewards are all equal gives d = 0 exactly,
 * and a group whose turn rewards are all equal (all 0, say) gets A^T = 0 exactly, at any ε.
 */
import { allEqual, broadcastTurns, checkBatch, groupIndices, moments } from "./groups.ts";
import { outcomeGroupAdvantages } from "./grpo.ts";
import { ADVANTAGE_DEFAULTS, checkOptions } from "./options.ts";
import type { AdvantageBatch, AdvantageEstimator, AdvantageOptions } from "./types.ts";

/** A^T_{i,t} for every episode (an empty array for unscorable episodes and tiny groups). */
export function turnLevelAdvantages(batch: AdvantageBatch, options: AdvantageOptions = {}): number[][] {
  const discount = options.turnDiscount ?? ADVANTAGE_DEFAULTS.turnDiscount;
  const normalization = options.normalization ?? ADVANTAGE_DEFAULTS.normalization;
  const epsilon = options.epsilon ?? ADVANTAGE_DEFAULTS.epsilon;
  const out: number[][] = batch.episodes.map(() => []);
  for (const members of groupIndices(batch.episodes).values()) {
    const scored = members.filter((i) => batch.episodes[i].outcomeReward !== null);
    if (scored.length < 2) continue;
    const turns = Math.max(...scored.map((i) => batch.episodes[i].turnRewards.length));
    // r̃_{j,s}: the episode's own reward, 0 once it has ended.
    const padded = scored.map((i) => {
      const rewards = batch.episodes[i].turnRewards;
      return Array.from({ length: turns }, (_, s) => (s < rewards.length ? rewards[s] : 0));
    });
    const columns = Array.from({ length: turns }, (_, s) => padded.map((row) => row[s]));
    const baseline = columns.map((column) => moments(column).mean);
    // A turn index whose rewards are all equal carries no signal: d = 0 exactly (r - mean would
    // leave a rounding residue that the std scaling below blows up).
    const flat = columns.map((column) => allEqual(column));
    const togo = padded.map((row) => {
      const d = new Array<number>(turns).fill(0);
      let running = 0;
      for (let s = turns - 1; s >= 0; s--) {
        const reward = row[s];
        running = (reward === null || flat[s] ? 0 : reward - baseline[s]) + discount * running;
        d[s] = running;
      }
      return d;
    });
    let spread = 0;
    for (let t = 0; t < turns; t++) spread = Math.max(spread, moments(togo.map((d) => d[t])).std);
    const scale = normalization === "std" ? spread + epsilon : 1;
    scored.forEach((i, j) => {
      // spread 0: D is all 0 (every turn index flat), so A^T is 0; at ε = 0 the division is 0/0.
      out[i] = spread === 0 ? togo[j].map(() => 0) : togo[j].map((value) => value / scale);
    });
  }
  return out;
}

export const mtGrpo: AdvantageEstimator = (batch, options = {}) => {
  checkOptions(options);
  checkBatch(batch);
  const outcome = outcomeGroupAdvantages(
    batch,
    options.normalization ?? ADVANTAGE_DEFAULTS.normalization,
    options.epsilon ?? ADVANTAGE_DEFAULTS.epsilon,
  );
  const turn = turnLevelAdvantages(batch, options);
  const weight = options.turnWeight ?? ADVANTAGE_DEFAULTS.turnWeight;
  return {
    advantages: batch.episodes.map((episode, i) => {
      if (outcome[i] === null) return new Float32Array(episode.lossMask.length);
      const base = outcome[i] as number;
      return broadcastTurns(episode, (t) => base + weight * (turn[i][t] ?? 0));
    }),
  };
};
