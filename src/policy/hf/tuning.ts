/**
 * The two ways `train rl` and `train sft` train a Hugging Face checkpoint, behind one seam, so the
 * loops (rl/hf-training.ts, sft/hf-model.ts) hold no per-kind branches:
 *
 * - `lora` (a `LoraSettings` object, PEFT's defaults for what it leaves out): an adapter on the
 *   frozen base (lora-trainer.ts `createLoraTrainer`); checkpoints are PEFT adapter folders, the
 *   trained model is the adapter and the merged folder; the engine serves the base with the
 *   adapter unmerged, its decode programs baking the frozen weights in.
 * - `full` (`lora: false`, the CLI's `--full-finetune`): every weight trained
 *   (`createFullTrainer`); checkpoints and the trained model are checkpoint folders transformers
 *   loads (peft.ts `writeHfCheckpoint`); the engine takes the step's weights as inputs
 *   (`trainedWeights`: nothing baked, the programs reused from step to step).
 *
 * The loss is one function for both (token-loss.ts `hfTokenLossOf`). With a critic (the loss
 * option `values`: `gae`) the trained tree also carries a value head under `value` (value-head.ts:
 * zeros at the start, saved beside a checkpoint as `value_head.safetensors`, resumed with its
 * moments); the engine, the adapter and the model folders never see it.
 */
import type { JsonValue } from "../../engine/checkpoint.ts";
import { random } from "../../engine/jax.ts";
import type { Trainer, TrainState } from "../../engine/train.ts";
import { type HostTensor, type ParamTree, treeToHost } from "../../engine/tree.ts";
import type { TokenBatch } from "../embedded/losses.ts";
import { HfEngineModel } from "./engine.ts";
import { initLora, type LoraParams, type LoraSettings, resolveLoraConfig } from "./lora.ts";
import {
  loadFullCheckpoint,
  loadLoraCheckpoint,
  saveFullCheckpoint,
  saveLoraCheckpoint,
} from "./lora-checkpoint.ts";
import { createFullTrainer, createLoraTrainer, fullParams, type LoraTrainerOptions } from "./lora-trainer.ts";
import type { HfParams } from "./model.ts";
import { type HfWriteOptions, writeHfCheckpoint, writeMergedCheckpoint, writePeftAdapter } from "./peft.ts";
import type { WithValueHead } from "./token-loss.ts";
import { initHfValueHead, splitValueHead } from "./value-head.ts";
import type { HfCheckpoint } from "./weights.ts";

/** A config's `lora` field: LoRA settings (absent: PEFT's defaults), or false for full fine-tuning. */
export type HfTuningSetting = LoraSettings | false | undefined;

export interface HfTuning<P extends ParamTree = ParamTree> {
  kind: "lora" | "full";
  trainer: Trainer<P, TokenBatch>;
  /** A fresh state: PEFT's init of the adapter (from `seed`), or the checkpoint's weights. */
  init(seed: number): TrainState<P>;
  /** A checkpoint's train state and the caller's JSON state. */
  load(dir: string): Promise<{ state: TrainState<P>; trainer: JsonValue }>;
  /** Writes a resumable checkpoint (atomically). Does not consume the state. */
  save(dir: string, state: TrainState<P>, trainer: JsonValue): Promise<void>;
  /** An engine model of the trained model at `params` (does not consume them). */
  engine(params: P, maxLen: number): Promise<HfEngineModel>;
  /**
   * Writes the trained model to `modelDir` (missing or empty), and with LoRA the adapter to
   * `adapterDir` (float32); returns whether an adapter was written. The model folder is in
   * `options.dtype` (default: the base's own). The value head is in neither.
   */
  saveModel(modelDir: string, params: P, adapterDir: string, options?: HfWriteOptions): Promise<boolean>;
  /** The value head of `params` as host arrays (`w` [D], `b` [1]), for `HfEngineModel.sequenceValues`; null without a critic. */
  valueHead(params: P): Promise<{ w: Float32Array; b: Float32Array } | null>;
}

/**
 * The training of `checkpoint` (read from `folder`) that `setting` asks for; with
 * `options.lossOptions.values` (a critic) the trained tree carries a value head.
 */
export function openHfTuning(
  checkpoint: HfCheckpoint,
  folder: string,
  setting: HfTuningSetting,
  options: LoraTrainerOptions,
): HfTuning {
  return (setting === false
    ? fullTuning(checkpoint, options)
    : loraTuning(checkpoint, folder, setting ?? {}, options)) as unknown as HfTuning;
}

/** A trained tree's host tensors without its value head. Does not consume the tree. */
async function hostWithoutHead(params: ParamTree): Promise<Record<string, HostTensor>> {
  return splitValueHead(await treeToHost(params)).rest;
}

/** The parts shared by both kinds: a fresh head for `init`, the head read for the scorer, the check on `load`. */
function criticParts(checkpoint: HfCheckpoint, options: LoraTrainerOptions) {
  const critic = options.lossOptions?.values ?? false;
  return {
    withHead: <P extends object>(params: P): WithValueHead<P> =>
      critic ? { ...params, value: initHfValueHead(checkpoint.config) } : params,
    checkLoaded: <P extends object>(dir: string, params: WithValueHead<P>) => {
      if (critic && !params.value)
        throw new Error(
          `${dir}: no value head (value_head.safetensors): cannot resume a run with a critic (gae) from it`,
        );
    },
    valueHead: async (params: WithValueHead<object>) => {
      if (!critic || !params.value) return null;
      const host = await treeToHost(params.value);
      return { w: host.w.data as Float32Array, b: host.b.data as Float32Array };
    },
  };
}

function loraTuning(
  checkpoint: HfCheckpoint,
  folder: string,
  settings: LoraSettings,
  options: LoraTrainerOptions,
): HfTuning<LoraParams> {
  const model = checkpoint.config;
  const lora = resolveLoraConfig(settings, model);
  const trainer = createLoraTrainer(checkpoint, lora, options);
  const critic = criticParts(checkpoint, options);
  return {
    kind: "lora",
    trainer,
    init: (seed) => trainer.init(critic.withHead(initLora(lora, model, random.key(seed >>> 0)))),
    load: async (dir) => {
      const loaded = await loadLoraCheckpoint(dir, model);
      critic.checkLoaded(dir, loaded.state.params);
      return loaded;
    },
    save: (dir, state, trainerState) =>
      saveLoraCheckpoint(dir, state, { lora, model, baseFolder: folder, trainer: trainerState }),
    engine: async (params, maxLen) =>
      new HfEngineModel(checkpoint, {
        maxLen,
        lora: { config: lora, tensors: await hostWithoutHead(params) },
      }),
    saveModel: async (modelDir, params, adapterDir, saveOptions) => {
      const host = await hostWithoutHead(params);
      await writePeftAdapter(adapterDir, host, lora, model, folder);
      await writeMergedCheckpoint(checkpoint, host, lora, modelDir, saveOptions);
      return true;
    },
    valueHead: critic.valueHead,
  };
}

function fullTuning(checkpoint: HfCheckpoint, options: LoraTrainerOptions): HfTuning<HfParams> {
  const trainer = createFullTrainer(checkpoint, options);
  const critic = criticParts(checkpoint, options);
  return {
    kind: "full",
    trainer,
    init: () => trainer.init(critic.withHead(fullParams(checkpoint))),
    load: async (dir) => {
      const loaded = await loadFullCheckpoint(dir);
      critic.checkLoaded(dir, loaded.state.params);
      return loaded;
    },
    save: (dir, state, trainerState) =>
      saveFullCheckpoint(dir, state, { base: checkpoint, trainer: trainerState }),
    engine: async (params, maxLen) =>
      new HfEngineModel(
        { ...checkpoint, tensors: await hostWithoutHead(params) },
        { maxLen, trainedWeights: true },
      ),
    saveModel: async (modelDir, params, _adapterDir, saveOptions) => {
      await writeHfCheckpoint(checkpoint, await hostWithoutHead(params), modelDir, saveOptions);
      return false;
    },
    valueHead: critic.valueHead,
  };
}
