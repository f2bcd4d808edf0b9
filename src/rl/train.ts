/**
 * RL for multi-turn tool use, top to bottom (the CleanRL shape: one readable driver, no Trainer
 * class). Per step:
 *
 *   1. rollouts: `tasksPerStep` tasks × `groupSize` episodes with the current params (temperature
 *      `temperature`, tools with noise), rewarded with the reward spec and stored with their step
 *      (rollout-step.ts);
 *   2. dynamic sampling: groups without signal are dropped and more groups are sampled, up to
 *      `maxExtraRollouts` extra episodes (dynamic-sampling.ts);
 *   3. advantages by the named estimator (src/rl/advantages/) on the kept groups (update-batch.ts);
 *   4. PPO: `ppoEpochs` passes, each split into `miniBatches` optimizer steps, over token sequences
 *      assembled from the trajectories exactly as sampled (assemble.ts), with the clip-higher loss
 *      (loss.ts) at the sampling temperature and the chosen aggregation (aggregation.ts) (ppo-update.ts);
 *   5. metrics under stable keys; every `evalEvery` steps the live boundary (live-boundary.ts);
 *      every `checkpointEvery` steps a checkpoint (checkpoints.ts).
 *
 * The model, the trainer and a resume are set up once before the loop (run-setup.ts).
 *
 * Crash safety: trajectories and metrics carry their step; a run that finds a checkpoint artifact
 * resumes from the newest one and first forgets everything recorded after its step
 * (`truncateAfterStep`), so after a kill -9 no trajectory is lost or duplicated. Task draws,
 * episode seeds and mini-batch order are functions of (seed, step), so the resumed run draws what
 * the uninterrupted one would have. A non-finite loss or gradient norm in any update of a step
 * undoes the whole step's updates (the params and optimizer state of the step's start are kept by
 * reference until the step is known finite), logs `train/skipped_nonfinite`, and the checkpoint
 * code refuses non-finite params, so a good checkpoint is never overwritten by a diverged one.
 *
 * Metrics per step (store and progress): the rollout keys of rollout-metrics.ts (over the scored
 * episodes: infra failures are counted apart, in `rollout/infra_failures`); `advantage/*`
 * (advantageMetrics, over the kept groups); `rollout/zero_variance_group_fraction` (groups of the
 * step whose outcomes all tie, over every sampled group), `rollout/kept_groups`,
 * `rollout/dropped_group_fraction`, `rollout/extra_rollouts`, `rollout/infra_failures` (episodes
 * left out of their groups: infra-episodes.ts); the loss's `policy/*` and `loss/policy`
 * (token means over the update, averaged over its optimizer steps), `loss/total`, `optim/grad_norm`
 * (before clipping), `optim/learning_rate`, `optim/updates`; `policy/kl_sampler` (KL(old‖new) at the
 * first update, before any change: ≈ 0 unless the sampler's and the trainer's log-probs disagree);
 * `train/skipped_nonfinite`, `train/skipped_no_signal`; `perf/rollout_seconds`,
 * `perf/update_seconds`, `perf/tokens_per_s` and `perf/episodes_per_s` (all tokens of the step's
 * episodes over rollout + update time); `memory/peak_rss_mb` (the process's peak resident set so far). Boundary steps add `eval/pass@<k>`, `eval/<family>/pass@<k>`,
 * `eval/sharpening` and `eval/sharpening_since_start`. Each episode is stored with its step and
 * `info.rl = { step, round, kept }` (kept: the update used it).
 *
 * MT-PPO (`gae`): the model gets a scalar value head (model.ts `ValueHeadParams`; zeros when the
 * starting checkpoint has none, saved and resumed with the params; a Hugging Face checkpoint's is
 * beside its adapter or weights: hf-training.ts). Before each update the kept episodes are scored
 * once for their values V_old with the params they were sampled with (`RlTraining.critic`: the
 * lab's score.ts, the hf engine's `sequenceValues`); GAE (advantages/gae.ts) puts each turn's reward on that turn's last policy token and
 * the outcome on the last one, runs over policy tokens only, and gives advantages and returns; the
 * loss adds `valueCoef` × PPO's clipped value loss (loss.ts) against those returns, with the
 * gradient stopped at the head unless `valueGradient`, and the head's learning rate is `valueLearningRateScale` × the policy's. Metrics add `value/loss`,
 * `value/clip_fraction`, `value/mean` (from the loss) and `value/explained_variance`
 * (1 − Var(R − V_old)/Var(R) over the update's policy tokens) and `value/return_mean`.
 */
import { join } from "node:path";
import { peakRssMb } from "../core/peak-rss.ts";
import type { JsonValue } from "../engine/checkpoint.ts";
import { warmupCosine } from "../engine/schedule.ts";
import type { TrainState } from "../engine/train.ts";
import type { ParamTree } from "../engine/tree.ts";
import type { RunEpisodesOptions } from "../env/run-episodes.ts";
import type { GptParams } from "../policy/embedded/model.ts";
import type { Store } from "../store/index.ts";
import type { Task } from "../types/task.ts";
import type { AnyTool } from "../types/tool.ts";
import { flattenTrajectory, type Trajectory } from "../types/trajectory.ts";
import type { BoundaryPoint } from "./boundary-tracker.ts";
import type { RlConfig } from "./config.ts";
import { INFRA_FAILURES_METRIC } from "./infra-episodes.ts";
import { liveBoundary } from "./live-boundary.ts";
import { ppoUpdate } from "./ppo-update.ts";
import { rolloutStepMetrics, sampleStepGroups } from "./rollout-step.ts";
import { openTraining, type RlTraining, rolloutEnvironment } from "./run-setup.ts";
import type { TaskSampler } from "./tasks.ts";
import { buildUpdateBatch } from "./update-batch.ts";

/** The update batch of one step, after advantages (what `transformBatch` sees and may change). */
export interface RlUpdateBatch {
  step: number;
  trajectories: Trajectory[];
  /** Per trajectory, one advantage per flattened token (0 off the loss mask). */
  advantages: Float32Array[];
  /** Per trajectory, reference log-probs per flattened token (KL only). */
  refLogprobs?: Float32Array[];
  /** Per trajectory, the critic's values at scoring time and GAE's returns per flattened token (gae only). */
  critic?: { oldValues: Float32Array[]; returns: Float32Array[] };
}

export interface RlProgress {
  step: number;
  steps: number;
  metrics: Record<string, number>;
  /** Set when the boundary tracking flagged sharpening at this step. */
  warning?: string;
}

/**
 * An environment other than world tasks (src/orchestra): where tasks come from, an episode's tools,
 * the verifier and the reward. Boundary tracking measures world tasks, so it is off with an env.
 */
export interface RlEnvironment {
  sampler: TaskSampler;
  tools: (task: Task, seed: number) => readonly AnyTool[];
  verify: (task: Task, answer: string | null) => boolean;
  /** The trajectory with its rewards (at least `outcomeReward`). */
  reward: (trajectory: Trajectory, task: Task) => Trajectory;
}

export interface TrainRlOptions {
  config: RlConfig;
  /** Run directory (checkpoints, the final model unless `config.out`) and its store. */
  runDir: string;
  store: Store;
  runId: string;
  onProgress?: (progress: RlProgress) => void;
  /** Checked after every step: when aborted, a checkpoint is saved and `trainRl` throws. */
  signal?: AbortSignal;
  /** Inspect or reshape each step's update batch before the PPO update (custom shaping, fault injection). */
  transformBatch?: (batch: RlUpdateBatch) => void | Promise<void>;
  /** Train in this environment instead of on world tasks (`config.families`, `noise`, `reward`). */
  env?: RlEnvironment;
  /** Samples the step's episodes with the live policy another way (a user's agent through the gateway: src/agents); default `runEpisodes`. */
  rollout?: (options: RunEpisodesOptions) => Promise<Trajectory[]>;
}

export interface RlResult {
  /** The trained checkpoint (load it with `resolvePolicy(dir)`). */
  modelDir: string;
  steps: number;
  /** The RL step the run started from (0, or the checkpoint's step when resumed). */
  startStep: number;
  /** Episodes stored by the run (all steps, including earlier processes of a resumed run). */
  episodes: number;
  /** Of those, episodes left out of their groups for an infra failure (`rollout/infra_failures`, summed). */
  infraFailures: number;
  /** Steps whose update was undone (non-finite) or had no group with signal. */
  skipped: { nonfinite: number[]; noSignal: number[] };
  /** Metrics of the last step. */
  lastMetrics: Record<string, number>;
  /** Boundary evaluations, in step order (start included). */
  boundary: BoundaryPoint[];
  /** Steps flagged as sharpening. */
  sharpening: { step: number; sincePrevious: boolean; sinceStart: boolean }[];
  seconds: number;
  /** The process's peak resident set (MB) at the end: the run's memory high-water mark. */
  peakRssMb: number;
}

export const RL_MODEL = "model";

/** Why a step made no update: a non-finite loss or gradient (undone), or no group with signal. */
type SkipReason = "nonfinite" | "no-signal";

export async function trainRl(options: TrainRlOptions): Promise<RlResult> {
  const { config, store, runId } = options;
  const started = performance.now();
  const environment = rolloutEnvironment(options);
  const normLength = config.normLength ?? environment.budgets.maxTokens;
  const training = await openTraining(options, environment);
  // Boundary tracking measures the lab's GPT on world tasks (live-boundary.ts): off otherwise.
  const embedded = options.env ? null : training.embedded;
  const evalEvery = embedded ? config.evalEvery : 0;
  let { state, rlStep } = training;
  const startStep = rlStep;
  const schedule = learningRateSchedule(config);
  const live = liveBoundary(store, runId, config);
  const skipped: RlResult["skipped"] = { nonfinite: [], noSignal: [] };
  let lastMetrics: Record<string, number> = {};
  const seconds = () => training.secondsBefore + (performance.now() - started) / 1000;

  if (rlStep === 0 && evalEvery > 0 && live.boundary.length === 0) {
    const warning = await live.evaluate(0, { ...embedded!.model, params: state.params as GptParams });
    options.onProgress?.({ step: 0, steps: config.steps, metrics: {}, warning });
  }

  // ---- the loop ----------------------------------------------------------------------------------
  while (rlStep < config.steps) {
    const step = rlStep + 1;

    // ---- 1–2. rollouts, rewards, dynamic sampling (rollout-step.ts) ----
    const rolloutStart = performance.now();
    const sampled = await sampleStepGroups(
      step,
      await training.rolloutPolicy(step, state.params),
      environment,
      config,
      store,
      runId,
    );
    const rolloutSeconds = (performance.now() - rolloutStart) / 1000;
    const metrics = rolloutStepMetrics(sampled);

    // ---- 3–4. advantages (update-batch.ts) and the PPO update (ppo-update.ts) ----
    const updateStart = performance.now();
    const learningRate = schedule(step - 1);
    const updated = await updatePolicy(options, training, state, step, sampled.kept.flat(), {
      learningRate,
      normLength,
    });
    state = updated.state;
    Object.assign(metrics, updated.metrics);
    const skippedReason = updated.skippedReason;
    if (skippedReason === "nonfinite") skipped.nonfinite.push(step);
    if (skippedReason === "no-signal") skipped.noSignal.push(step);
    const updateSeconds = (performance.now() - updateStart) / 1000;
    Object.assign(
      metrics,
      stepMetrics(skippedReason, learningRate, sampled.all, rolloutSeconds, updateSeconds),
    );
    store.addMetrics(runId, step, metrics);
    lastMetrics = metrics;
    rlStep = step;

    // ---- 5. live boundary, checkpoint, progress ----
    let warning: string | undefined;
    if (evalEvery > 0 && (step % evalEvery === 0 || step === config.steps)) {
      warning = await live.evaluate(step, { ...embedded!.model, params: state.params as GptParams });
    }
    const aborted = options.signal?.aborted ?? false;
    if (step % config.checkpointEvery === 0 || step === config.steps || aborted) {
      await training.saveCheckpoint(state, { rlStep, seed: config.seed, seconds: seconds() });
    }
    options.onProgress?.({ step, steps: config.steps, metrics, warning });
    if (aborted && step < config.steps) {
      training.release(state);
      throw new Error(`rl: aborted at step ${step}; --resume ${options.runDir} continues it`);
    }
  }

  // ---- the trained model ----------------------------------------------------------------------------
  const result: RlResult = {
    modelDir: config.out ?? join(options.runDir, RL_MODEL),
    steps: config.steps,
    startStep,
    episodes: store.countTrajectories(runId),
    infraFailures: store.metrics(runId, INFRA_FAILURES_METRIC).reduce((sum, point) => sum + point.value, 0),
    skipped,
    lastMetrics,
    boundary: live.boundary,
    sharpening: live.sharpening,
    seconds: seconds(),
    peakRssMb: 0,
  };
  await training.saveModel(result.modelDir, state.params, rlStep, {
    name: config.name,
    kind: "rl",
    base: config.base,
    rlConfig: config as unknown as JsonValue,
    boundary: live.boundary as unknown as JsonValue,
  });
  training.release(state);
  result.peakRssMb = peakRssMb();
  return result;
}

/**
 * Steps 3–4: the update batch of the kept episodes (advantages, critic values, reference
 * log-probs), the caller's `transformBatch`, then the PPO update from `state` (consumed). Returns
 * the next state (the same params when the update was undone) and the update's metrics.
 */
async function updatePolicy(
  options: TrainRlOptions,
  training: RlTraining,
  state: TrainState<ParamTree>,
  step: number,
  trajectories: Trajectory[],
  learning: { learningRate: number; normLength: number },
): Promise<{
  state: TrainState<ParamTree>;
  metrics: Record<string, number>;
  skippedReason: SkipReason | null;
}> {
  const { config } = options;
  if (trajectories.length === 0) return { state, metrics: {}, skippedReason: "no-signal" };
  const batch = await buildUpdateBatch(
    step,
    trajectories,
    training.critic?.(state.params) ?? null,
    training.reference,
    config,
    training.maxLen,
  );
  await options.transformBatch?.(batch.update);
  const updated = await ppoUpdate(training.trainer, state, batch.update, learning.learningRate, {
    step,
    config,
    maxLen: training.maxLen,
    normLength: learning.normLength,
  });
  return updated.metrics
    ? { state: updated.state, metrics: { ...batch.metrics, ...updated.metrics }, skippedReason: null }
    : { state: updated.state, metrics: batch.metrics, skippedReason: "nonfinite" };
}

/** The learning rate per optimizer step (warmup, then cosine decay to `finalLearningRateFraction`). */
function learningRateSchedule(config: RlConfig): (step: number) => number {
  return warmupCosine({
    peak: config.learningRate,
    warmupSteps: Math.min(config.warmupSteps, config.steps),
    totalSteps: config.steps,
    finalFraction: config.finalLearningRateFraction,
  });
}

/** The closing keys of a step's metrics: why it was skipped, the learning rate, and throughput. */
function stepMetrics(
  skippedReason: SkipReason | null,
  learningRate: number,
  episodes: readonly Trajectory[],
  rolloutSeconds: number,
  updateSeconds: number,
): Record<string, number> {
  const tokens = episodes.reduce((n, trajectory) => n + flattenTrajectory(trajectory).tokenIds.length, 0);
  return {
    "train/skipped_nonfinite": skippedReason === "nonfinite" ? 1 : 0,
    "train/skipped_no_signal": skippedReason === "no-signal" ? 1 : 0,
    "optim/learning_rate": learningRate,
    "perf/rollout_seconds": rolloutSeconds,
    "perf/update_seconds": updateSeconds,
    "perf/tokens_per_s": tokens / Math.max(1e-9, rolloutSeconds + updateSeconds),
    "perf/episodes_per_s": episodes.length / Math.max(1e-9, rolloutSeconds + updateSeconds),
    "memory/peak_rss_mb": peakRssMb(),
  };
}
