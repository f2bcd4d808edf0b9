/**
 * Summary statistics of a batch's advantages over its policy tokens, and the metrics logged from
 * them under stable keys (`advantage/…`, `rollout/…`).
 */
import { groupSignals } from "./groups.ts";
import type { AdvantageBatch, AdvantageResult } from "./types.ts";

export interface AdvantageStats {
  /** Policy tokens counted. */
  tokens: number;
  mean: number;
  /** Population std over the tokens. */
  std: number;
  min: number;
  max: number;
  absMean: number;
  /** Fraction of policy tokens whose advantage is exactly 0 (no learning signal). */
  zeroFraction: number;
}

export function advantageStats(batch: AdvantageBatch, result: AdvantageResult): AdvantageStats {
  let tokens = 0;
  let sum = 0;
  let squares = 0;
  let absSum = 0;
  let zeros = 0;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  batch.episodes.forEach((episode, e) => {
    const row = result.advantages[e];
    for (let i = 0; i < row.length; i++) {
      if (!episode.lossMask[i]) continue;
      const value = row[i];
      tokens++;
      sum += value;
      squares += value * value;
      absSum += Math.abs(value);
      if (value === 0) zeros++;
      min = Math.min(min, value);
      max = Math.max(max, value);
    }
  });
  if (tokens === 0) return { tokens, mean: 0, std: 0, min: 0, max: 0, absMean: 0, zeroFraction: 0 };
  const mean = sum / tokens;
  return {
    tokens,
    mean,
    std: Math.sqrt(Math.max(0, squares / tokens - mean * mean)),
    min,
    max,
    absMean: absSum / tokens,
    zeroFraction: zeros / tokens,
  };
}

/** Metrics of one batch: advantage statistics and the share of groups without signal. */
export function advantageMetrics(batch: AdvantageBatch, result: AdvantageResult): Record<string, number> {
  const stats = advantageStats(batch, result);
  const signals = groupSignals(batch);
  const flat = signals.filter((signal) => !signal.outcomeSignal).length;
  return {
    "advantage/mean": stats.mean,
    "advantage/std": stats.std,
    "advantage/min": stats.min,
    "advantage/max": stats.max,
    "advantage/abs_mean": stats.absMean,
    "advantage/zero_fraction": stats.zeroFraction,
    "rollout/zero_variance_group_fraction": signals.length > 0 ? flat / signals.length : 0,
  };
}
