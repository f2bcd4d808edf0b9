/**
 * A resumable LoRA training checkpoint of a Hugging Face base: a PEFT adapter folder
 * (`adapter_config.json` + `adapter_model.safetensors`, base_model_name_or_path = the base folder,
 * loadable by `peft` and by `hf:<this folder>`), with the trainer's state beside it in `trainer/`
 * (an agentrl checkpoint: AdamW's moments, the optimizer step and the caller's JSON state,
 * checksummed). A save is atomic (written beside, then swapped in); callers register it after.
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
import { arrayFromHost, flattenTree, treeFromHost, treeToHost, unflattenTree } from "../../engine/tree.ts";
import type { HfModelConfig } from "./config.ts";
import type { LoraConfig, LoraParams } from "./lora.ts";
import { readPeftAdapter, writePeftAdapter } from "./peft.ts";

export const LORA_TRAINER_DIR = "trainer";
const KIND = "agentrl-hf-lora-trainer";

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
    const params = await treeToHost(state.params);
    await writePeftAdapter(temporary, params, options.lora, options.model, options.baseFolder);
    await saveCheckpoint(join(temporary, LORA_TRAINER_DIR), {
      manifest: { kind: KIND, optimizerStep: state.step, state: options.trainer },
      tensors: { optimizer: await treeToHost(state.opt as never) },
    });
  });
}

/** True when `dir` holds a complete checkpoint (its trainer state was written). */
export function isLoraCheckpoint(dir: string): boolean {
  return existsSync(join(dir, LORA_TRAINER_DIR, "checkpoint.json"));
}

/** Reads a checkpoint back: the adapter as params, the optimizer state, and the caller's JSON state. */
export async function loadLoraCheckpoint(
  dir: string,
  model: HfModelConfig,
): Promise<{ state: TrainState<LoraParams>; lora: LoraConfig; trainer: JsonValue }> {
  const adapter = await readPeftAdapter(dir, model);
  const saved = await loadCheckpoint(join(dir, LORA_TRAINER_DIR));
  if (saved.manifest.kind !== KIND)
    throw new Error(`${dir}/${LORA_TRAINER_DIR}: not a LoRA trainer state (kind ${saved.manifest.kind})`);
  const params = treeFromHost<LoraParams>(adapter.tensors);
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
      opt: { count: arrayFromHost(moments.count), mu: like("mu"), nu: like("nu") } as AdamWState<LoraParams>,
      step: saved.manifest.optimizerStep as number,
    },
    lora: adapter.config,
    trainer: saved.manifest.state,
  };
}
