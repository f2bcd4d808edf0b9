/**
 * Exponential moving average of a curve, debiased as TensorBoard does: with weight w the running
 * value is m_n = w·m_{n-1} + (1 − w)·x_n from m_0 = 0, shown as m_n / (1 − w^n), so the first
 * point is the first value instead of being pulled towards 0. Non-finite values are passed through
 * unsmoothed and do not enter the average. w = 0 returns the values unchanged.
 *
 *   ema([1, 0], 0.5): m1 = 0.5 → 0.5/0.5 = 1; m2 = 0.25 → 0.25/0.75 = 1/3
 */
export function ema(values: readonly number[], weight: number): number[] {
  if (!(weight >= 0 && weight < 1)) throw new Error(`smoothing weight must be in [0, 1), got ${weight}`);
  let running = 0;
  let count = 0;
  return values.map((value) => {
    if (!Number.isFinite(value)) return value;
    running = weight * running + (1 - weight) * value;
    count++;
    return running / (1 - weight ** count);
  });
}
