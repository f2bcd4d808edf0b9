/**
 * Batch whitening of token-level advantages, as verl's `masked_whiten`: mean and UNBIASED
 * variance over every policy token of the included episodes (so a long episode weighs more than a
 * short one), then `(x - mean) / sqrt(var + 1e-8)`. Tokens off the loss mask and excluded
 * episodes stay 0. With fewer than two tokens there is no variance: everything becomes 0.
 */
import { WHITEN_EPSILON } from "./options.ts";
import type { AdvantageEpisode } from "./types.ts";

export function whitenInPlace(
  episodes: readonly AdvantageEpisode[],
  advantages: Float32Array[],
  included: readonly boolean[],
): void {
  let count = 0;
  let sum = 0;
  episodes.forEach((episode, e) => {
    if (!included[e]) return;
    for (let i = 0; i < advantages[e].length; i++) {
      if (episode.lossMask[i]) {
        count++;
        sum += advantages[e][i];
      }
    }
  });
  const mean = count > 0 ? sum / count : 0;
  let squares = 0;
  episodes.forEach((episode, e) => {
    if (!included[e]) return;
    for (let i = 0; i < advantages[e].length; i++) {
      if (episode.lossMask[i]) squares += (advantages[e][i] - mean) ** 2;
    }
  });
  const scale = count >= 2 ? 1 / Math.sqrt(squares / (count - 1) + WHITEN_EPSILON) : 0;
  episodes.forEach((episode, e) => {
    const row = advantages[e];
    for (let i = 0; i < row.length; i++) {
      row[i] = included[e] && episode.lossMask[i] ? (row[i] - mean) * scale : 0;
    }
  });
}
