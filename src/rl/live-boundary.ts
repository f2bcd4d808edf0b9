/**
 * Step 5 of an RL run (train.ts): the live boundary. Every `evalEvery` steps the params are
 * measured on held-out world tasks (boundary-tracker.ts), the point is stored under `eval/*` with
 * the sharpening flags, and a warning is returned when RL narrows what the policy can sample. A
 * resumed run starts from the points and flags already stored (those up to its checkpoint).
 */
import type { EmbeddedModel } from "../policy/embedded/embedded-policy.ts";
import type { Store } from "../store/index.ts";
import {
  type BoundaryPoint,
  measureBoundary,
  sharpeningFlags,
  sharpeningWarning,
} from "./boundary-tracker.ts";
import type { RlConfig } from "./config.ts";
import { worldSampler } from "./tasks.ts";
import type { RlResult } from "./train.ts";

export interface LiveBoundary {
  /** Boundary evaluations, in step order (those of earlier processes included). */
  boundary: BoundaryPoint[];
  /** Steps flagged as sharpening. */
  sharpening: RlResult["sharpening"];
  /** Measures `model` at `step`, stores the point and flags; returns the sharpening warning, if any. */
  evaluate(step: number, model: EmbeddedModel): Promise<string | undefined>;
}

export function liveBoundary(store: Store, runId: string, config: RlConfig): LiveBoundary {
  const heldout = worldSampler(config.evalFamilies ?? config.families, 1, config.evalSeed, "test").draw(
    0,
    0,
    config.evalTasks,
  );
  const boundary = readBoundary(store, runId, config.evalSamples);
  const sharpening = readSharpening(store, runId);
  const evaluate = async (step: number, model: EmbeddedModel): Promise<string | undefined> => {
    const { point, metrics } = await measureBoundary(step, {
      model,
      tasks: heldout,
      n: config.evalSamples,
      seed: config.evalSeed,
      temperature: config.evalTemperature,
      topP: config.evalTopP,
      noise: config.evalNoise,
      budgets: config.budgets,
      batchSize: config.rolloutBatch,
    });
    boundary.push(point);
    const flags = sharpeningFlags(boundary, config.sharpeningTolerance);
    const flagged = flags.sincePrevious || flags.sinceStart;
    if (flagged) sharpening.push({ step, ...flags });
    store.addMetrics(runId, step, {
      ...metrics,
      "eval/sharpening": flags.sincePrevious ? 1 : 0,
      "eval/sharpening_since_start": flags.sinceStart ? 1 : 0,
    });
    return sharpeningWarning(boundary, flags) ?? undefined;
  };
  return { boundary, sharpening, evaluate };
}

/** The boundary points already stored for a run (after truncation: those up to the checkpoint). */
function readBoundary(store: Store, runId: string, n: number): BoundaryPoint[] {
  const atK = new Map(store.metrics(runId, `eval/pass@${n}`).map((point) => [point.step, point.value]));
  return store
    .metrics(runId, "eval/pass@1")
    .filter((point) => atK.has(point.step))
    .map((point) => ({ step: point.step, passAt1: point.value, passAtK: atK.get(point.step)!, k: n }))
    .sort((a, b) => a.step - b.step);
}

/** Sharpening flags already stored for a run (a resumed run reports them too). */
function readSharpening(store: Store, runId: string): RlResult["sharpening"] {
  const sinceStart = new Map(
    store.metrics(runId, "eval/sharpening_since_start").map((p) => [p.step, p.value]),
  );
  return store
    .metrics(runId, "eval/sharpening")
    .map((point) => ({
      step: point.step,
      sincePrevious: point.value === 1,
      sinceStart: sinceStart.get(point.step) === 1,
    }))
    .filter((flags) => flags.sincePrevious || flags.sinceStart)
    .sort((a, b) => a.step - b.step);
}
