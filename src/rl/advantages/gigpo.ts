/**
 * GiGPO, group-in-group policy optimisation (Feng et al., arXiv:2505.10978; verl-agent
 * `core_gigpo.py`): every policy token of turn t of episode i gets
 *
 *   A_{i,t} = A^E_i + ω · A^S_{i,t}
 *
 * A^E (episode level): the group-relative advantage of the episode's total reward
 *   R_i = outcome + Σ_t turnRewards[t] (the outcome alone when there are no turn rewards),
 *   `(R - mean)/(std + ε)` (`std`) or `R - mean` (`none`) over the group, as in grpo.ts.
 * A^S (step level): steps are grouped ACROSS the group's rollouts by identical anchor state key
 *   (`anchorKeys[t]`: the state turn t starts from; the same state reached by different
 *   rollouts, or twice by one). Each step's discounted return
 *     R_{i,t} = Σ_{k>=t} γ^{k-t} r_{i,k},  r_{i,k} = turnRewards[k] (null → 0) + outcome on the last turn
 *   (γ = 0.95, the paper's) is normalised within its step group the same way. A step group of one
 *   has nothing to compare with: A^S = 0 (verl-agent's `step_norm_reward` gives 0 there too: its
 *   mean is the step's own return).
 *
 * The per-turn-index bias (verl RFC #7244, see mt-grpo.ts) does not arise here: a step's baseline
 * is the mean return of the steps that start from the same STATE, which the step's own action
 * cannot influence, and each return runs to the episode's end, so stopping early is paid for in
 * the return (less reward collected), not by dropping out of a baseline. The baseline is a
 * per-state estimate V(s) from the group, as in the paper. Caveat: with `observation` anchors
 * (from-trajectory.ts) two different contexts that end in the same observation count as one state.
 *
 * Conventions as in grpo.ts: sample std, ε added to the std, a group with fewer than two scored
 * episodes (or whose values are all equal) gets exactly 0, null outcomes give the episode 0 and
 * leave it out of every group.
 *
 * Where it differs from verl-agent (`core_gigpo.py`):
 * - Episode-level weighting: here each episode counts once in its group's mean and std (the
 *   paper's Eq. 3). verl-agent's default (`compute_mean_std_cross_steps=True`) takes them over
 *   its batch rows, one per step, so an episode weighs as many times as it has steps and long
 *   episodes pull the baseline towards themselves.
 * - Normalisation: verl-agent's default mode is `mean_norm` (normalisation "none" here); ours
 *   defaults to `std` like the paper's main setting; both are one option away.
 */
import { broadcastTurns, checkBatch, groupIndices, groupNormalize } from "./groups.ts";
import { ADVANTAGE_DEFAULTS, checkOptions } from "./options.ts";
import type { AdvantageBatch, AdvantageEstimator, AdvantageOptions } from "./types.ts";

/** Per-turn discounted returns of one episode: turn rewards (null → 0) plus the outcome on the last turn. */
export function discountedStepReturns(
  turnRewards: readonly (number | null)[],
  outcome: number,
  gamma: number,
): number[] {
  const returns = new Array<number>(turnRewards.length).fill(0);
  let running = 0;
  for (let t = turnRewards.length - 1; t >= 0; t--) {
    const reward = (turnRewards[t] ?? 0) + (t === turnRewards.length - 1 ? outcome : 0);
    running = reward + gamma * running;
    returns[t] = running;
  }
  return returns;
}

/** A^S_{i,t} for every episode and turn (empty for unscorable episodes). */
export function stepLevelAdvantages(batch: AdvantageBatch, options: AdvantageOptions = {}): number[][] {
  const gamma = options.gamma ?? ADVANTAGE_DEFAULTS.stepGamma;
  const normalization = options.normalization ?? ADVANTAGE_DEFAULTS.normalization;
  const epsilon = options.epsilon ?? ADVANTAGE_DEFAULTS.epsilon;
  const out: number[][] = batch.episodes.map(() => []);
  for (const members of groupIndices(batch.episodes).values()) {
    const stepGroups = new Map<string, { episode: number; turn: number; value: number }[]>();
    for (const i of members) {
      const episode = batch.episodes[i];
      if (episode.outcomeReward === null) continue;
      const keys = episode.anchorKeys;
      if (!keys || keys.length !== episode.turnRewards.length) {
        throw new Error(
          `gigpo: episode ${i} needs one anchor state key per turn (${episode.turnRewards.length}), got ${keys?.length ?? "none"}`,
        );
      }
      const returns = discountedStepReturns(episode.turnRewards, episode.outcomeReward, gamma);
      out[i] = returns.map(() => 0);
      returns.forEach((value, turn) => {
        const steps = stepGroups.get(keys[turn]);
        const step = { episode: i, turn, value };
        if (steps) steps.push(step);
        else stepGroups.set(keys[turn], [step]);
      });
    }
    for (const steps of stepGroups.values()) {
      const scores = groupNormalize(
        steps.map((step) => step.value),
        normalization,
        epsilon,
      );
      steps.forEach((step, j) => {
        out[step.episode][step.turn] = scores[j] ?? 0;
      });
    }
  }
  return out;
}

export const gigpo: AdvantageEstimator = (batch, options = {}) => {
  checkOptions(options);
  checkBatch(batch);
  const normalization = options.normalization ?? ADVANTAGE_DEFAULTS.normalization;
  const epsilon = options.epsilon ?? ADVANTAGE_DEFAULTS.epsilon;
  const totals = batch.episodes.map((episode) =>
    episode.outcomeReward === null
      ? null
      : episode.outcomeReward + episode.turnRewards.reduce<number>((sum, reward) => sum + (reward ?? 0), 0),
  );
  const episodeAdvantages: (number | null)[] = batch.episodes.map(() => null);
  for (const members of groupIndices(batch.episodes).values()) {
    const scores = groupNormalize(
      members.map((i) => totals[i]),
      normalization,
      epsilon,
    );
    members.forEach((i, j) => {
      episodeAdvantages[i] = scores[j];
    });
  }
  const step = stepLevelAdvantages(batch, options);
  const weight = options.stepWeight ?? ADVANTAGE_DEFAULTS.stepWeight;
  return {
    advantages: batch.episodes.map((episode, i) => {
      const base = episodeAdvantages[i];
      if (base === null) return new Float32Array(episode.lossMask.length);
      return broadcastTurns(episode, (t) => base + weight * step[i][t]);
    }),
  };
};
