/**
 * What an RL run (train.ts) resolves before its first step: where episodes come from (world tasks
 * with the config's noise and reward, or an `RlEnvironment`), and the model with its trainer, from
 * the base or resumed from the newest checkpoint. A resumed run first forgets everything recorded
 * after its checkpoint's step (`truncateAfterStep`), so after a kill -9 no trajectory is lost or
 * duplicated.
 */
import { join, relative } from "node:path";
import { mixSeeds } from "../core/random.ts";
import type { JsonValue } from "../engine/checkpoint.ts";
import { adamw } from "../engine/optim.ts";
import { createTrainer, type Trainer, type TrainState } from "../engine/train.ts";
import { disposeTree, type ParamTree } from "../engine/tree.ts";
import { DEFAULT_BUDGETS, runEpisodes } from "../env/run-episodes.ts";
import { worldToolsFor } from "../env/task-set.ts";
import { loadModelCheckpoint, saveModelCheckpoint } from "../policy/embedded/checkpoint.ts";
import type { GptConfig } from "../policy/embedded/config.ts";
import { EmbeddedPolicy } from "../policy/embedded/embedded-policy.ts";
import type { TokenBatch } from "../policy/embedded/index.ts";
import { tokenLoss } from "../policy/embedded/losses.ts";
import { type GptParams, initValueHead } from "../policy/embedded/model.ts";
import type { WordTokenizer } from "../policy/embedded/tokenizer.ts";
import { isHfBase } from "../policy/hf/spec.ts";
import { type RewardSpec, withRewards } from "../reward/index.ts";
import { toolSpec, uniformNoise } from "../tools/index.ts";
import type { Policy } from "../types/policy.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { checkAnswer } from "../world/index.ts";
import {
  CHECKPOINT_ARTIFACT,
  type RlTrainerState,
  removeCheckpointsAfter,
  saveRlCheckpoint,
} from "./checkpoints.ts";
import type { RlConfig } from "./config.ts";
import { ppoLoss } from "./loss.ts";
import type { RlTrainState } from "./ppo-update.ts";
import type { RolloutEnvironment } from "./rollout-step.ts";
import { taskSamplerFor } from "./tasks.ts";
import type { TrainRlOptions } from "./train.ts";
import { gptCriticScorer, gptReferenceScorer, type SequenceScorer } from "./update-batch.ts";

/**
 * The optimizer's learning-rate scale of a run with a critic: `valueLearningRateScale` on the value
 * head's leaves (`value.*`), 1 elsewhere (the lab's GPT and a Hugging Face checkpoint alike).
 */
export function valueHeadLearningRateScale(config: RlConfig): (path: string) => number {
  return (path) => (path.startsWith("value.") ? config.valueLearningRateScale : 1);
}

/** The run's rollout environment: `options.env`'s parts where given, world tasks otherwise. */
export function rolloutEnvironment(options: TrainRlOptions): RolloutEnvironment {
  const { config, env } = options;
  const rewardSpec = config.reward as RewardSpec | string;
  const noise = typeof config.noise === "number" ? uniformNoise(config.noise) : config.noise;
  return {
    tools: env?.tools ?? worldToolsFor({ noise }),
    sampler: env?.sampler ?? taskSamplerFor({ ...config, seed: mixSeeds(config.seed, 0x7a51) }),
    verify: env?.verify ?? checkAnswer,
    reward: env
      ? (trajectory, task) => env.reward(trajectory, task)
      : (trajectory, task) => withRewards(trajectory, task, rewardSpec),
    budgets: { ...DEFAULT_BUDGETS, ...config.budgets },
    rollout: (rolloutOptions) => (options.rollout ?? runEpisodes)(rolloutOptions),
  };
}

/**
 * The model side of a run, whatever the model (the lab's GPT here, a Hugging Face checkpoint with
 * LoRA in hf-training.ts): the trainer and its state, where it resumes, the step's rollout policy,
 * and how checkpoints and the trained model are written. The loop (train.ts) sees only this.
 */
export interface RlTraining<P extends ParamTree = ParamTree> {
  trainer: Trainer<P, TokenBatch>;
  state: TrainState<P>;
  /** RL steps already done (0, or the checkpoint's step). */
  rlStep: number;
  /** Training seconds of earlier processes of a resumed run. */
  secondsBefore: number;
  /** Longest token sequence trained on (episodes are cut to it). */
  maxLen: number;
  /** The lab's GPT (boundary tracking); null for another model. */
  embedded: { model: { config: GptConfig; tokenizer: WordTokenizer } } | null;
  /** The critic of `params` (its value head's values, GAE's V_old); null without one (any estimator but `gae`). */
  critic: ((params: P) => SequenceScorer) | null;
  /** The KL term's reference (the base) as a scorer; null without a KL term. */
  reference: SequenceScorer | null;
  /** The policy of step `step`'s rollouts on `params` (closed by the caller). */
  rolloutPolicy(step: number, params: P): RolloutPolicy | Promise<RolloutPolicy>;
  /** A resumable checkpoint at `trainer.rlStep` (registered as a `checkpoint` artifact). */
  saveCheckpoint(state: TrainState<P>, trainer: RlTrainerState): Promise<void>;
  /** The trained model at `modelDir` (registered as the run's `model` artifact). */
  saveModel(modelDir: string, params: P, rlStep: number, metadata: Record<string, JsonValue>): Promise<void>;
  /** Frees the state, the reference and the compiled programs. */
  release(state: TrainState<P>): void;
}

/** A rollout policy and, where the stored ids are not what the model read, the rewrite to them. */
export interface RolloutPolicy {
  policy: Policy;
  /** The trajectory with the token ids the model conditioned on (a chat template's); identity when absent. */
  exactIds?: (trajectory: Trajectory) => Trajectory;
}

/**
 * Loads the base (or the newest checkpoint, with its optimizer state), adds a zero value head for
 * `gae` when the checkpoint has none, builds the trainer, forgets what a killed process recorded
 * after the checkpoint (or everything, without one), and records the tool specs once.
 */
export async function openTraining(
  options: TrainRlOptions,
  environment: RolloutEnvironment,
): Promise<RlTraining> {
  if (isHfBase(options.config.base)) {
    const { openHfTraining } = await import("./hf-training.ts");
    return (await openHfTraining(options, environment)) as unknown as RlTraining;
  }
  return (await openEmbeddedTraining(options, environment)) as unknown as RlTraining;
}

/** Forgets what a killed process recorded after `rlStep` (or everything, from 0), and records the tool specs once. */
export function startRecording(
  options: TrainRlOptions,
  environment: RolloutEnvironment,
  rlStep: number,
): void {
  const { config, store, runId } = options;
  store.truncateAfterStep(runId, rlStep);
  removeCheckpointsAfter(options.runDir, rlStep);
  if (!store.toolSpecs(runId)) {
    const [task] = environment.sampler.draw(0, 0, 1);
    store.setToolSpecs(runId, environment.tools(task, config.seed).map(toolSpec));
  }
}

async function openEmbeddedTraining(
  options: TrainRlOptions,
  environment: RolloutEnvironment,
): Promise<RlTraining<GptParams>> {
  const { config, store, runId } = options;
  const latest = store.latestArtifact(runId, CHECKPOINT_ARTIFACT);
  const loaded = await loadModelCheckpoint(latest ? join(options.runDir, latest.path) : config.base);
  const model = { config: loaded.config, tokenizer: loaded.tokenizer };
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
      learningRateScale: valueHeadLearningRateScale(config),
    }),
    maxGradNorm: config.maxGradNorm,
  });
  let state: RlTrainState;
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
  // Forget whatever a killed process recorded after the checkpoint (or everything, without one).
  startRecording(options, environment, rlStep);
  const reference = config.klCoef > 0 ? (await loadModelCheckpoint(config.base)).params : null;
  return {
    trainer,
    state,
    rlStep,
    secondsBefore,
    maxLen: model.config.maxLen,
    embedded: { model },
    critic: critic ? (params) => gptCriticScorer(params, model.config, config.temperature) : null,
    reference: reference && gptReferenceScorer(reference, model.config, config.temperature),
    rolloutPolicy: (step, params) => ({
      policy: new EmbeddedPolicy(
        { ...model, params },
        {
          temperature: config.temperature,
          capacity: Math.min(config.rolloutBatch, config.tasksPerStep * config.groupSize),
          seed: mixSeeds(config.seed, step),
          id: `rl:${config.name}@${step - 1}`,
        },
      ),
    }),
    saveCheckpoint: async (current, trainerState) => {
      await saveRlCheckpoint({
        runDir: options.runDir,
        store,
        runId,
        model,
        params: current.params,
        opt: current.opt,
        optimizerStep: current.step,
        trainer: trainerState,
        metadata: { rlConfig: config as unknown as JsonValue, base: config.base },
        keep: config.keepCheckpoints,
      });
    },
    saveModel: async (modelDir, params, rlStep, metadata) => {
      await saveModelCheckpoint(modelDir, { ...model, params, metadata });
      store.addArtifact(runId, { kind: "model", path: relative(options.runDir, modelDir), step: rlStep });
    },
    release: (current) => {
      disposeTree(current.params);
      disposeTree(current.opt as never);
      if (reference) disposeTree(reference);
      trainer.dispose();
    },
  };
}
