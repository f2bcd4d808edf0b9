/**
 * Learning-rate schedules, evaluated on the host: the value is passed to the jitted step as a
 * scalar array, so changing it never recompiles.
 */

export interface WarmupCosineOptions {
  /** Learning rate reached at the end of warm-up. */
  peak: number;
  /** Steps of linear warm-up from `peak / warmupSteps` (step 0) to `peak`. */
  warmupSteps: number;
  /** Step at which the cosine reaches its floor (the total number of steps). */
  totalSteps: number;
  /** Floor as a fraction of `peak` (default 0.1). */
  finalFraction?: number;
}

/**
 * Linear warm-up then cosine decay to `finalFraction · peak`:
 *   step < W:  peak · (step + 1) / W
 *   else:      floor + (peak − floor) · ½(1 + cos(π · min(1, (step − W) / (total − W))))
 * e.g. peak 1e-3, W 10, total 110, floor 0.1: step 0 → 1e-4, step 9 → 1e-3, step 60 → 5.5e-4,
 * step ≥ 110 → 1e-4.
 */
export function warmupCosine(options: WarmupCosineOptions): (step: number) => number {
  const { peak, warmupSteps, totalSteps } = options;
  const floor = peak * (options.finalFraction ?? 0.1);
  if (!(peak > 0)) throw new Error(`warmupCosine: peak must be > 0, got ${peak}`);
  if (!Number.isInteger(warmupSteps) || warmupSteps < 0) {
    throw new Error(`warmupCosine: warmupSteps must be a non-negative integer, got ${warmupSteps}`);
  }
  if (!Number.isInteger(totalSteps) || totalSteps < warmupSteps) {
    throw new Error(`warmupCosine: totalSteps must be an integer ≥ warmupSteps, got ${totalSteps}`);
  }
  return (step: number) => {
    if (step < warmupSteps) return (peak * (step + 1)) / warmupSteps;
    const span = Math.max(1, totalSteps - warmupSteps);
    const progress = Math.min(1, (step - warmupSteps) / span);
    return floor + (peak - floor) * 0.5 * (1 + Math.cos(Math.PI * progress));
  };
}
