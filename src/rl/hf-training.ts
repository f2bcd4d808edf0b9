/**
 * The model side of `train rl` on a Hugging Face checkpoint (`base: "hf:<folder>"`), with LoRA
 * (`lora` settings: the base's weights stay frozen, held once on the host for the rollout engine
 * and the trainer, and the adapter, PEFT's init, is the only trained tree) or full fine-tuning
 * (`lora: false`: every weight trained), policy/hf/tuning.ts's seam; the loop, the estimators, the
 * PPO loss, dynamic sampling, failure classes, metrics and resume are the lab's (train.ts), through
 * the `RlTraining` seam (run-setup.ts).
 *
 * - Rollouts: each step the HfPolicy (policy.ts: chat template, tokenizer, tool-call parser) on
 *   the engine with the step's weights: the adapter applied unmerged (engine.ts `lora`), or the
 *   fully trained weights as inputs (`trainedWeights`); either way the compiled programs are
 *   reused across steps. Trajectories are stored with the ids the model read (fed-ids.ts), so the
 *   trainer's log-probs are the sampler's (`policy/kl_sampler` ≈ 0).
 * - Update: the HF token loss (token-loss.ts) with the lab's ppoLoss through createTrainer
 *   (lora-trainer.ts). With a KL term the reference is the base as loaded (without the adapter,
 *   or the weights before any step), scoring on the engine.
 * - Critic (`gae`, MT-PPO): a value head (policy/hf/value-head.ts: V = h·w + b on the final normed
 *   hidden state, TRL's `v_head.summary`, zeros at the start) trained beside the adapter or the
 *   weights with the lab's clipped value loss and settings (`valueCoef`, `valueClip`,
 *   `valueGradient`: without it the value loss stops at the head and reaches neither the adapter
 *   nor the weights; `valueLearningRateScale` on the head's leaves, as the lab's). Before each
 *   update the kept episodes are scored for V_old by the engine with the params they were sampled
 *   with (`HfEngineModel.sequenceValues`, the same forward as the scoring of log-probs).
 * - Checkpoints: `<run>/checkpoints/step-N/` is a PEFT adapter folder, or a full checkpoint
 *   folder, with the trainer's state in `trainer/` (lora-checkpoint.ts), and with a critic its
 *   value head in `value_head.safetensors`; the newest one resumes the run.
 * - The trained model: with LoRA the adapter in `<run>/adapter` and the base with it merged in
 *   `<run>/model` (or `out`); fully fine-tuned, the checkpoint folder in `<run>/model`: a plain
 *   checkpoint folder transformers, vLLM and `hf:` load.
 * - Memory: every step logs `memory/peak_rss_mb` (train.ts), the process's peak resident set.
 */
import { existsSync, rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { mixSeeds } from "../core/random.ts";
import type { JsonValue } from "../engine/checkpoint.ts";
import { disposeTree, type ParamTree } from "../engine/tree.ts";
import { dropSpareCaches } from "../policy/embedded/host-kv.ts";
import { HfEngineModel } from "../policy/hf/engine.ts";
import { withFedIds } from "../policy/hf/fed-ids.ts";
import { loadHfTextSide } from "../policy/hf/load.ts";
import { isHfTrainerCheckpoint } from "../policy/hf/lora-checkpoint.ts";
import { HfPolicy } from "../policy/hf/policy.ts";
import { parseHfSpec } from "../policy/hf/spec.ts";
import { openHfTuning } from "../policy/hf/tuning.ts";
import { loadHfCheckpoint } from "../policy/hf/weights.ts";
import {
  CHECKPOINT_ARTIFACT,
  checkpointDirName,
  paramsFinite,
  pruneCheckpoints,
  RL_ADAPTER,
  RL_CHECKPOINTS,
  type RlTrainerState,
} from "./checkpoints.ts";
import { ppoLoss } from "./loss.ts";
import type { RolloutEnvironment } from "./rollout-step.ts";
import { type RlTraining, startRecording, valueHeadLearningRateScale } from "./run-setup.ts";
import type { TrainRlOptions } from "./train.ts";

/** The run's provenance (name, base, config) beside the merged weights (transformers ignores it). */
export const TRAINING_FILE = "agentrl-training.json";

export async function openHfTraining(
  options: TrainRlOptions,
  environment: RolloutEnvironment,
): Promise<RlTraining<ParamTree>> {
  const { config, store, runId } = options;
  const folder = resolve(parseHfSpec(config.base)!);
  const checkpoint = loadHfCheckpoint(folder);
  const text = await loadHfTextSide(folder, checkpoint.config.modelType);
  const critic = config.estimator === "gae";
  const tuning = openHfTuning(checkpoint, folder, config.lora, {
    loss: ppoLoss({
      clipLow: config.clipLow,
      clipHigh: config.clipHigh,
      klCoef: config.klCoef,
      klEstimator: config.klEstimator,
      entropyCoef: config.entropyCoef,
      valueCoef: critic ? config.valueCoef : 0,
      valueClip: config.valueClip,
    }),
    lossOptions: {
      temperature: config.temperature,
      entropy: true,
      values: critic,
      valueGradient: config.valueGradient,
    },
    optimizer: { weightDecay: config.weightDecay, learningRateScale: valueHeadLearningRateScale(config) },
    maxGradNorm: config.maxGradNorm,
    seed: config.seed,
  });
  const trainer = tuning.trainer;
  const latest = store.latestArtifact(runId, CHECKPOINT_ARTIFACT);
  let state: RlTraining<ParamTree>["state"];
  let rlStep = 0;
  let secondsBefore = 0;
  if (latest) {
    const dir = join(options.runDir, latest.path);
    if (!isHfTrainerCheckpoint(dir)) throw new Error(`${latest.path} has no trainer state: cannot resume`);
    const loaded = await tuning.load(dir);
    const saved = loaded.trainer as unknown as RlTrainerState;
    state = loaded.state;
    rlStep = saved.rlStep;
    secondsBefore = saved.seconds;
  } else {
    state = tuning.init(mixSeeds(config.seed, 0x10a));
  }
  startRecording(options, environment, rlStep);
  // Context of the rollouts and of training: the model's, up to the engine's default.
  const probe = new HfEngineModel(checkpoint);
  const maxLen = probe.maxLen;
  probe.dispose();
  // The KL term's reference: the base as loaded (without the adapter), scoring on the engine.
  const reference = config.klCoef > 0 ? new HfEngineModel(checkpoint, { maxLen }) : null;

  return {
    trainer,
    state,
    rlStep,
    secondsBefore,
    maxLen,
    embedded: null,
    // GAE's V_old: the value head on the engine model of the params the episodes were sampled with.
    critic: critic
      ? (params) => async (sequences) => {
          const model = await tuning.engine(params, maxLen);
          try {
            return model.sequenceValues(sequences, (await tuning.valueHead(params))!);
          } finally {
            model.dispose();
          }
        }
      : null,
    reference: reference && (async (sequences) => reference.sequenceLogprobs(sequences, config.temperature)),
    rolloutPolicy: async (step, params) => {
      const model = await tuning.engine(params, maxLen);
      const policy = new HfPolicy(model, text, {
        temperature: config.temperature,
        topP: 1,
        capacity: Math.min(config.rolloutBatch, config.tasksPerStep * config.groupSize),
        seed: mixSeeds(config.seed, step),
        id: `rl:${config.name}@${step - 1}`,
        recordContexts: true,
      });
      return {
        policy: {
          id: policy.id,
          protocol: policy.protocol,
          tokenizer: policy.tokenizer,
          act: (contexts, actOptions) => policy.act(contexts, actOptions),
          promptIds: (context) => policy.promptIds(context),
          release: (ids) => policy.release(ids),
          close: async () => {
            await policy.close();
            model.dispose();
          },
        },
        exactIds: (trajectory) => {
          const contexts = policy.takeContexts(trajectory.id);
          return contexts ? withFedIds(trajectory, contexts) : trajectory;
        },
      };
    },
    saveCheckpoint: async (current, trainerState) => {
      if (!(await paramsFinite(current.params)))
        throw new Error(
          `rl: params are not finite at step ${trainerState.rlStep}; the checkpoint was not written`,
        );
      const path = join(RL_CHECKPOINTS, checkpointDirName(trainerState.rlStep));
      await tuning.save(join(options.runDir, path), current, trainerState as unknown as JsonValue);
      store.addArtifact(runId, { kind: CHECKPOINT_ARTIFACT, path, step: trainerState.rlStep });
      if (config.keepCheckpoints > 0)
        pruneCheckpoints(join(options.runDir, RL_CHECKPOINTS), config.keepCheckpoints);
    },
    saveModel: async (modelDir, params, step, metadata) => {
      // Sampling is over: the merge's float32 copies may take the cache buffers' memory.
      dropSpareCaches();
      // A run resumed after it finished writes its model again.
      if (existsSync(modelDir) && !config.out) rmSync(modelDir, { recursive: true, force: true });
      if (
        await tuning.saveModel(modelDir, params, join(options.runDir, RL_ADAPTER), {
          dtype: config.saveDtype,
        })
      )
        store.addArtifact(runId, { kind: "adapter", path: RL_ADAPTER, step });
      store.addArtifact(runId, { kind: "model", path: relative(options.runDir, modelDir), step });
      await writeFile(join(modelDir, TRAINING_FILE), `${JSON.stringify(metadata, null, 2)}\n`);
    },
    release: (current) => {
      disposeTree(current.params as never);
      disposeTree(current.opt as never);
      trainer.dispose();
      reference?.dispose();
    },
  };
}
