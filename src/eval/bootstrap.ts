/**
 * Percentile bootstrap over tasks: resample the tasks with replacement, recompute the statistic
 * on each resample, and report the (1 - level)/2 and (1 + level)/2 quantiles of those values.
 *
 * Tasks are the unit of resampling (not samples within a task) because the benchmark value is a
 * mean over tasks and tasks differ far more than the samples of one task do. All randomness comes
 * from `seed`, so an interval is reproducible. Several statistics computed from the same resample
 * indices (a pass@k curve) are paired: their intervals come from the same resamples.
 */
import { createRng } from "../core/random.ts";

export interface BootstrapOptions {
  /** Number of resamples (default 1000). */
  resamples?: number;
  /** Coverage of the interval, in (0, 1) (default 0.95). */
  level?: number;
  /** Seed of the resampling stream (default 0). */
  seed?: number;
}

export interface Interval {
  lower: number;
  upper: number;
}

export const DEFAULT_BOOTSTRAP: Required<BootstrapOptions> = { resamples: 1000, level: 0.95, seed: 0 };

export function resolveBootstrapOptions(options: BootstrapOptions = {}): Required<BootstrapOptions> {
  const resolved = { ...DEFAULT_BOOTSTRAP, ...options };
  if (!Number.isInteger(resolved.resamples) || resolved.resamples < 1) {
    throw new Error(`bootstrap: resamples must be a positive integer, got ${resolved.resamples}`);
  }
  if (!(resolved.level > 0 && resolved.level < 1)) {
    throw new Error(`bootstrap: level must lie strictly between 0 and 1, got ${resolved.level}`);
  }
  return resolved;
}

/** Linear-interpolation quantile (numpy's default, "type 7") of an ascending array. */
export function quantileSorted(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) throw new Error("quantileSorted: empty array");
  const position = (sorted.length - 1) * q;
  const low = Math.floor(position);
  const high = Math.ceil(position);
  return sorted[low] + (sorted[high] - sorted[low]) * (position - low);
}

/**
 * Bootstrap intervals of the means of several per-task value columns at once.
 * `columns[s][t]` is statistic s of task t (for pass@k: s indexes k). Every resample draws one
 * set of task indices and uses it for every column.
 */
export function bootstrapMeans(
  columns: readonly (readonly number[])[],
  options?: BootstrapOptions,
): Interval[] {
  const { resamples, level, seed } = resolveBootstrapOptions(options);
  if (columns.length === 0) return [];
  const tasks = columns[0].length;
  if (tasks === 0) throw new Error("bootstrap: no tasks to resample");
  for (const column of columns) {
    if (column.length !== tasks) throw new Error("bootstrap: every column needs one value per task");
  }
  const rng = createRng(seed).fork("bootstrap");
  const means = columns.map(() => new Float64Array(resamples));
  const picks = new Int32Array(tasks);
  for (let r = 0; r < resamples; r++) {
    for (let t = 0; t < tasks; t++) picks[t] = rng.int(tasks);
    for (let s = 0; s < columns.length; s++) {
      const column = columns[s];
      let sum = 0;
      for (let t = 0; t < tasks; t++) sum += column[picks[t]];
      means[s][r] = sum / tasks;
    }
  }
  const alpha = (1 - level) / 2;
  return means.map((values) => {
    values.sort();
    return { lower: quantileSorted(values, alpha), upper: quantileSorted(values, 1 - alpha) };
  });
}
