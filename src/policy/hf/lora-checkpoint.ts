/**
 * Resumable training checkpoints of a Hugging Face base, with the trainer's state beside the
 * weights in `trainer/` (an agentrl checkpoint: AdamW's moments, the optimizer step and the
 * caller's JSON state, checksummed). A save is atomic (written beside, then swapped in); callers
 * register it after. Two kinds, one layout of the trainer state:
 *
 * - LoRA: a PEFT adapter folder (`adapter_config.json` + `adapter_model.safetensors`,
 *   base_model_name_or_path = the base folder, loadable by `peft` and by `hf:<this folder>`);
 * - full fine-tuning: a checkpoint folder as transformers saves it (config.json,
 *   model.safetensors, the base's tokenizer and template files: peft.ts `writeHfCheckpoint`),
 *   loadable by `from_pretrained` and by `hf:<this folder>`; `trainer/` holds the moments of every
 *   weight (twice the weights' size).
 *
 * A run with a critic (`gae`) has a value head in its trained tree: it is written beside either
 * kind as `value_head.safetensors` (value-head.ts; TRL's `v_head.summary` names), never into the
 * adapter or model.safetensors, and its AdamW moments are in `trainer/` with the others; loading
 * puts it back under `value`.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  type JsonValue,
  loadCheckpoint,
  saveCheckpoint,
  writeFolderAtomically,
} from "../../engine/checkpoint.ts";
import type { AdamWState } from "../../engine/optim.ts";
import type { TrainState } from "../../engine/train.ts";
import {
  arrayFromHost,
  flattenTree,
  type ParamTree,
  treeFromHost,
  treeToHost,
  unflattenTree,
} from "../../engine/tree.ts";
import type { HfModelConfig } from "./config.ts";
import type { LoraConfig, LoraParams } from "./lora.ts";
import type { HfParams } from "./model.ts";
import { readPeftAdapter, writeHfCheckpoint, writePeftAdapter } from "./peft.ts";
import { readValueHead, splitValueHead, writeValueHead } from "./value-head.ts";
import { type HfCheckpoint, loadHfCheckpoint } from "./weights.ts";

export const LORA_TRAINER_DIR = "trainer";
const KIND = "agentrl-hf-lora-trainer";
const FULL_KIND = "agentrl-hf-full-trainer";

/** Writes the optimizer state and the caller's JSON state into `dir/trainer`. */
async function saveTrainerState(
  dir: string,
  state: TrainState<ParamTree>,
  kind: string,
  trainer: JsonValue,
): Promise<void> {
  await saveCheckpoint(join(dir, LORA_TRAINER_DIR), {
    manifest: { kind, optimizerStep: state.step, state: trainer },
    tensors: { optimizer: await treeToHost(state.opt as never) },
  });
}

/** Reads `dir/trainer` back around `params`: the train state and the caller's JSON state. */
async function loadTrainerState<P extends ParamTree>(
  dir: string,
  params: P,
  kind: string,
): Promise<{ state: TrainState<P>; trainer: JsonValue }> {
  const saved = await loadCheckpoint(join(dir, LORA_TRAINER_DIR));
  if (saved.manifest.kind !== kind)
    throw new Error(`${dir}/${LORA_TRAINER_DIR}: not a ${kind} state (kind ${saved.manifest.kind})`);
  // The moments rebuilt in the params' key order (a file's keys are sorted; a tree's leaf order is
  // its insertion order, and the compiled step pairs leaves by position).
  const moments = saved.tensors.optimizer;
  const like = (prefix: string) =>
    unflattenTree(
      flattenTree(params).map(([path]) => {
        const tensor = moments[`${prefix}.${path}`];
        if (!tensor) throw new Error(`${dir}/${LORA_TRAINER_DIR}: no optimizer tensor ${prefix}.${path}`);
        return [path, arrayFromHost(tensor)];
      }),
    );
  return {
    state: {
      params,
      opt: { count: arrayFromHost(moments.count), mu: like("mu"), nu: like("nu") } as AdamWState<P>,
      step: saved.manifest.optimizerStep as number,
    },
    trainer: saved.manifest.state,
  };
}

/**
 * Writes `dir` (replacing it): the whole folder is written beside it and swapped in, so `dir` is
 * always a complete checkpoint, the old or the new. Does not consume the state's arrays.
 */
export async function saveLoraCheckpoint(
  dir: string,
  state: TrainState<LoraParams>,
  options: { lora: LoraConfig; model: HfModelConfig; baseFolder: string; trainer: JsonValue },
): Promise<void> {
  await writeFolderAtomically(dir, async (temporary) => {
    const { head, rest } = splitValueHead(await treeToHost(state.params));
    await writePeftAdapter(temporary, rest, options.lora, options.model, options.baseFolder);
    if (head) await writeValueHead(temporary, head);
    await saveTrainerState(temporary, state as TrainState<ParamTree>, KIND, options.trainer);
  });
}

/** True when `dir` holds a complete checkpoint, LoRA or full (its trainer state was written). */
export function isHfTrainerCheckpoint(dir: string): boolean {
  return existsSync(join(dir, LORA_TRAINER_DIR, "checkpoint.json"));
}

/**
 * Reads a checkpoint back: the adapter as params (with the value head under `value` when the
 * checkpoint has one), the optimizer state, and the caller's JSON state.
 */
export async function loadLoraCheckpoint(
  dir: string,
  model: HfModelConfig,
): Promise<{ state: TrainState<LoraParams>; lora: LoraConfig; trainer: JsonValue }> {
  const adapter = await readPeftAdapter(dir, model);
  const tensors = { ...adapter.tensors, ...readValueHead(dir, model) };
  const loaded = await loadTrainerState(dir, treeFromHost<LoraParams>(tensors), KIND);
  return { ...loaded, lora: adapter.config };
}

/**
 * Writes a full fine-tuning checkpoint `dir` (replacing it, atomically as above): the weights as a
 * checkpoint folder of `base`'s architecture and files, the trainer's state in `trainer/`. Does
 * not consume the state's arrays.
 */
export async function saveFullCheckpoint(
  dir: string,
  state: TrainState<HfParams>,
  options: { base: HfCheckpoint; trainer: JsonValue },
): Promise<void> {
  await writeFolderAtomically(dir, async (temporary) => {
    const { head, rest } = splitValueHead(await treeToHost(state.params));
    await writeHfCheckpoint(options.base, rest, temporary, { dtype: "float32" });
    if (head) await writeValueHead(temporary, head);
    await saveTrainerState(temporary, state as TrainState<ParamTree>, FULL_KIND, options.trainer);
  });
}

/**
 * Reads a full fine-tuning checkpoint back: the weights (with the value head under `value` when
 * the checkpoint has one), the optimizer state, the caller's state.
 */
export async function loadFullCheckpoint(
  dir: string,
): Promise<{ state: TrainState<HfParams>; trainer: JsonValue }> {
  const checkpoint = loadHfCheckpoint(dir);
  const tensors = { ...checkpoint.tensors, ...readValueHead(dir, checkpoint.config) };
  return loadTrainerState(dir, treeFromHost<HfParams>(tensors), FULL_KIND);
}
