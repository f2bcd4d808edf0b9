/**
 * The critic's value head of a Hugging Face checkpoint in training (`train rl --estimator gae`):
 * the lab's `ValueHeadParams` (V = h·w + b on the final normed hidden state, embedded/model.ts),
 * which TRL's `AutoModelForCausalLMWithValueHead` calls `v_head.summary` (a Linear(hidden, 1) with
 * bias). It lives beside the trained tree under `value` (token-loss.ts `WithValueHead`), starts at
 * zeros as the lab's does (every value 0, the policy untouched), and is saved in a checkpoint as
 * its own file, `value_head.safetensors` (`v_head.summary.weight` [1, hidden] and
 * `v_head.summary.bias` [1], TRL's names), next to the PEFT adapter or the checkpoint folder's
 * model.safetensors: never inside the adapter or the model's weights, so peft and transformers load
 * those as before (they ignore the extra file).
 */
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { np } from "../../engine/jax.ts";
import { encodeSafetensors, readSafetensorsFile } from "../../engine/safetensors.ts";
import type { HostTensor } from "../../engine/tree.ts";
import type { ValueHeadParams } from "../embedded/model.ts";
import type { HfModelConfig } from "./config.ts";

export const VALUE_HEAD_FILE = "value_head.safetensors";
export const VALUE_HEAD_WEIGHT = "v_head.summary.weight";
export const VALUE_HEAD_BIAS = "v_head.summary.bias";

/** The value head's tree paths in a trained tree (`treeToHost` of it): `value.w` [D], `value.b` [1]. */
const PATHS = { w: "value.w", b: "value.b" } as const;

/** A fresh value head for `model`: all zeros, as the lab's `initValueHead`. */
export function initHfValueHead(model: HfModelConfig): ValueHeadParams {
  return { w: np.zeros([model.hiddenSize]), b: np.zeros([1]) };
}

/**
 * A trained tree's host tensors (`treeToHost`) split into the value head's (null when the tree has
 * none) and the rest (the adapter's, or the checkpoint's weights).
 */
export function splitValueHead(host: Record<string, HostTensor>): {
  head: { w: HostTensor; b: HostTensor } | null;
  rest: Record<string, HostTensor>;
} {
  const { [PATHS.w]: w, [PATHS.b]: b, ...rest } = host;
  if (!w !== !b) throw new Error("value head: value.w and value.b go together");
  return { head: w && b ? { w, b } : null, rest };
}

/** Writes `dir/value_head.safetensors` from the head's host tensors (w [D], b [1]) in TRL's names and shapes. */
export async function writeValueHead(dir: string, head: { w: HostTensor; b: HostTensor }): Promise<void> {
  const D = head.w.shape[0];
  await writeFile(
    join(dir, VALUE_HEAD_FILE),
    encodeSafetensors(
      {
        [VALUE_HEAD_WEIGHT]: { ...head.w, shape: [1, D] },
        [VALUE_HEAD_BIAS]: { ...head.b, shape: [1] },
      },
      { format: "pt" },
    ),
  );
}

/**
 * Reads `dir/value_head.safetensors` as tree-path host tensors (`value.w` [D], `value.b` [1]), or
 * null when `dir` has none; a file whose tensors do not fit `model` is refused by name and shape.
 */
export function readValueHead(dir: string, model: HfModelConfig): Record<string, HostTensor> | null {
  const path = join(dir, VALUE_HEAD_FILE);
  if (!existsSync(path)) return null;
  const { tensors } = readSafetensorsFile(path);
  const D = model.hiddenSize;
  const weight = tensors[VALUE_HEAD_WEIGHT];
  const bias = tensors[VALUE_HEAD_BIAS];
  if (!weight || weight.shape.join() !== `1,${D}` || !bias || bias.shape.join() !== "1")
    throw new Error(
      `${path}: expected ${VALUE_HEAD_WEIGHT} [1, ${D}] and ${VALUE_HEAD_BIAS} [1], got ${Object.entries(
        tensors,
      )
        .map(([name, tensor]) => `${name} [${tensor.shape}]`)
        .join(", ")}`,
    );
  const float32 = (tensor: HostTensor, shape: number[]): HostTensor => ({
    dtype: "float32",
    shape,
    data: Float32Array.from(tensor.data as ArrayLike<number>),
  });
  return { [PATHS.w]: float32(weight, [D]), [PATHS.b]: float32(bias, [1]) };
}
