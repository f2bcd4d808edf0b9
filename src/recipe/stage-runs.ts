/**
 * The work of one recipe stage, over the project's own commands: an evaluation (`evaluate`), an
 * SFT run (`trainSft`), an RL run (`trainRl`). Each works inside its stage folder under a fixed
 * run name, so a stage started again after a crash reopens the same run and resumes it (an eval
 * skips the episodes it stored; a trainer continues from its last checkpoint).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { openTrainingRun } from "../cli/training-run.ts";
import type { PassAtKCurves } from "../eval/curves.ts";
import { type RolloutStats, rolloutStats } from "../eval/rollout-stats.ts";
import { type EvalResult, evaluate } from "../eval/run-eval.ts";
import type { TaskCount } from "../eval/task-counts.ts";
import { loadModelCheckpoint } from "../policy/embedded/checkpoint.ts";
import { resolvePolicy } from "../policy/resolve.ts";
import type { BoundaryPoint } from "../rl/boundary-tracker.ts";
import { parseRlConfig, type RlConfig } from "../rl/config.ts";
import { trainRl } from "../rl/train.ts";
import { parseSftConfig, type SftConfig } from "../sft/config.ts";
import { trainSft } from "../sft/train.ts";
import { openRunDirectory, STORE_FILE, type Store } from "../store/index.ts";
import { finishRunAfterError } from "../store/run-failure.ts";
import type { RunKind } from "../store/types.ts";
import type { Task } from "../types/task.ts";
import { STAGE_RUN_NAME_KEY, stageRunName } from "./stage-run-name.ts";
import type { StageContext } from "./stages.ts";

/** The run folder inside a stage folder. */
export const STAGE_RUN = "run";

/** The state a stage's run records at creation: its name (`credit-eval-gigpo@s2`, stage-run-name.ts). */
function stageRunState(context: StageContext): Record<string, unknown> {
  const named = stageRunName(join(context.dir, STAGE_RUN, STORE_FILE), STAGE_RUN);
  return named ? { [STAGE_RUN_NAME_KEY]: named.name } : {};
}

export interface EvalStageResult {
  /** The eval run directory (`agentrl boundary` and `agentrl passk` read it). */
  directory: string;
  runId: string;
  policy: string;
  n: number;
  noise: number;
  counts: TaskCount[];
  curves: PassAtKCurves;
  stats: RolloutStats;
}

export interface EvalStageOptions {
  policy: string;
  tasks: readonly Task[];
  /** Name of the task set (recorded in the eval config). */
  taskSet: string;
  n: number;
  noise: number;
  temperature: number;
  topP: number;
  seed: number;
  batch: number;
}

/** pass@k of a checkpoint on a fixed task list, stored (and resumable) in the stage folder. */
export async function evalStage(context: StageContext, options: EvalStageOptions): Promise<EvalStageResult> {
  const policy = await resolvePolicy(options.policy, {
    temperature: options.temperature,
    topP: options.topP,
  });
  let result: EvalResult;
  try {
    result = await evaluate({
      policy,
      policySpec: options.policy,
      tasks: { type: "given", tasks: options.tasks, name: options.taskSet },
      n: options.n,
      seed: options.seed,
      temperature: options.temperature,
      topP: options.topP,
      noise: options.noise,
      batchSize: options.batch,
      runsRoot: context.dir,
      runId: STAGE_RUN,
      runState: stageRunState(context),
      signal: context.signal,
      onProgress: ({ done, total, correct }) =>
        context.progress(done / total, `correct ${(correct / Math.max(1, done)).toFixed(2)}`),
    });
  } finally {
    await policy.close?.();
  }
  const store = openRunDirectory(result.directory!, { readOnly: true });
  try {
    return {
      directory: result.directory!,
      runId: result.runId,
      policy: options.policy,
      n: options.n,
      noise: options.noise,
      counts: result.counts,
      curves: result.curves,
      stats: rolloutStats(store.trajectories(result.runId)),
    };
  } finally {
    store.close();
  }
}

/**
 * Runs a trainer in the stage's run: created on the first attempt, reopened (resumed) after a
 * crash; finished as completed, interrupted (the stage's signal aborted) or failed; always closed.
 */
async function inStageRun<C extends object, R extends object, T>(
  context: StageContext,
  kind: RunKind,
  config: C,
  parse: (raw: unknown) => C,
  work: (run: { directory: string; store: Store; runId: string }) => Promise<{ result: R; value: T }>,
): Promise<T> {
  const directory = join(context.dir, STAGE_RUN);
  const run = openTrainingRun({
    kind,
    resume: existsSync(directory) ? directory : undefined,
    runs: context.dir,
    runId: STAGE_RUN,
    parse,
    fresh: () => config,
    defaultId: () => STAGE_RUN,
  });
  try {
    for (const [key, value] of Object.entries(stageRunState(context))) {
      if (run.store.getState(run.runId, key) === undefined) run.store.setState(run.runId, key, value);
    }
    const { result, value } = await work(run);
    run.store.finishRun(run.runId, "completed", result);
    return value;
  } catch (error) {
    finishRunAfterError(run.store, run.runId, error, context.signal);
    throw error;
  } finally {
    run.store.close();
  }
}

export interface SftStageResult {
  modelDir: string;
  steps: number;
  finalLoss: number;
  initialHeldoutLoss: number | null;
  finalHeldoutLoss: number | null;
  trajectories: number;
  seconds: number;
}

export async function sftStage(context: StageContext, input: Partial<SftConfig>): Promise<SftStageResult> {
  const config = parseSftConfig({ ...input, out: join(context.dir, "model") });
  return inStageRun(context, "sft", config, parseSftConfig, async ({ directory, store, runId }) => {
    const result = await trainSft({
      config,
      runDir: directory,
      store,
      runId,
      signal: context.signal,
      onProgress: ({ step, steps, loss }) => context.progress(step / steps, `loss ${loss.toFixed(3)}`),
    });
    return {
      result,
      value: {
        modelDir: result.modelDir,
        steps: result.steps,
        finalLoss: result.finalLoss,
        initialHeldoutLoss: result.initialHeldoutLoss,
        finalHeldoutLoss: result.finalHeldoutLoss,
        trajectories: result.data.trajectories,
        seconds: result.seconds,
      },
    };
  });
}

/** A checkpoint fine-tuned earlier (`agentrl train sft`), described by the result in its metadata. */
export async function givenSftModel(modelDir: string): Promise<SftStageResult> {
  const { metadata } = await loadModelCheckpoint(modelDir);
  const result = (
    metadata as { result?: Partial<SftStageResult> & { data?: { trajectories?: number } } } | undefined
  )?.result;
  if (!result)
    throw new Error(`recipe: ${modelDir} is not an SFT checkpoint (no SFT result in its metadata)`);
  return {
    modelDir,
    steps: result.steps ?? Number.NaN,
    finalLoss: result.finalLoss ?? Number.NaN,
    initialHeldoutLoss: result.initialHeldoutLoss ?? null,
    finalHeldoutLoss: result.finalHeldoutLoss ?? null,
    trajectories: result.data?.trajectories ?? Number.NaN,
    seconds: result.seconds ?? Number.NaN,
  };
}

/** Per-step metrics kept in the stage result (the report's learning curves). */
const HISTORY_KEYS = [
  "reward/mean",
  "return/mean",
  "reward/std",
  "rollout/pass@1",
  "rollout/kept_groups",
  "rollout/tool_calls_per_episode",
  "rollout/retry_after_error_rate",
  "rollout/zero_variance_group_fraction",
  "policy/entropy",
  "policy/clip_fraction",
];

export interface RlStageResult {
  modelDir: string;
  /** The RL run directory (its store holds every rollout). */
  directory: string;
  runId: string;
  estimator: string;
  reward: string;
  steps: number;
  episodes: number;
  skipped: { nonfinite: number[]; noSignal: number[] };
  boundary: BoundaryPoint[];
  sharpening: { step: number; sincePrevious: boolean; sinceStart: boolean }[];
  /** Metric key → [step, value] pairs. */
  history: Record<string, [number, number][]>;
  seconds: number;
}

export async function rlStage(context: StageContext, input: Partial<RlConfig>): Promise<RlStageResult> {
  const config = parseRlConfig({ ...input, out: join(context.dir, "model") });
  return inStageRun(context, "rl", config, parseRlConfig, async ({ directory, store, runId }) => {
    const result = await trainRl({
      config,
      runDir: directory,
      store,
      runId,
      signal: context.signal,
      onProgress: ({ step, steps, metrics }) =>
        context.progress(
          step / steps,
          step === 0 ? "start" : `step ${step} reward ${(metrics["reward/mean"] ?? Number.NaN).toFixed(2)}`,
        ),
    });
    const history: Record<string, [number, number][]> = {};
    const byHops = store.metricKeys(runId).filter((key) => /^return\/std_hops_\d+$/.test(key));
    for (const key of [...HISTORY_KEYS, ...byHops]) {
      const points = store.metrics(runId, key);
      if (points.length > 0) history[key] = points.map((point) => [point.step, point.value]);
    }
    return {
      result,
      value: {
        modelDir: result.modelDir,
        directory,
        runId,
        estimator: config.estimator,
        reward: typeof config.reward === "string" ? config.reward : "custom",
        steps: result.steps,
        episodes: result.episodes,
        skipped: result.skipped,
        boundary: result.boundary,
        sharpening: result.sharpening,
        history,
        seconds: result.seconds,
      },
    };
  });
}
