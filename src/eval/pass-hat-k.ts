/**
 * pass^k and the learning signal of a GRPO group, from n samples of which c were correct.
 *
 *   pass^k = C(c, k) / C(n, k) = prod_{i=0..k-1} (c - i) / (n - i)
 *
 * the probability that a random k-subset of the n samples is ALL correct (τ-bench's reliability
 * metric; unbiased for p^k as pass@k is for 1 - (1-p)^k). `groupSignal` is the chance that a random
 * group of G of the n samples is mixed (neither all right nor all wrong): only such a group has a
 * non-zero GRPO advantage, so it is the share of groups that teach anything.
 *
 *   n = 4, c = 2, G = 2: all right 1/6, all wrong 1/6 → signal 4/6
 */

function checkCounts(n: number, c: number, k: number): void {
  for (const [name, value] of [
    ["n", n],
    ["c", c],
    ["k", k],
  ] as const) {
    if (!Number.isInteger(value) || value < 0)
      throw new Error(`pass^k: ${name} must be a non-negative integer, got ${value}`);
  }
  if (k === 0) throw new Error("pass^k: k must be at least 1");
  if (k > n) throw new Error(`pass^k: k = ${k} exceeds the number of samples n = ${n}`);
  if (c > n) throw new Error(`pass^k: c = ${c} correct exceeds the number of samples n = ${n}`);
}

/** Unbiased pass^k of one task: C(c, k) / C(n, k) (0 when c < k). */
export function passHatK(n: number, c: number, k: number): number {
  checkCounts(n, c, k);
  let allRight = 1;
  for (let i = 0; i < k; i++) allRight *= (c - i) / (n - i);
  return Math.max(0, allRight);
}

/** Chance that G of the n samples, drawn without replacement, hold both outcomes (G ≤ n). */
export function groupSignal(n: number, c: number, groupSize: number): number {
  checkCounts(n, c, groupSize);
  return Math.max(0, 1 - passHatK(n, c, groupSize) - passHatK(n, n - c, groupSize));
}

/** The same for a task whose success rate is p (plug-in, any G): 1 - p^G - (1 - p)^G. */
export function groupSignalAtRate(passRate: number, groupSize: number): number {
  if (!(passRate >= 0 && passRate <= 1)) throw new Error(`pass rate must be in [0, 1], got ${passRate}`);
  if (!Number.isInteger(groupSize) || groupSize < 1)
    throw new Error(`group size must be a positive integer, got ${groupSize}`);
  return Math.max(0, 1 - passRate ** groupSize - (1 - passRate) ** groupSize);
}
