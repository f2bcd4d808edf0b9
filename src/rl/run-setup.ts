/**
 * What an RL run (train.ts) resolves before its first step: where episodes come from (world tasks
 * with the config's noise and reward, or an `RlEnvironment`), and the model with its trainer, from
 * the base or resumed from the newest checkpoint. A resumed run first forgets everything recorded
 * after its checkpoint's step (`truncateAfterStep`), so after a kill -9 no trajectory is lost or
 * duplicated.
 */
import { join } from "node:path";
import { mixSeeds } from "../core/random.ts";
import { adamw } from "../engine/optim.ts";
import { createTrainer } from "../engine/train.ts";
import { disposeTree } from "../engine/tree.ts";
import { DEFAULT_BUDGETS, runEpisodes } from "../env/run-episodes.ts";
import { worldToolsFor } from "../env/task-set.ts";
import { loadModelCheckpoint } from "../policy/embedded/checkpoint.ts";
import type { GptConfig } from "../policy/embedded/config.ts";
import type { TokenBatch } from "../policy/embedded/index.ts";
import { tokenLoss } from "../policy/embedded/losses.ts";
import { type GptParams, initValueHead } from "../policy/embedded/model.ts";
import type { WordTokenizer } from "../policy/embedded/tokenizer.ts";
import { type RewardSpec, withRewards } from "../reward/index.ts";
import { toolSpec, uniformNoise } from "../tools/index.ts";
import { checkAnswer } from "../world/index.ts";
import { CHECKPOINT_ARTIFACT, type RlTrainerState, removeCheckpointsAfter } from "./checkpoints.ts";
import { ppoLoss } from "./loss.ts";
import type { RlTrainer, RlTrainState } from "./ppo-update.ts";
import type { RolloutEnvironment } from "./rollout-step.ts";
import { taskSamplerFor } from "./tasks.ts";
import type { TrainRlOptions } from "./train.ts";

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

/** The model and trainer of a run, where it resumes, and the KL reference. */
export interface RlTraining {
  model: { config: GptConfig; tokenizer: WordTokenizer };
  trainer: RlTrainer;
  state: RlTrainState;
  /** RL steps already done (0, or the checkpoint's step). */
  rlStep: number;
  /** Training seconds of earlier processes of a resumed run. */
  secondsBefore: number;
  /** The base model's params when the loss has a KL term, else null. */
  reference: GptParams | null;
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
      learningRateScale: (path) => (path.startsWith("value.") ? config.valueLearningRateScale : 1),
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
  store.truncateAfterStep(runId, rlStep);
  removeCheckpointsAfter(options.runDir, rlStep);
  if (!store.toolSpecs(runId)) {
    const [task] = environment.sampler.draw(0, 0, 1);
    store.setToolSpecs(runId, environment.tools(task, config.seed).map(toolSpec));
  }
  const reference = config.klCoef > 0 ? (await loadModelCheckpoint(config.base)).params : null;
  return { model, trainer, state, rlStep, secondsBefore, reference };
}
