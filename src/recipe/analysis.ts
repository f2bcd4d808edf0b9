/**
 * The statistics behind the report's verdicts. Every comparison of two models is paired over the
 * same tasks and carries a 95% percentile-bootstrap interval over tasks (src/eval/bootstrap.ts);
 * a verdict calls a difference only when its interval excludes zero, and otherwise says the run
 * was too small to separate the two. Nothing here knows what result a paper expected.
 */
import { createRng } from "../core/random.ts";
import { bootstrapMeans, type Interval, quantileSorted } from "../eval/bootstrap.ts";
import { passAtK } from "../eval/passk.ts";
import type { TaskCount } from "../eval/task-counts.ts";
import { findTemplate } from "../world/index.ts";

export const VERDICT_STATUSES = ["reproduced", "not reproduced", "inconclusive", "not measured"] as const;
export type VerdictStatus = (typeof VERDICT_STATUSES)[number];

export interface Verdict {
  /**
   * Stable id of the claim (`rl-raises-pass1`): the same across runs, presets and seeds, whatever
   * the claim's wording (which names k or a template); `recipe compare` and the dashboard key on it.
   */
  id: string;
  experiment: string;
  claim: string;
  status: VerdictStatus;
  /** The measured numbers the status follows from. */
  evidence: string;
  /** The paired difference the status follows from, where one does (b − a, with its interval). */
  difference?: PairedDifference | null;
  /**
   * The claim's estimate at each training seed, in seed order (`config.seed`, `+1`, …): the mean
   * paired difference of that seed's runs, or the seed's own statistic for claims that are not a
   * difference (a rate, a share). The report draws them as dots beside the interval.
   */
  seeds: (number | null)[];
  /**
   * For a claim called "not reproduced": what the run's own numbers say caused it (no learning
   * signal, a farmed reward, an effect below the margin), computed, never typed.
   */
  cause?: string;
  /** For an inconclusive claim with a seed-level estimate: the seeds × tasks that would call it (`seedsToDecide`). */
  decide?: { seeds: number; tasks: number; tasksAtSameSeeds: number } | null;
  /** Why a claim came out against the article, from its own numbers (shown with an example trajectory). */
  explanation?: string;
  /** The RL stage whose rollouts illustrate the verdict (the report shows one of them). */
  exampleStage?: string;
  /** A reproduced claim whose interval lies entirely below the margin: "reproduced, smaller than the margin". */
  smallerThanMargin?: boolean;
  /**
   * The stages the claim's experiment read to call it, every training seed's, in the order read
   * (recorded as the report is built, report.ts): the runs behind the claim, which the dashboard's
   * recipe page opens. Absent in reports from before it was recorded.
   */
  stages?: string[];
  /**
   * For a claim comparing RL methods, the arms it compares (`credit-grpo`, `credit-mt-grpo`): the
   * runs whose learning it is gated on, which the recipe page narrows the claim's runs to.
   */
  compares?: string[];
}

/** The status as the report words it: "reproduced, smaller than the margin" where that is the case. */
export function statusLabel(verdict: Pick<Verdict, "status" | "smallerThanMargin">): string {
  return verdict.status === "reproduced" && verdict.smallerThanMargin
    ? "reproduced, smaller than the margin"
    : verdict.status;
}

export interface PairedDifference {
  /** Mean over the shared tasks of (b − a). */
  mean: number;
  interval: Interval;
  tasks: number;
}

function byTask(counts: readonly TaskCount[]): Map<string, TaskCount> {
  return new Map(counts.map((count) => [count.taskId, count]));
}

/** Task ids present, with samples, in both count lists (in `a`'s order). */
export function sharedTasks(a: readonly TaskCount[], b: readonly TaskCount[]): string[] {
  const other = byTask(b);
  return a
    .filter((count) => count.n > 0 && (other.get(count.taskId)?.n ?? 0) > 0)
    .map((count) => count.taskId);
}

/** Each task's samples summed over several evaluations of the same tasks. */
export function poolCounts(lists: readonly (readonly TaskCount[])[]): TaskCount[] {
  const pooled = new Map<string, TaskCount>();
  for (const counts of lists) {
    for (const count of counts) {
      const seen = pooled.get(count.taskId);
      pooled.set(
        count.taskId,
        seen
          ? {
              ...seen,
              n: seen.n + count.n,
              c: seen.c + count.c,
              policyErrors: seen.policyErrors + count.policyErrors,
              infraFailures: (seen.infraFailures ?? 0) + (count.infraFailures ?? 0),
            }
          : { ...count },
      );
    }
  }
  return [...pooled.values()];
}

/** Unbiased per-task pass@k (k capped at the task's n). */
export function taskPassAtK(count: TaskCount, k: number): number {
  return passAtK(count.n, count.c, Math.min(k, count.n));
}

/**
 * Paired difference of per-task statistics (b − a) over the tasks both have, with a bootstrap
 * interval over tasks. `value` maps a task's counts to its statistic (default: pass@1).
 */
export function pairedDifference(
  a: readonly TaskCount[],
  b: readonly TaskCount[],
  value: (count: TaskCount) => number = (count) => taskPassAtK(count, 1),
  seed = 0,
  filter: (count: TaskCount) => boolean = () => true,
): PairedDifference | null {
  return crossDifference({ counts: a, value }, { counts: b, value }, seed, filter);
}

/**
 * Paired difference of two different per-task statistics, `b.value` on `b`'s counts minus
 * `a.value` on `a`'s (e.g. RL's pass@1 − its start's pass@16), over the tasks both have.
 */
export function crossDifference(
  a: { counts: readonly TaskCount[]; value: (count: TaskCount) => number },
  b: { counts: readonly TaskCount[]; value: (count: TaskCount) => number },
  seed = 0,
  filter: (count: TaskCount) => boolean = () => true,
): PairedDifference | null {
  const left = byTask(a.counts);
  const right = byTask(b.counts);
  const ids = sharedTasks(a.counts, b.counts).filter((id) => filter(left.get(id)!));
  if (ids.length === 0) return null;
  const diffs = ids.map((id) => b.value(right.get(id)!) - a.value(left.get(id)!));
  const [interval] = bootstrapMeans([diffs], { seed });
  return { mean: diffs.reduce((sum, d) => sum + d, 0) / diffs.length, interval, tasks: ids.length };
}

/**
 * Status of an upper-bound claim ("x ≤ bound" for every case), from each case's paired
 * difference x − bound: not reproduced when some case is above its bound (by more than `margin`)
 * beyond its interval, reproduced when no case is above it at all (or, with a margin, every
 * interval stays below the margin), inconclusive in between (above, within noise).
 */
export function boundStatus(differences: readonly (PairedDifference | null)[], margin = 0): VerdictStatus {
  if (differences.length === 0 || differences.some((d) => d === null)) return "not measured";
  const measured = differences as readonly PairedDifference[];
  // with a margin, exceeding the bound by less than it does not count: above it beyond noise breaks
  // the claim, and a case whose interval stays below it keeps the claim
  if (measured.some((d) => d.interval.lower > margin)) return "not reproduced";
  if (measured.every((d) => d.mean <= 1e-9 || (margin > 0 && d.interval.upper < margin))) return "reproduced";
  return "inconclusive";
}

/**
 * The sharpening statistic: how much of RL's pass@1 gain over the base is left at k:
 * per task (rl@1 − base@1) − (rl@k − base@k). Positive: the gain shrinks as k grows.
 */
export function gainShrinkage(
  base: readonly TaskCount[],
  rl: readonly TaskCount[],
  k: number,
  seed = 0,
  filter?: (count: TaskCount) => boolean,
): PairedDifference | null {
  // (rl@1 − rl@k) − (base@1 − base@k) = (rl@1 − base@1) − (rl@k − base@k)
  return pairedDifference(base, rl, (count) => taskPassAtK(count, 1) - taskPassAtK(count, k), seed, filter);
}

/** Mean per-task pass@k over a subset of tasks (null when the subset is empty). */
export function meanPassAtK(
  counts: readonly TaskCount[],
  k: number,
  filter: (count: TaskCount) => boolean = () => true,
): number | null {
  const chosen = counts.filter((count) => count.n > 0 && filter(count));
  if (chosen.length === 0) return null;
  return chosen.reduce((sum, count) => sum + taskPassAtK(count, k), 0) / chosen.length;
}

/** The chain length (hops) of a world task's template; null for tasks without a known template. */
export function hopsOf(count: TaskCount): number | null {
  if (!count.template) return null;
  try {
    return findTemplate(count.template).hops;
  } catch {
    return null;
  }
}

export interface HopRow {
  hops: number;
  tasks: number;
  /** Mean per-task success rate c/n. */
  passRate: number;
  /** Mean per-task Bernoulli variance of the 0/1 return, p(1 − p). */
  returnVariance: number;
  /** Fraction of tasks whose samples all agree (a GRPO group of them carries no signal). */
  zeroVariance: number;
}

/** Return statistics by chain length: how variance and zero-signal groups change with depth. */
export function byHops(counts: readonly TaskCount[]): HopRow[] {
  const groups = new Map<number, TaskCount[]>();
  for (const count of counts) {
    const hops = hopsOf(count);
    if (hops === null || count.n === 0) continue;
    if (!groups.has(hops)) groups.set(hops, []);
    groups.get(hops)!.push(count);
  }
  return [...groups.entries()]
    .sort(([a], [b]) => a - b)
    .map(([hops, rows]) => {
      const rates = rows.map((row) => row.c / row.n);
      return {
        hops,
        tasks: rows.length,
        passRate: rates.reduce((sum, p) => sum + p, 0) / rates.length,
        returnVariance: rates.reduce((sum, p) => sum + p * (1 - p), 0) / rates.length,
        zeroVariance: rows.filter((row) => row.c === 0 || row.c === row.n).length / rows.length,
      };
    });
}

/**
 * The probability that a GRPO group of `g` rollouts of a task carries no signal (all correct or all
 * wrong), estimated without bias from the task's n samples with c correct: a group is a draw of g
 * of them without replacement, so P = [C(c, g) + C(n − c, g)] / C(n, g). Unlike "all n samples
 * agree", it does not depend on how many samples the evaluation took (n ≥ g).
 */
export function noSignalProbability(count: TaskCount, g: number): number {
  const { n, c } = count;
  const size = Math.min(g, n);
  // C(k, size) / C(n, size) = prod_{i<size} (k − i) / (n − i)
  const ratio = (k: number) => {
    let value = 1;
    for (let i = 0; i < size; i++) value *= Math.max(0, k - i) / (n - i);
    return value;
  };
  return ratio(c) + ratio(n - c);
}

/**
 * Difference of the means of two independent samples (b − a) with a percentile-bootstrap interval
 * (each sample resampled on its own).
 */
export function groupDifference(
  a: readonly number[],
  b: readonly number[],
  seed = 0,
  resamples = 1000,
): PairedDifference | null {
  if (a.length === 0 || b.length === 0) return null;
  const rng = createRng(seed).fork("group-difference");
  const mean = (values: readonly number[]) => values.reduce((sum, x) => sum + x, 0) / values.length;
  const draws = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    let sa = 0;
    let sb = 0;
    for (let i = 0; i < a.length; i++) sa += a[rng.int(a.length)];
    for (let i = 0; i < b.length; i++) sb += b[rng.int(b.length)];
    draws[r] = sb / b.length - sa / a.length;
  }
  draws.sort();
  return {
    mean: mean(b) - mean(a),
    interval: { lower: quantileSorted(draws, 0.025), upper: quantileSorted(draws, 0.975) },
    tasks: a.length + b.length,
  };
}

/**
 * Status of a claim that `difference` is positive. With a `margin` (the smallest effect the claim
 * is about, e.g. 0.05 pass@1), an interval that lies entirely below it also calls the claim "not
 * reproduced": the run rules out an effect of that size (an equivalence-style call), which is how
 * a claim that is false at the lab's scale gets decided instead of staying inconclusive forever.
 * An interval of zero width at zero (both sides at the same floor or ceiling on every task) stays
 * inconclusive: nothing was compared.
 */
export function positiveStatus(difference: PairedDifference | null, margin = 0): VerdictStatus {
  if (!difference) return "not measured";
  if (difference.interval.lower > 0) return "reproduced";
  if (difference.interval.upper < 0) return "not reproduced";
  const degenerate = difference.interval.lower === 0 && difference.interval.upper === 0;
  if (margin > 0 && !degenerate && difference.interval.upper < margin) return "not reproduced";
  return "inconclusive";
}

/** The clause a margin call adds to a verdict's evidence ("" when the status did not use it). */
export function marginNote(difference: PairedDifference | null, margin: number): string {
  if (!difference || margin <= 0) return "";
  if (difference.interval.lower > 0 || difference.interval.upper < 0 || difference.interval.upper >= margin)
    return "";
  if (difference.interval.lower === 0 && difference.interval.upper === 0) return "";
  return ` (the interval rules out a gain of ${margin} or more: called against the claim at that effect size)`;
}

/**
 * For an inconclusive difference: the interval's half-width and roughly how many tasks would call
 * it, were the effect what was measured. A bootstrap interval over tasks shrinks as 1/√tasks, so
 * calling a mean m with half-width h over N tasks needs about N·(h/|m|)² tasks (more samples per
 * task narrow it only as far as the between-task spread allows).
 */
export function powerNote(difference: PairedDifference | null, margin = 0): string {
  if (!difference) return "";
  const { lower, upper } = difference.interval;
  const half = (upper - lower) / 2;
  if (half <= 0) {
    return ` [interval of zero width: the two sides scored the same on every task (often both at 0 or 1); more of the same tasks cannot call it: the models must differ somewhere, by more training or on tasks they do not both fail or both solve]`;
  }
  // for the claim: mean − half > 0; against it: mean + half below the margin (or below 0)
  const mean = difference.mean;
  const target = Math.max(mean, margin - mean, -mean);
  const needed = target > 0 ? Math.ceil(difference.tasks * (half / target) ** 2) : null;
  const times = needed ? ` (×${(needed / difference.tasks).toFixed(1)})` : "";
  return ` [interval half-width ${half.toFixed(3)} over ${difference.tasks} tasks; at the measured ${mean >= 0 ? "+" : "−"}${Math.abs(mean).toFixed(3)} it needs about ${needed ?? "∞"} tasks${times} to be called${margin > 0 ? ` (either way, margin ${margin})` : ""}]`;
}

/** "+0.120 [0.040, 0.210] over 48 tasks" */
export function formatDifference(difference: PairedDifference | null, label = "Δ"): string {
  if (!difference) return `${label}: no shared tasks`;
  const f = (x: number) => `${x >= 0 ? "+" : ""}${x.toFixed(3)}`;
  return `${label} ${f(difference.mean)} [95% CI ${f(difference.interval.lower)}, ${f(difference.interval.upper)}] over ${difference.tasks} tasks`;
}

/**
 * Difference of two proportions measured on `tasks` tasks each (b − a), with a normal interval
 * that counts tasks, not samples, as the independent units (conservative: samples of one task are
 * correlated). For two rates whose per-task counts are not stored (a curve that keeps only its
 * mean); no verdict uses it today, since every stage stores its per-task counts and the verdicts
 * pair tasks (`pairedDifference`), which is tighter.
 */
export function proportionDifference(a: number, b: number, tasks: number): PairedDifference {
  const se = Math.sqrt((a * (1 - a) + b * (1 - b)) / Math.max(1, tasks));
  const mean = b - a;
  return { mean, interval: { lower: mean - 1.96 * se, upper: mean + 1.96 * se }, tasks };
}

/** A claim's estimate over training seeds: each seed's own estimate and their mean, with an interval over both levels. */
export interface SeedEstimate extends PairedDifference {
  /** The estimate at each training seed, in seed order (the report draws them as dots); null where a seed measured nothing. */
  seeds: (number | null)[];
}

/**
 * Two-level (hierarchical) percentile bootstrap over training seeds, then units within each seed
 * (Agarwal et al., "Deep RL at the edge of the statistical precipice", NeurIPS 2021: the training
 * run is the unit of replication; tasks are nested in it). `units[s]` are seed s's units (e.g. its
 * paired per-task differences); `statistic` maps a seed's units to its estimate (default: mean).
 *
 * The estimate is the mean over seeds of each seed's statistic. One resample draws R seeds with
 * replacement, then, for each drawn seed, as many of its units with replacement, and averages the
 * R statistics; the interval is the 2.5/97.5 percentiles of `resamples` such draws. A seed with no
 * units measured nothing: it is left out of the estimate and the resampling, and its entry in
 * `seeds` is null; the whole estimate is null when no seed measured anything. `tasks` is the units per seed
 * (the smallest seed's count).
 *
 *   units [[0, 1], [2]]: estimate (0.5 + 2)/2 = 1.25; a resample picks the seeds (A,A), (A,B),
 *   (B,A), (B,B) with 1/4 each, and seed A's mean is 0, ½, 1 with 1/4, 1/2, 1/4: the lowest
 *   average, 0, has probability 1/4 · 1/16 = 1/64 < 2.5% and the next, ¼, brings it to 5/64, so
 *   the lower bound is ¼; (B,B) alone has 1/4, so the upper bound is 2.
 */
export function seedBootstrap<T = number>(
  units: readonly (readonly T[])[],
  options: { statistic?: (units: readonly T[]) => number; seed?: number; resamples?: number } = {},
): SeedEstimate | null {
  const statistic =
    options.statistic ??
    ((values: readonly T[]) => (values as readonly number[]).reduce((sum, x) => sum + x, 0) / values.length);
  const seeds = units.filter((seedUnits) => seedUnits.length > 0);
  if (seeds.length === 0) return null;
  // aligned with the training seeds: a seed without units shows as null, not as a shifted list
  const aligned = units.map((seedUnits) => (seedUnits.length > 0 ? statistic(seedUnits) : null));
  const resamples = options.resamples ?? 2000;
  const rng = createRng(options.seed ?? 0).fork("seed-bootstrap");
  const perSeed = aligned.filter((value): value is number => value !== null);
  const draws = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    let sum = 0;
    for (let s = 0; s < seeds.length; s++) {
      const chosen = seeds[rng.int(seeds.length)];
      const sample = Array.from({ length: chosen.length }, () => chosen[rng.int(chosen.length)]);
      sum += statistic(sample);
    }
    draws[r] = sum / seeds.length;
  }
  draws.sort();
  return {
    mean: perSeed.reduce((sum, x) => sum + x, 0) / perSeed.length,
    interval: { lower: quantileSorted(draws, 0.025), upper: quantileSorted(draws, 0.975) },
    tasks: Math.min(...seeds.map((seedUnits) => seedUnits.length)),
    seeds: aligned,
  };
}

/**
 * Paired per-task differences (b − a) at each training seed: `pairs[s]` holds seed s's two count
 * lists; the seed estimate is the mean over the tasks both have of b's value − a's.
 */
export function seedPairedDifference(
  pairs: readonly { a: readonly TaskCount[]; b: readonly TaskCount[] }[],
  options: {
    value?: (count: TaskCount) => number;
    valueA?: (count: TaskCount) => number;
    filter?: (count: TaskCount) => boolean;
    seed?: number;
  } = {},
): SeedEstimate | null {
  const value = options.value ?? ((count: TaskCount) => taskPassAtK(count, 1));
  const valueA = options.valueA ?? value;
  const filter = options.filter ?? (() => true);
  const units = pairs.map(({ a, b }) => {
    const left = byTask(a);
    const right = byTask(b);
    return sharedTasks(a, b)
      .filter((id) => filter(left.get(id)!))
      .map((id) => value(right.get(id)!) - valueA(left.get(id)!));
  });
  return seedBootstrap(units, { seed: options.seed });
}

/**
 * For an inconclusive seed-level estimate: the seeds × tasks that would call it, were the effect
 * what was measured. Either side may call it: the lower end rising above 0 (reproduced), or the
 * upper end falling below the margin (not reproduced); the two-level bootstrap's interval is often
 * skewed, so each side's own half (mean − lower, upper − mean) is set against its distance. An
 * interval shrinks as 1/√R in the seeds and, within a seed, as 1/√tasks, so a side whose half must
 * shrink by √f needs about R·f seeds at the same tasks, or R seeds at tasks·f if the seeds agree
 * (the between-seed part is then small); the easier side is reported. Null when nothing can call
 * it: a zero-width interval (nothing compared) or a mean on a decision line.
 */
export function seedsToDecide(
  estimate: SeedEstimate | null,
  margin = 0,
): { seeds: number; tasks: number; tasksAtSameSeeds: number } | null {
  if (!estimate) return null;
  const { mean } = estimate;
  const { lower, upper } = estimate.interval;
  const seeds = estimate.seeds.filter((value) => value !== null).length;
  const factors: number[] = [];
  if (mean > 0 && mean - lower > 0) factors.push(((mean - lower) / mean) ** 2);
  if (mean < margin && upper - mean > 0) factors.push(((upper - mean) / (margin - mean)) ** 2);
  if (upper <= lower || factors.length === 0) return null;
  const factor = Math.min(...factors);
  // an interval touching its line (f ≤ 1 by the halves) still needs more than it has
  return {
    seeds: Math.max(seeds + 1, Math.ceil(seeds * factor)),
    tasks: estimate.tasks,
    tasksAtSameSeeds: Math.max(estimate.tasks + 1, Math.ceil(estimate.tasks * factor)),
  };
}

/** The evidence clause of `seedsToDecide`. */
export function seedPowerNote(estimate: SeedEstimate | null, margin = 0): string {
  if (!estimate) return "";
  const half = (estimate.interval.upper - estimate.interval.lower) / 2;
  const seeds = estimate.seeds.filter((value) => value !== null).length;
  const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`;
  if (half <= 0)
    return ` [interval of zero width at every seed: both sides scored the same on every task; more seeds or tasks cannot call it]`;
  const decide = seedsToDecide(estimate, margin);
  if (!decide)
    return ` [interval half-width ${half.toFixed(3)} over ${plural(seeds, "seed")} × ${estimate.tasks} tasks]`;
  const mean = estimate.mean;
  return ` [interval half-width ${half.toFixed(3)} over ${plural(seeds, "seed")} × ${estimate.tasks} tasks; at the measured ${mean >= 0 ? "+" : "−"}${Math.abs(mean).toFixed(3)} about ${plural(decide.seeds, "seed")} × ${decide.tasks} tasks (or ${plural(seeds, "seed")} × ${decide.tasksAtSameSeeds} tasks, if the seeds agree) would call it${margin > 0 ? ` (either way, margin ${margin})` : ""}]`;
}
