/**
 * Unbiased pass@k (Yue et al., "Does Reinforcement Learning Really Incentivize Reasoning Capacity
 * in LLMs Beyond the Base Model?", arXiv:2504.13837; the estimator of Chen et al. 2021).
 *
 * For one task with n samples of which c are correct:
 *
 *   pass@k = 1 - C(n-c, k) / C(n, k) = 1 - prod_{i=n-c+1..n} (1 - k/i)
 *
 * the probability that a random k-subset of the n samples holds at least one correct one. The
 * product form never builds a binomial coefficient, so it is exact to rounding for any n. It is
 * exactly 1 when n - c < k (every k-subset holds a correct sample). The benchmark value is the
 * mean over tasks. This is NOT best-of-k on k bootstrap draws (biased low, the bug the anchors
 * keep reporting): it uses all n samples for every k.
 *
 * Beside it, unbiased pass^k (Yao et al., "τ-bench", arXiv:2406.12045): the chance that ALL k
 * samples drawn without replacement are correct,
 *
 *   pass^k = C(c, k) / C(n, k) = prod_{i=0..k-1} (c - i) / (n - i)
 *
 * 0 when c < k. pass@k asks whether the agent can do a task; pass^k whether it does it every time
 * (the reliability figure agent users ask for). pass^1 = pass@1 = c/n; pass^k falls as k grows.
 */
import { type BootstrapOptions, bootstrapMeans } from "./bootstrap.ts";

/** Samples and successes of one task. */
export interface TaskSamples {
  /** Number of samples drawn. */
  n: number;
  /** Number of them that were correct. */
  c: number;
}

export interface PassAtKPoint {
  k: number;
  /** Mean pass@k over tasks. */
  passAtK: number;
  /** Bootstrap interval over tasks, when computed. */
  lower?: number;
  upper?: number;
  /** Mean pass^k over tasks (every k samples correct); absent on curves stored before it was kept. */
  passHatK?: number;
  /** Bootstrap interval of pass^k over tasks (the same resamples as pass@k's), when computed. */
  passHatKLower?: number;
  passHatKUpper?: number;
}

/** A pass@k curve: points in increasing k. */
export type PassAtKCurve = PassAtKPoint[];

function checkCount(name: string, value: number): void {
  if (!Number.isInteger(value) || value < 0) {
    throw new Error(`pass@k: ${name} must be a non-negative integer, got ${value}`);
  }
}

/** Unbiased pass@k of one task (n samples, c correct). Throws on k > n, c > n, negatives or k = 0. */
export function passAtK(n: number, c: number, k: number): number {
  checkCount("n", n);
  checkCount("c", c);
  checkCount("k", k);
  if (k === 0) throw new Error("pass@k: k must be at least 1");
  if (k > n) throw new Error(`pass@k: k = ${k} exceeds the number of samples n = ${n}`);
  if (c > n) throw new Error(`pass@k: c = ${c} correct exceeds the number of samples n = ${n}`);
  if (n - c < k) return 1;
  let allWrong = 1;
  for (let i = n - c + 1; i <= n; i++) allWrong *= 1 - k / i;
  return 1 - allWrong;
}

/** Unbiased pass^k of one task (n samples, c correct): C(c,k)/C(n,k). Throws as `passAtK` does. */
export function passHatK(n: number, c: number, k: number): number {
  checkCount("n", n);
  checkCount("c", c);
  checkCount("k", k);
  if (k === 0) throw new Error("pass^k: k must be at least 1");
  if (k > n) throw new Error(`pass^k: k = ${k} exceeds the number of samples n = ${n}`);
  if (c > n) throw new Error(`pass^k: c = ${c} correct exceeds the number of samples n = ${n}`);
  if (c < k) return 0;
  let allRight = 1;
  for (let i = 0; i < k; i++) allRight *= (c - i) / (n - i);
  return allRight;
}

/** The k grid of a curve: 1, 2, 4, … up to n, plus n itself when n is not a power of two. */
export function kGrid(n: number): number[] {
  checkCount("n", n);
  if (n === 0) throw new Error("pass@k: n must be at least 1");
  const ks: number[] = [];
  for (let k = 1; k <= n; k *= 2) ks.push(k);
  if (ks[ks.length - 1] !== n) ks.push(n);
  return ks;
}

function checkTasks(tasks: readonly TaskSamples[]): number {
  if (tasks.length === 0) throw new Error("pass@k: no tasks");
  let minN = Number.POSITIVE_INFINITY;
  for (const task of tasks) minN = Math.min(minN, task.n);
  return minN;
}

/** Mean pass@k over tasks. Every task needs at least k samples. */
export function meanPassAtK(tasks: readonly TaskSamples[], k: number): number {
  checkTasks(tasks);
  let sum = 0;
  for (const task of tasks) sum += passAtK(task.n, task.c, k);
  return sum / tasks.length;
}

/** Mean pass^k over tasks. Every task needs at least k samples. */
export function meanPassHatK(tasks: readonly TaskSamples[], k: number): number {
  checkTasks(tasks);
  let sum = 0;
  for (const task of tasks) sum += passHatK(task.n, task.c, k);
  return sum / tasks.length;
}

export interface PassAtKCurveOptions {
  /** k values; default `kGrid` of the smallest n over the tasks. */
  ks?: readonly number[];
  /** Add bootstrap intervals over tasks (percentile, seeded). Omit for none. */
  bootstrap?: BootstrapOptions | boolean;
}

/** Mean pass@k and pass^k over tasks at each k of the grid, optionally with bootstrap intervals. */
export function passAtKCurve(tasks: readonly TaskSamples[], options: PassAtKCurveOptions = {}): PassAtKCurve {
  const minN = checkTasks(tasks);
  const ks = options.ks ?? kGrid(minN);
  const perTask = ks.map((k) => tasks.map((task) => passAtK(task.n, task.c, k)));
  const perTaskHat = ks.map((k) => tasks.map((task) => passHatK(task.n, task.c, k)));
  const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / tasks.length;
  const curve: PassAtKCurve = ks.map((k, i) => ({
    k,
    passAtK: mean(perTask[i]),
    passHatK: mean(perTaskHat[i]),
  }));
  if (options.bootstrap) {
    // One call: every resample's task indices serve both statistics (the columns do not change the draws).
    const intervals = bootstrapMeans(
      [...perTask, ...perTaskHat],
      options.bootstrap === true ? {} : options.bootstrap,
    );
    ks.forEach((_, i) => {
      curve[i].lower = intervals[i].lower;
      curve[i].upper = intervals[i].upper;
      curve[i].passHatKLower = intervals[ks.length + i].lower;
      curve[i].passHatKUpper = intervals[ks.length + i].upper;
    });
  }
  return curve;
}

function valueAt(curve: PassAtKCurve, k: number): number | undefined {
  return curve.find((point) => point.k === k)?.passAtK;
}

/**
 * The smallest k (among the k values both curves share) at which curve B reaches curve A
 * (B ≥ A), given that B starts below A at k = 1; null when B is not below at k = 1 or never
 * catches up. With A = the RL model and B = the base model this is the article's crossover point.
 */
export function crossoverK(curveA: PassAtKCurve, curveB: PassAtKCurve): number | null {
  const a1 = valueAt(curveA, 1);
  const b1 = valueAt(curveB, 1);
  if (a1 === undefined || b1 === undefined) throw new Error("crossoverK: both curves need a point at k = 1");
  if (!(b1 < a1)) return null;
  const shared = curveA
    .map((point) => point.k)
    .filter((k) => k > 1 && valueAt(curveB, k) !== undefined)
    .sort((x, y) => x - y);
  for (const k of shared) {
    if ((valueAt(curveB, k) as number) >= (valueAt(curveA, k) as number)) return k;
  }
  return null;
}

/**
 * Sampling-efficiency gap ΔSE = pass@kLarge(A) − pass@1(B) (arXiv:2504.13837, with A the base
 * model, B the RL model and kLarge = 256 in the paper): how far RL's single sample stays below
 * what the base model reaches with many.
 */
export function samplingEfficiencyGap(curveA: PassAtKCurve, curveB: PassAtKCurve, kLarge: number): number {
  const aLarge = valueAt(curveA, kLarge);
  if (aLarge === undefined) throw new Error(`samplingEfficiencyGap: curve A has no point at k = ${kLarge}`);
  const b1 = valueAt(curveB, 1);
  if (b1 === undefined) throw new Error("samplingEfficiencyGap: curve B has no point at k = 1");
  return aLarge - b1;
}
