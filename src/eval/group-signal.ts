/**
 * The learning signal of a GRPO group, from n samples of which c were correct. `groupSignal` is the
 * chance that a random group of G of the n samples is mixed (neither all right nor all wrong): only
 * such a group has a non-zero GRPO advantage, so it is the share of groups that teach anything.
 * All right is pass^G = C(c, G) / C(n, G) (passk.ts); all wrong is the same with n − c.
 *
 *   n = 4, c = 2, G = 2: all right 1/6, all wrong 1/6 → signal 4/6
 */
import { passHatK } from "./passk.ts";

/** Chance that G of the n samples, drawn without replacement, hold both outcomes (G ≤ n). */
export function groupSignal(n: number, c: number, groupSize: number): number {
  return Math.max(0, 1 - passHatK(n, c, groupSize) - passHatK(n, n - c, groupSize));
}

/** The same for a task whose success rate is p (plug-in, any G): 1 - p^G - (1 - p)^G. */
export function groupSignalAtRate(passRate: number, groupSize: number): number {
  if (!(passRate >= 0 && passRate <= 1)) throw new Error(`pass rate must be in [0, 1], got ${passRate}`);
  if (!Number.isInteger(groupSize) || groupSize < 1)
    throw new Error(`group size must be a positive integer, got ${groupSize}`);
  return Math.max(0, 1 - passRate ** groupSize - (1 - passRate) ** groupSize);
}
