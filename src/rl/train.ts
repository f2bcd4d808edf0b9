/**
 * RL for multi-turn tool use, top to bottom (the CleanRL shape: one readable driver, no Trainer
 * class). Per step:
 *
 *   1. rollouts: `tasksPerStep` tasks × `groupSize` episodes with the current params (temperature
 *      `temperature`, tools with noise), rewarded with the reward spec and stored with their step;
 *   2. dynamic sampling: groups without signal are dropped and more groups are sampled, up to
 *      `maxExtraRollouts` extra episodes (dynamic-sampling.ts);
 *   3. advantages by the named estimator (src/rl/advantages/) on the kept groups;
 *   4. PPO: `ppoEpochs` passes, each split into `miniBatches` optimizer steps, over token sequences
 *      assembled from the trajectories exactly as sampled (assemble.ts), with the clip-higher loss
 *      (loss.ts) at the sampling temperature and the chosen aggregation (aggregation.ts);
 *   5. metrics under stable keys; every `evalEvery` steps the live boundary (boundary-tracker.ts);
 *      every `checkpointEvery` steps a checkpoint (checkpoints.ts).
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
 * episodes over rollout + update time). Boundary steps add `eval/pass@<k>`, `eval/<family>/pass@<k>`,
 * `eval/sharpening` and `eval/sharpening_since_start`. Each episode is stored with its step and
 * `info.rl = { step, round, kept }` (kept: the update used it).
 *
 * MT-PPO (`gae`): the model gets a scalar value head (model.ts `ValueHeadParams`; zeros when the
 * starting checkpoint has none, saved and resumed with the params). Before each update the kept
 * episodes are scored once for their values V_old (score.ts, the same pass that could give
 * log-probs); GAE (advantages/gae.ts) puts each turn's reward on that turn's last policy token and
 * the outcome on the last one, runs over policy tokens only, and gives advantages and returns; the
 * loss adds `valueCoef` × PPO's clipped value loss (loss.ts) against those returns, with the
 * gradient stopped at the head unless `valueGradient`, and the head's learning rate is `valueLearningRateScale` × the policy's. Metrics add `value/loss`,
 * `value/clip_fraction`, `value/mean` (from the loss) and `value/explained_variance`
 * (1 − Var(R − V_old)/Var(R) over the update's policy tokens) and `value/return_mean`.
 */
import { join, relative } from "node:path";
import { createRng, mixSeeds } from "../core/random.ts";
import type { JsonValue } from "../engine/checkpoint.ts";
import { adamw } from "../engine/optim.ts";
import { warmupCosine } from "../engine/schedule.ts";
import { createTrainer, type TrainState } from "../engine/train.ts";
import { disposeTree, refTree } from "../engine/tree.ts";
import {
  DEFAULT_BUDGETS,
  type EpisodeSpec,
  type RunEpisodesOptions,
  runEpisodes,
} from "../env/run-episodes.ts";
import { worldToolsFor } from "../env/task-set.ts";
import { loadModelCheckpoint, saveModelCheckpoint } from "../policy/embedded/checkpoint.ts";
import type { GptConfig } from "../policy/embedded/config.ts";
import { EmbeddedPolicy } from "../policy/embedded/embedded-policy.ts";
import { makeTokenBatches, type TokenBatch, type TokenSequence } from "../policy/embedded/index.ts";
import { tokenLoss } from "../policy/embedded/losses.ts";
import { type GptParams, initValueHead } from "../policy/embedded/model.ts";
import { scoreTokens } from "../policy/embedded/score.ts";
import { type RewardSpec, withRewards } from "../reward/index.ts";
import type { Store } from "../store/index.ts";
import { toolSpec, uniformNoise } from "../tools/index.ts";
import { isInfraFailure } from "../types/failure.ts";
import type { Task } from "../types/task.ts";
import type { AnyTool } from "../types/tool.ts";
import { flattenTrajectory, type Trajectory } from "../types/trajectory.ts";
import { checkAnswer } from "../world/index.ts";
import {
  type AdvantageOptions,
  advantageMetrics,
  computeAdvantages,
  groupSignals,
  toAdvantageBatch,
} from "./advantages/index.ts";
import { assembleSequences, trainingIds } from "./assemble.ts";
import {
  type BoundaryPoint,
  measureBoundary,
  sharpeningFlags,
  sharpeningWarning,
} from "./boundary-tracker.ts";
import {
  CHECKPOINT_ARTIFACT,
  type RlTrainerState,
  removeCheckpointsAfter,
  saveRlCheckpoint,
} from "./checkpoints.ts";
import type { RlConfig } from "./config.ts";
import { groupsWithSignal } from "./dynamic-sampling.ts";
import { INFRA_FAILURES_METRIC, scorableEpisodes } from "./infra-episodes.ts";
import { ppoLoss } from "./loss.ts";
import { rolloutMetrics } from "./rollout-metrics.ts";
import { type TaskSampler, taskSamplerFor, worldSampler } from "./tasks.ts";

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
}

export const RL_MODEL = "model";
type State = TrainState<GptParams>;

/** Advantage options of a config (gamma goes to GiGPO's step returns). */
function advantageOptions(config: RlConfig): AdvantageOptions {
  return { ...config.advantage };
}

/**
 * Micro-batches of the update: episodes grouped by length (batch.ts `planLengthBuckets`), T a
 * multiple of 64 per micro-batch, at most `microBatchTokens` token slots each. Episodes of a step
 * range from a dozen tokens to the context, so one T for all (the longest's) padded about 60% of
 * the slots.
 */
function microBatches(sequences: TokenSequence[], maxLen: number, microBatchTokens: number): TokenBatch[] {
  return makeTokenBatches(sequences, {
    maxLen,
    maxTokensPerMicroBatch: microBatchTokens,
    lengthMultiple: 64,
    normalization: "sum",
    lengthBuckets: true,
  });
}

/** The value head's values of each trajectory's tokens, padded to the flattened length (0 past the context). */
async function criticValues(
  params: GptParams,
  config: GptConfig,
  trajectories: readonly Trajectory[],
  temperature: number,
): Promise<Float32Array[]> {
  const scored = await scoreTokens(
    params,
    config,
    trajectories.map((trajectory) => trainingIds(trajectory, config.maxLen)),
    { temperature, values: true },
  );
  return trajectories.map((trajectory, i) => {
    const row = new Float32Array(flattenTrajectory(trajectory).tokenIds.length);
    row.set(scored.values![i]);
    return row;
  });
}

/**
 * Critic metrics over the update's policy tokens: `value/explained_variance` = 1 − Var(R − V)/Var(R)
 * (1: the values predict the returns; 0: no better than their mean; negative: worse) and
 * `value/return_mean`. Unscorable episodes (returns = values) are left out.
 */
export function valueMetrics(
  trajectories: readonly Trajectory[],
  values: readonly ArrayLike<number>[],
  returns: readonly ArrayLike<number>[],
): Record<string, number> {
  const targets: number[] = [];
  const residuals: number[] = [];
  trajectories.forEach((trajectory, i) => {
    if (trajectory.outcomeReward === null) return;
    const mask = flattenTrajectory(trajectory).lossMask;
    for (let t = 0; t < mask.length; t++) {
      if (!mask[t]) continue;
      targets.push(returns[i][t]);
      residuals.push(returns[i][t] - values[i][t]);
    }
  });
  const variance = (xs: number[]) => {
    const m = mean(xs);
    return mean(xs.map((x) => (x - m) ** 2));
  };
  const returnVariance = variance(targets);
  return {
    "value/explained_variance": returnVariance > 0 ? 1 - variance(residuals) / returnVariance : 0,
    "value/return_mean": mean(targets),
  };
}

function mean(values: readonly number[]): number {
  return values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
}

export async function trainRl(options: TrainRlOptions): Promise<RlResult> {
  const { config, store, runId } = options;
  const started = performance.now();
  const rewardSpec = config.reward as RewardSpec | string;
  const budgets = { ...DEFAULT_BUDGETS, ...config.budgets };
  const noise = typeof config.noise === "number" ? uniformNoise(config.noise) : config.noise;
  const tools = options.env?.tools ?? worldToolsFor({ noise });
  const sampler = options.env?.sampler ?? taskSamplerFor({ ...config, seed: mixSeeds(config.seed, 0x7a51) });
  const verify = options.env?.verify ?? checkAnswer;
  const evalEvery = options.env ? 0 : config.evalEvery;
  const normLength = config.normLength ?? budgets.maxTokens;

  // ---- model and optimizer: from the base, or resumed from the newest checkpoint ----------------
  const latest = store.latestArtifact(runId, CHECKPOINT_ARTIFACT);
  const loaded = await loadModelCheckpoint(latest ? join(options.runDir, latest.path) : config.base);
  const model = { config: loaded.config, tokenizer: loaded.tokenizer };
  const maxLen = model.config.maxLen;
  const critic = config.estimator === "gae";
  if (critic && !loaded.params.value) loaded.params.value = initValueHead(model.config);
  const trainer = createTrainer<GptParams, TokenBatch>({
    loss: tokenLoss(
      model.config,
      ppoLoss({
        clipLow: config.clipLow,
        clipHigh: config.clipHigh,
        klCoef: config.klCoef,
        klEstimator: config.klEstimator,
        entropyCoef: config.entropyCoef,
        valueCoef: critic ? config.valueCoef : 0,
        valueClip: config.valueClip,
      }),
      { temperature: config.temperature, entropy: true, values: critic, valueGradient: config.valueGradient },
    ),
    optimizer: adamw({
      weightDecay: config.weightDecay,
      learningRateScale: (path) => (path.startsWith("value.") ? config.valueLearningRateScale : 1),
    }),
    maxGradNorm: config.maxGradNorm,
  });
  let state: State;
  let rlStep = 0;
  let secondsBefore = 0;
  if (latest) {
    if (!loaded.training) throw new Error(`${latest.path} has no training state: cannot resume`);
    const saved = loaded.training.state as unknown as RlTrainerState;
    state = { params: loaded.params, opt: loaded.training.opt, step: loaded.training.step };
    rlStep = saved.rlStep;
    secondsBefore = saved.seconds;
  } else {
    if (loaded.training) disposeTree(loaded.training.opt as never);
    state = trainer.init(loaded.params);
  }
  const startStep = rlStep;
  // Forget whatever a killed process recorded after the checkpoint (or everything, without one).
  store.truncateAfterStep(runId, rlStep);
  removeCheckpointsAfter(options.runDir, rlStep);
  if (!store.toolSpecs(runId)) {
    const [task] = sampler.draw(0, 0, 1);
    store.setToolSpecs(runId, tools(task, config.seed).map(toolSpec));
  }
  const reference = config.klCoef > 0 ? (await loadModelCheckpoint(config.base)).params : null;

  const schedule = warmupCosine({
    peak: config.learningRate,
    warmupSteps: Math.min(config.warmupSteps, config.steps),
    totalSteps: config.steps,
    finalFraction: config.finalLearningRateFraction,
  });
  const heldout = worldSampler(config.evalFamilies ?? config.families, 1, config.evalSeed, "test").draw(
    0,
    0,
    config.evalTasks,
  );
  const boundary: BoundaryPoint[] = readBoundary(store, runId, config.evalSamples);
  const sharpening: RlResult["sharpening"] = readSharpening(store, runId);
  const skipped: RlResult["skipped"] = { nonfinite: [], noSignal: [] };
  let lastMetrics: Record<string, number> = {};
  const seconds = () => secondsBefore + (performance.now() - started) / 1000;

  const evaluateBoundary = async (step: number): Promise<string | undefined> => {
    const { point, metrics } = await measureBoundary(step, {
      model: { ...model, params: state.params },
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
  const save = async () => {
    await saveRlCheckpoint({
      runDir: options.runDir,
      store,
      runId,
      model,
      params: state.params,
      opt: state.opt,
      optimizerStep: state.step,
      trainer: { rlStep, seed: config.seed, seconds: seconds() },
      metadata: { rlConfig: config as unknown as JsonValue, base: config.base },
      keep: config.keepCheckpoints,
    });
  };

  if (rlStep === 0 && evalEvery > 0 && boundary.length === 0) {
    const warning = await evaluateBoundary(0);
    options.onProgress?.({ step: 0, steps: config.steps, metrics: {}, warning });
  }

  // ---- the loop ----------------------------------------------------------------------------------
  while (rlStep < config.steps) {
    const step = rlStep + 1;
    const metrics: Record<string, number> = {};

    // ---- 1–2. rollouts, rewards, dynamic sampling ----
    const rolloutStart = performance.now();
    const taskById = new Map<string, Task>();
    const all: Trajectory[] = [];
    const kept: Trajectory[][] = [];
    const policy = new EmbeddedPolicy(
      { ...model, params: state.params },
      {
        temperature: config.temperature,
        capacity: Math.min(config.rolloutBatch, config.tasksPerStep * config.groupSize),
        seed: mixSeeds(config.seed, step),
        id: `rl:${config.name}@${step - 1}`,
      },
    );
    let extraEpisodes = 0;
    let groupCount = 0;
    let infraFailures = 0;
    try {
      for (let round = 0; ; round++) {
        const wanted = config.tasksPerStep - kept.length;
        const affordable =
          round === 0 ? wanted : Math.floor((config.maxExtraRollouts - extraEpisodes) / config.groupSize);
        const count = Math.min(wanted, affordable);
        if (count <= 0) break;
        const tasks = sampler.draw(step, round, count);
        const specs: EpisodeSpec[] = [];
        tasks.forEach((task, t) => {
          taskById.set(task.id, task);
          const group = groupCount++;
          for (let e = 0; e < config.groupSize; e++) {
            specs.push({
              task,
              group,
              seed: mixSeeds(mixSeeds(mixSeeds(config.seed, step), round * 4096 + t), e),
              id: `rl/${step}/${round}/${t}/${e}`,
            });
          }
        });
        if (round > 0) extraEpisodes += specs.length;
        const sampled = await (options.rollout ?? runEpisodes)({
          policy,
          episodes: specs,
          tools,
          verify,
          budgets,
          batchSize: config.rolloutBatch,
        });
        const rewarded = sampled.map((trajectory, i) =>
          options.env
            ? options.env.reward(trajectory, specs[i].task)
            : withRewards(trajectory, specs[i].task, rewardSpec),
        );
        // Infra failures leave their groups before anything is judged (infra-episodes.ts: shrunk).
        const signal = groupsWithSignal(
          config.estimator,
          toAdvantageBatch(scorableEpisodes(rewarded), { anchors: config.anchors }),
          advantageOptions(config),
        );
        const stored: Trajectory[] = [];
        for (let g = 0; g < tasks.length; g++) {
          const members = rewarded.slice(g * config.groupSize, (g + 1) * config.groupSize);
          const group = members[0].group ?? members[0].taskId;
          const scorable = scorableEpisodes(members);
          infraFailures += members.length - scorable.length;
          const keep =
            scorable.length > 0 &&
            (!config.dynamicSampling || signal.get(group) === true) &&
            kept.length < config.tasksPerStep;
          // Which episodes the update saw is part of the record (`info.rl`).
          const marked = members.map((trajectory) => ({
            ...trajectory,
            info: { ...trajectory.info, rl: { step, round, kept: keep && !isInfraFailure(trajectory) } },
          }));
          if (keep) kept.push(scorableEpisodes(marked));
          stored.push(...marked);
        }
        store.addTrajectories(runId, stored, { step });
        all.push(...stored);
        if (!config.dynamicSampling) break;
      }
    } finally {
      await policy.close();
    }
    const rolloutSeconds = (performance.now() - rolloutStart) / 1000;
    Object.assign(
      metrics,
      rolloutMetrics(scorableEpisodes(all), (id) => taskById.get(id)),
    );
    const allSignals = groupSignals(toAdvantageBatch(scorableEpisodes(all)));
    metrics[INFRA_FAILURES_METRIC] = infraFailures;
    metrics["rollout/zero_variance_group_fraction"] =
      allSignals.filter((signal) => !signal.outcomeSignal).length / Math.max(1, allSignals.length);
    metrics["rollout/kept_groups"] = kept.length;
    metrics["rollout/dropped_group_fraction"] = 1 - kept.length / Math.max(1, groupCount);
    metrics["rollout/extra_rollouts"] = extraEpisodes;

    // ---- 3–4. advantages and the PPO update ----
    const updateStart = performance.now();
    const learningRate = schedule(step - 1);
    let skippedReason: "nonfinite" | "no-signal" | null = null;
    const trajectories = kept.flat();
    if (trajectories.length === 0) {
      skippedReason = "no-signal";
    } else {
      // The critic's values of the kept episodes (GAE only), padded to the flattened length.
      const oldValues = critic
        ? await criticValues(state.params, model.config, trajectories, config.temperature)
        : undefined;
      const advantageBatch = toAdvantageBatch(trajectories, { anchors: config.anchors, values: oldValues });
      const result = computeAdvantages(config.estimator, advantageBatch, advantageOptions(config));
      if (oldValues && result.returns) {
        Object.assign(metrics, valueMetrics(trajectories, oldValues, result.returns));
      }
      const { "rollout/zero_variance_group_fraction": _kept, ...advantageStats } = advantageMetrics(
        advantageBatch,
        result,
      );
      Object.assign(metrics, advantageStats);
      const update: RlUpdateBatch = { step, trajectories, advantages: result.advantages };
      if (oldValues && result.returns) update.critic = { oldValues, returns: result.returns };
      if (reference) {
        const scored = await scoreTokens(
          reference,
          model.config,
          trajectories.map((trajectory) => trainingIds(trajectory, maxLen)),
          { temperature: config.temperature },
        );
        // Scores cover the ids cut to the context; pad back to the flattened length (masked there).
        update.refLogprobs = trajectories.map((trajectory, i) => {
          const row = new Float32Array(flattenTrajectory(trajectory).tokenIds.length);
          row.set(scored.logprobs[i]);
          return row;
        });
      }
      await options.transformBatch?.(update);

      // Keep the step's starting point until every update of the step is known finite.
      const before: State = {
        params: refTree(state.params),
        opt: refTree(state.opt as never),
        step: state.step,
      };
      const updates: Record<string, number>[] = [];
      const order = createRng(mixSeeds(mixSeeds(config.seed, step), 0x9b));
      let finite = true;
      let firstKl = Number.NaN;
      for (let epoch = 0; epoch < config.ppoEpochs && finite; epoch++) {
        const indices = order.shuffle(update.trajectories.map((_, i) => i));
        const size = Math.ceil(indices.length / config.miniBatches);
        for (let start = 0; start < indices.length && finite; start += size) {
          const chunk = indices.slice(start, start + size);
          const sequences = assembleSequences(
            chunk.map((i) => update.trajectories[i]),
            chunk.map((i) => update.advantages[i]),
            {
              aggregation: config.aggregation,
              normLength,
              maxLen,
              ...(update.refLogprobs ? { refLogprobs: chunk.map((i) => update.refLogprobs![i]) } : {}),
              ...(update.critic
                ? {
                    critic: {
                      oldValues: chunk.map((i) => update.critic!.oldValues[i]),
                      returns: chunk.map((i) => update.critic!.returns[i]),
                    },
                  }
                : {}),
            },
          );
          const [next, out] = await trainer.step(
            state,
            microBatches(sequences, maxLen, config.microBatchTokens),
            learningRate,
          );
          state = next;
          if (!Number.isFinite(out.loss) || !Number.isFinite(out.gradNorm)) finite = false;
          if (updates.length === 0) firstKl = out.metrics["policy/kl_old"];
          updates.push({ ...out.metrics, "loss/total": out.loss, "optim/grad_norm": out.gradNorm });
        }
      }
      if (finite) {
        disposeTree(before.params);
        disposeTree(before.opt as never);
        for (const key of Object.keys(updates[0])) metrics[key] = mean(updates.map((u) => u[key]));
        // Before any update the trainer's log-probs must equal the sampler's: ≈ 0 unless they disagree.
        metrics["policy/kl_sampler"] = firstKl;
        metrics["optim/updates"] = updates.length;
      } else {
        disposeTree(state.params);
        disposeTree(state.opt as never);
        state = before;
        skippedReason = "nonfinite";
      }
    }
    metrics["train/skipped_nonfinite"] = skippedReason === "nonfinite" ? 1 : 0;
    metrics["train/skipped_no_signal"] = skippedReason === "no-signal" ? 1 : 0;
    if (skippedReason === "nonfinite") skipped.nonfinite.push(step);
    if (skippedReason === "no-signal") skipped.noSignal.push(step);
    metrics["optim/learning_rate"] = learningRate;
    const updateSeconds = (performance.now() - updateStart) / 1000;
    const tokens = all.reduce((n, trajectory) => n + flattenTrajectory(trajectory).tokenIds.length, 0);
    metrics["perf/rollout_seconds"] = rolloutSeconds;
    metrics["perf/update_seconds"] = updateSeconds;
    metrics["perf/tokens_per_s"] = tokens / Math.max(1e-9, rolloutSeconds + updateSeconds);
    metrics["perf/episodes_per_s"] = all.length / Math.max(1e-9, rolloutSeconds + updateSeconds);
    store.addMetrics(runId, step, metrics);
    lastMetrics = metrics;
    rlStep = step;

    // ---- 5. live boundary, checkpoint, progress ----
    let warning: string | undefined;
    if (evalEvery > 0 && (step % evalEvery === 0 || step === config.steps)) {
      warning = await evaluateBoundary(step);
    }
    const aborted = options.signal?.aborted ?? false;
    if (step % config.checkpointEvery === 0 || step === config.steps || aborted) await save();
    options.onProgress?.({ step, steps: config.steps, metrics, warning });
    if (aborted && step < config.steps) {
      disposeTree(state.params);
      disposeTree(state.opt as never);
      if (reference) disposeTree(reference);
      trainer.dispose();
      throw new Error(`rl: aborted at step ${step}; --resume ${options.runDir} continues it`);
    }
  }

  // ---- the trained model ----------------------------------------------------------------------------
  const modelDir = config.out ?? join(options.runDir, RL_MODEL);
  const result: RlResult = {
    modelDir,
    steps: config.steps,
    startStep,
    episodes: store.countTrajectories(runId),
    infraFailures: store.metrics(runId, INFRA_FAILURES_METRIC).reduce((sum, point) => sum + point.value, 0),
    skipped,
    lastMetrics,
    boundary,
    sharpening,
    seconds: seconds(),
  };
  await saveModelCheckpoint(modelDir, {
    ...model,
    params: state.params,
    metadata: {
      name: config.name,
      kind: "rl",
      base: config.base,
      rlConfig: config as unknown as JsonValue,
      boundary: boundary as unknown as JsonValue,
    },
  });
  store.addArtifact(runId, { kind: "model", path: relative(options.runDir, modelDir), step: rlStep });
  disposeTree(state.params);
  disposeTree(state.opt as never);
  if (reference) disposeTree(reference);
  trainer.dispose();
  return result;
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
