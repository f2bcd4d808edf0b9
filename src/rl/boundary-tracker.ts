/**
 * Live boundary tracking: pass@1 and pass@k at a large k (k = samples per task) on a fixed held-out
 * task set, measured with the current params during an RL run, and the flag the seed cares about:
 * **sharpening**, pass@k_large falling while pass@1 rises (arXiv:2504.13837: RL raises pass@1 and
 * narrows what the model can sample at all). Flagged against the previous evaluation and against
 * the start, so a slow drift is caught even when each interval's change is small.
 *
 * Both moves must exceed `tolerance` (absolute): pass@k estimates on a few dozen tasks are noisy,
 * and a flat curve must not flicker the flag.
 */

import type { EpisodeBudgets } from "../env/run-episodes.ts";
import { curveValue } from "../eval/curves.ts";
import { evaluate } from "../eval/run-eval.ts";
import type { GptConfig } from "../policy/embedded/config.ts";
import { EmbeddedPolicy } from "../policy/embedded/embedded-policy.ts";
import type { GptParams } from "../policy/embedded/model.ts";
import type { WordTokenizer } from "../policy/embedded/tokenizer.ts";
import type { Task } from "../types/task.ts";

export interface BoundaryPoint {
  step: number;
  passAt1: number;
  /** pass@k at k = `k`. */
  passAtK: number;
  k: number;
}

/** True when `to` has a lower pass@k_large and a higher pass@1 than `from`, both beyond `tolerance`. */
export function isSharpening(from: BoundaryPoint, to: BoundaryPoint, tolerance: number): boolean {
  return to.passAtK < from.passAtK - tolerance && to.passAt1 > from.passAt1 + tolerance;
}

export interface SharpeningFlags {
  /** Against the previous evaluation. */
  sincePrevious: boolean;
  /** Against the first evaluation of the run (the base). */
  sinceStart: boolean;
}

/** The flags of the last point of a history (points in step order). */
export function sharpeningFlags(history: readonly BoundaryPoint[], tolerance: number): SharpeningFlags {
  const current = history.at(-1);
  if (!current || history.length < 2) return { sincePrevious: false, sinceStart: false };
  return {
    sincePrevious: isSharpening(history[history.length - 2], current, tolerance),
    sinceStart: isSharpening(history[0], current, tolerance),
  };
}

/** The warning line for a flagged point, or null. */
export function sharpeningWarning(history: readonly BoundaryPoint[], flags: SharpeningFlags): string | null {
  if (!flags.sincePrevious && !flags.sinceStart) return null;
  const current = history.at(-1)!;
  const against = flags.sincePrevious ? history[history.length - 2] : history[0];
  const fmt = (x: number) => x.toFixed(3);
  return (
    `sharpening at step ${current.step}: pass@${current.k} ${fmt(against.passAtK)} → ${fmt(current.passAtK)} ` +
    `while pass@1 ${fmt(against.passAt1)} → ${fmt(current.passAt1)} (since ${flags.sincePrevious ? `step ${against.step}` : "the start"}` +
    `${flags.sincePrevious && flags.sinceStart ? " and since the start" : ""}): RL is narrowing what the policy can sample`
  );
}

export interface BoundaryEvalOptions {
  model: { config: GptConfig; tokenizer: WordTokenizer; params: GptParams };
  tasks: readonly Task[];
  /** Samples per task = the large k. */
  n: number;
  seed: number;
  temperature: number;
  topP: number;
  noise: number;
  budgets: Partial<EpisodeBudgets>;
  batchSize: number;
}

/** Evaluates the params in memory (nothing persisted); returns `eval/*` metrics and the point. */
export async function measureBoundary(
  step: number,
  options: BoundaryEvalOptions,
): Promise<{ point: BoundaryPoint; metrics: Record<string, number> }> {
  const policy = new EmbeddedPolicy(options.model, {
    temperature: options.temperature,
    topP: options.topP,
    capacity: options.batchSize,
    seed: options.seed,
    id: `rl-eval@${step}`,
  });
  try {
    const result = await evaluate({
      policy,
      tasks: { type: "given", tasks: options.tasks, name: "rl-heldout" },
      n: options.n,
      seed: options.seed,
      temperature: options.temperature,
      topP: options.topP,
      noise: options.noise,
      budgets: options.budgets,
      batchSize: options.batchSize,
      persist: false,
      curves: { bootstrap: false },
    });
    const passAt1 = curveValue(result.curves.overall, 1) ?? Number.NaN;
    const passAtK = curveValue(result.curves.overall, options.n) ?? Number.NaN;
    return { point: { step, passAt1, passAtK, k: options.n }, metrics: result.metrics };
  } finally {
    await policy.close();
  }
}
