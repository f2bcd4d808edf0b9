/**
 * Group statistics shared by the estimators, and the dynamic-sampling helper.
 *
 * Conventions (pinned by tests): the std is the SAMPLE std (Bessel's n - 1, as torch.std in verl
 * and TRL); null rewards are left out of means and stds; a group with fewer than two scored
 * episodes carries no relative signal and gets advantage 0 (verl instead keeps a singleton's raw
 * reward as its advantage; TRL requires groups of at least two). A group whose scored rewards are
 * all equal gets exactly 0 too, decided by comparing the values rather than by the arithmetic:
 * `r - mean` of {0.1, 0.1, 0.1} is a rounding residue (~1e-17), and dividing it by a std of the
 * same size (plus ε) gave −0.8165 at ε = 0 and ~1e-11 at the default ε instead of 0.
 */
import type { AdvantageBatch, AdvantageEpisode } from "./types.ts";

/** Indices of the episodes of each group, in first-seen order. */
export function groupIndices(episodes: readonly AdvantageEpisode[]): Map<string | number, number[]> {
  const groups = new Map<string | number, number[]>();
  episodes.forEach((episode, i) => {
    const members = groups.get(episode.group);
    if (members) members.push(i);
    else groups.set(episode.group, [i]);
  });
  return groups;
}

export interface Moments {
  count: number;
  mean: number;
  /** Sample std (n - 1); 0 when count < 2. */
  std: number;
}

/** Count, mean and sample std of the non-null values. */
export function moments(values: readonly (number | null)[]): Moments {
  let count = 0;
  let sum = 0;
  for (const value of values) {
    if (value === null) continue;
    count++;
    sum += value;
  }
  if (count === 0) return { count, mean: 0, std: 0 };
  const mean = sum / count;
  if (count < 2) return { count, mean, std: 0 };
  let squares = 0;
  for (const value of values) if (value !== null) squares += (value - mean) ** 2;
  return { count, mean, std: Math.sqrt(squares / (count - 1)) };
}

/** True when the non-null values are all the same number (none or one value counts as equal). */
export function allEqual(values: readonly (number | null)[]): boolean {
  let first: number | null = null;
  for (const value of values) {
    if (value === null) continue;
    if (first === null) first = value;
    else if (value !== first) return false;
  }
  return true;
}

/**
 * Group-relative scores: `(r - mean) / (std + epsilon)` (`std`) or `r - mean` (`none`) over the
 * non-null values; null stays null; a group with fewer than two non-null values, or whose values
 * are all equal, gives exactly 0.
 */
export function groupNormalize(
  values: readonly (number | null)[],
  normalization: "std" | "none",
  epsilon: number,
): (number | null)[] {
  const { count, mean, std } = moments(values);
  const flat = allEqual(values);
  return values.map((value) => {
    if (value === null) return null;
    if (count < 2 || flat) return 0;
    return normalization === "std" ? (value - mean) / (std + epsilon) : value - mean;
  });
}

/** True when the group's scored rewards are all equal (or fewer than two): no relative signal. */
export function isZeroVarianceGroup(rewards: readonly (number | null)[], tolerance = 0): boolean {
  const scored = rewards.filter((reward): reward is number => reward !== null);
  if (scored.length < 2) return true;
  return Math.max(...scored) - Math.min(...scored) <= tolerance;
}

export interface GroupSignal {
  group: string | number;
  size: number;
  /** Episodes with a non-null outcome. */
  scored: number;
  /** True when the scored outcomes differ (what DAPO's dynamic sampling keeps). */
  outcomeSignal: boolean;
  /** True when some turn index holds differing non-null turn rewards (turn-level estimators can learn). */
  turnSignal: boolean;
}

/** Which groups carry a learning signal (for dynamic sampling and the zero-variance metric). */
export function groupSignals(batch: AdvantageBatch, tolerance = 0): GroupSignal[] {
  return [...groupIndices(batch.episodes)].map(([group, members]) => {
    const episodes = members.map((i) => batch.episodes[i]);
    const scoredEpisodes = episodes.filter((episode) => episode.outcomeReward !== null);
    const turns = Math.max(0, ...scoredEpisodes.map((episode) => episode.turnRewards.length));
    let turnSignal = false;
    for (let t = 0; t < turns && !turnSignal; t++) {
      const column = scoredEpisodes.map((episode) => episode.turnRewards[t] ?? null);
      turnSignal = !isZeroVarianceGroup(column, tolerance);
    }
    return {
      group,
      size: members.length,
      scored: scoredEpisodes.length,
      outcomeSignal: !isZeroVarianceGroup(
        episodes.map((episode) => episode.outcomeReward),
        tolerance,
      ),
      turnSignal,
    };
  });
}

/** An episode-wide scalar written on the episode's policy tokens. */
export function broadcast(episode: AdvantageEpisode, value: number): Float32Array {
  const out = new Float32Array(episode.lossMask.length);
  if (value === 0) return out;
  for (let i = 0; i < out.length; i++) if (episode.lossMask[i]) out[i] = value;
  return out;
}

/** A per-turn value written on each turn's policy tokens. */
export function broadcastTurns(episode: AdvantageEpisode, perTurn: (turn: number) => number): Float32Array {
  const out = new Float32Array(episode.lossMask.length);
  for (let i = 0; i < out.length; i++) {
    if (!episode.lossMask[i]) continue;
    const turn = episode.turnIndex[i];
    if (turn < 0 || turn >= episode.turnRewards.length) {
      throw new Error(
        `advantages: a policy token has turn index ${turn}, outside 0..${episode.turnRewards.length - 1}`,
      );
    }
    out[i] = perTurn(turn);
  }
  return out;
}

/** Checks the token arrays of every episode line up. */
export function checkBatch(batch: AdvantageBatch): void {
  batch.episodes.forEach((episode, i) => {
    if (episode.turnIndex.length !== episode.lossMask.length) {
      throw new Error(
        `advantages: episode ${i} has ${episode.turnIndex.length} turn indices but ${episode.lossMask.length} mask entries`,
      );
    }
    if (episode.values && episode.values.length !== episode.lossMask.length) {
      throw new Error(
        `advantages: episode ${i} has ${episode.values.length} values for ${episode.lossMask.length} tokens`,
      );
    }
  });
}
