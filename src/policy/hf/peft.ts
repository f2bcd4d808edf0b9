/**
 * LoRA adapters in the files the ecosystem loads:
 *
 * - a PEFT adapter folder (`PeftModel.from_pretrained`, vLLM's and SGLang's LoRA loaders):
 *   `adapter_config.json` (PEFT's LoraConfig fields, sorted, two-space indent, as PEFT writes it)
 *   and `adapter_model.safetensors` with PEFT's key names, the adapter name dropped:
 *   `base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight` ([r, in]) and `…lora_B.weight`
 *   ([out, r]); GPT-2's `base_model.model.transformer.h.N.attn.c_attn.lora_A.weight`, with
 *   `fan_in_fan_out: true` (its Conv1D base weights are [in, out]; A and B are laid out as above);
 * - a merged checkpoint folder (`AutoModelForCausalLM.from_pretrained`): the base with W + s·B·A,
 *   in the base's dtype unless asked otherwise (float32, bfloat16 or float16; config.json's dtype
 *   says which), beside the base's config, generation config and tokenizer files, as PEFT's
 *   `merge_and_unload` + `save_pretrained` gives. The adapter stays float32 (PEFT saves it in the
 *   adapter's dtype).
 *
 * Reading takes what PEFT itself saves for these models; LoRA variants this forward does not
 * compute (DoRA, trained biases, per-module ranks, a subset of layers, extra saved modules, a
 * target regex) are refused by field name.
 */
import { copyFile, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  decodeSafetensors,
  encodeSafetensors,
  type HalfCode,
  writeSafetensorsFile,
} from "../../engine/safetensors.ts";
import type { HostTensor } from "../../engine/tree.ts";
import type { HfModelConfig, HfSaveDType } from "./config.ts";
import {
  type LoraConfig,
  LoraConfigError,
  loraParamShapes,
  loraTargetsOf,
  mergeLora,
  resolveLoraConfig,
} from "./lora.ts";
import { type HfCheckpoint, hfTensorsOfParams } from "./weights.ts";

export const ADAPTER_CONFIG = "adapter_config.json";
export const ADAPTER_WEIGHTS = "adapter_model.safetensors";
/** Files of the base folder a merged checkpoint carries over when present (the weights are rewritten). */
export const MERGED_COPIED_FILES = [
  "generation_config.json",
  "tokenizer.json",
  "tokenizer_config.json",
  "special_tokens_map.json",
  "chat_template.jinja",
  "vocab.json",
  "merges.txt",
  "tokenizer.model",
] as const;

/** PEFT's key of one adapter tensor (`module`: its path under the layer, as loraParamShapes gives it). */
export function peftKey(layer: number, module: string, part: "a" | "b", model: HfModelConfig): string {
  const prefix = model.block === "gpt2" ? `transformer.h.${layer}` : `model.layers.${layer}`;
  return `base_model.model.${prefix}.${module}.lora_${part.toUpperCase()}.weight`;
}

/** adapter_config.json as PEFT's LoraConfig.save_pretrained writes it (the fields this adapter sets). */
export function adapterConfigJson(config: LoraConfig, baseModel: string, model?: HfModelConfig): string {
  const fields: Record<string, unknown> = {
    alpha_pattern: {},
    base_model_name_or_path: baseModel,
    bias: "none",
    fan_in_fan_out: model?.block === "gpt2",
    inference_mode: true,
    init_lora_weights: true,
    layers_to_transform: null,
    lora_alpha: config.alpha,
    lora_dropout: config.dropout,
    modules_to_save: null,
    peft_type: "LORA",
    r: config.rank,
    rank_pattern: {},
    target_modules: [...config.targets].sort(),
    task_type: "CAUSAL_LM",
    use_dora: false,
    use_rslora: config.rslora,
  };
  return JSON.stringify(fields, null, 2);
}

/**
 * Writes a PEFT adapter folder (created if needed). `lora`: host tensors by tree path
 * (`layers.N.q.a`, as `treeToHost` of LoraParams gives them). `baseModel`: the name or path PEFT
 * records as `base_model_name_or_path`.
 */
export async function writePeftAdapter(
  folder: string,
  lora: Record<string, HostTensor>,
  config: LoraConfig,
  model: HfModelConfig,
  baseModel: string,
): Promise<void> {
  const tensors: Record<string, HostTensor> = {};
  for (const { path, layer, module, part, shape } of loraParamShapes(config, model)) {
    const tensor = lora[path];
    if (!tensor) throw new LoraConfigError(`writePeftAdapter: no tensor ${path}`);
    if (tensor.shape.join() !== shape.join())
      throw new LoraConfigError(`writePeftAdapter: ${path} has shape [${tensor.shape}], expected [${shape}]`);
    tensors[peftKey(layer, module, part, model)] = tensor;
  }
  await mkdir(folder, { recursive: true });
  await writeFile(join(folder, ADAPTER_CONFIG), adapterConfigJson(config, baseModel, model));
  // transformers and PEFT refuse safetensors whose metadata names no framework.
  await writeFile(join(folder, ADAPTER_WEIGHTS), encodeSafetensors(tensors, { format: "pt" }));
}

export interface PeftAdapter {
  config: LoraConfig;
  /** By tree path (`layers.N.q.a`), float32. */
  tensors: Record<string, HostTensor>;
}

/** Fields PEFT may set that would change the computation; each must hold the value named. */
const REQUIRED_FIELDS: [field: string, ok: (v: unknown) => boolean, expected: string][] = [
  ["peft_type", (v) => v === "LORA", '"LORA"'],
  ["bias", (v) => v === undefined || v === "none", '"none" (trained biases are not supported)'],
  ["use_dora", (v) => !v, "false (DoRA is not supported)"],
  ["rank_pattern", (v) => !v || Object.keys(v as object).length === 0, "{} (one rank for every module)"],
  ["alpha_pattern", (v) => !v || Object.keys(v as object).length === 0, "{} (one alpha for every module)"],
  ["layers_to_transform", (v) => v == null, "null (every layer adapted)"],
  [
    "modules_to_save",
    (v) => v == null || (Array.isArray(v) && v.length === 0),
    "null (no extra trained modules)",
  ],
  ["lora_bias", (v) => !v, "false"],
];

/** Reads a PEFT LoRA adapter folder for `model`, checking every tensor's name and shape. */
export async function readPeftAdapter(folder: string, model: HfModelConfig): Promise<PeftAdapter> {
  const configPath = join(folder, ADAPTER_CONFIG);
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(await readFile(configPath, "utf8"));
  } catch (error) {
    throw new LoraConfigError(`${configPath}: ${(error as Error).message}`);
  }
  for (const [field, ok, expected] of REQUIRED_FIELDS)
    if (!ok(raw[field]))
      throw new LoraConfigError(
        `${configPath}: ${field} is ${JSON.stringify(raw[field])}; must be ${expected}`,
      );
  // PEFT sets fan_in_fan_out for GPT-2's Conv1D ([in, out]) and leaves it false for linear layers.
  const conv1d = model.block === "gpt2";
  if (Boolean(raw.fan_in_fan_out) !== conv1d)
    throw new LoraConfigError(
      `${configPath}: fan_in_fan_out is ${JSON.stringify(raw.fan_in_fan_out)}; must be ${conv1d} for ${model.modelType} (${conv1d ? "Conv1D weights are [in, out]" : "Hugging Face linear layers are [out, in]"})`,
    );
  const validTargets = loraTargetsOf(model);
  let targets = raw.target_modules;
  if (targets === "all-linear") targets = validTargets;
  if (!Array.isArray(targets))
    throw new LoraConfigError(
      `${configPath}: target_modules must be a list of module names (${validTargets.join(", ")}) or "all-linear"; got ${JSON.stringify(targets)} (a regex is not read)`,
    );
  let config: LoraConfig;
  try {
    config = resolveLoraConfig(
      {
        rank: raw.r as number,
        alpha: raw.lora_alpha as number,
        targets: targets as string[],
        dropout: (raw.lora_dropout as number | undefined) ?? 0,
        rslora: raw.use_rslora === true,
      },
      model,
    );
  } catch (error) {
    throw new LoraConfigError(`${configPath}: ${(error as Error).message}`);
  }
  const weightsPath = join(folder, ADAPTER_WEIGHTS);
  const stored = decodeSafetensors(await readFile(weightsPath), weightsPath).tensors;
  const tensors: Record<string, HostTensor> = {};
  const expectedKeys = new Set<string>();
  for (const { path, layer, module, part, shape } of loraParamShapes(config, model)) {
    const key = peftKey(layer, module, part, model);
    expectedKeys.add(key);
    const tensor = stored[key];
    if (!tensor) throw new LoraConfigError(`${weightsPath}: tensor "${key}" is missing`);
    if (tensor.shape.join() !== shape.join())
      throw new LoraConfigError(`${weightsPath}: "${key}" has shape [${tensor.shape}], expected [${shape}]`);
    if (tensor.dtype !== "float32")
      throw new LoraConfigError(`${weightsPath}: "${key}" is ${tensor.dtype}; f32, f16 or bf16 are read`);
    tensors[path] = tensor;
  }
  const extra = Object.keys(stored).filter((key) => !expectedKeys.has(key));
  if (extra.length > 0)
    throw new LoraConfigError(
      `${weightsPath}: ${extra.length} tensors that adapter_config.json does not describe: ${extra.slice(0, 5).join(", ")}${extra.length > 5 ? ", …" : ""}`,
    );
  return { config, tensors };
}

/** Options of a written checkpoint folder. */
export interface HfWriteOptions {
  /** The weights' dtype (config.json's `dtype` says it); absent: the base's own (`HfCheckpoint.dtype`). */
  dtype?: HfSaveDType;
}

/** The safetensors code each dtype is written in (float32 as it is held). */
const HALF_OF: Record<HfSaveDType, HalfCode | undefined> = {
  float32: undefined,
  bfloat16: "BF16",
  float16: "F16",
};

/**
 * Writes the base checkpoint with the adapter merged in as a new folder that transformers loads
 * with `from_pretrained` (writeHfCheckpoint: in the base's dtype unless `options.dtype` says
 * otherwise, the base's other files copied).
 */
export async function writeMergedCheckpoint(
  base: HfCheckpoint,
  lora: Record<string, HostTensor>,
  config: LoraConfig,
  outDir: string,
  options: HfWriteOptions = {},
): Promise<string[]> {
  return writeHfCheckpoint(base, mergeLora(base.tensors, lora, config, base.config), outDir, options);
}

/**
 * Writes `outDir` (which must be missing or empty) as a checkpoint folder of `base`'s architecture
 * with `params` (parameter paths, as `HfCheckpoint.tensors`) as its weights: model.safetensors in
 * Hugging Face's names and layouts, in `options.dtype` (default: the base's own, as config.json
 * stated it; bfloat16 and float16 rounded to nearest even from the float32 held), config.json with
 * `dtype` (and `torch_dtype`, where the base has either or the dtype is not float32) set to it,
 * and the base's generation config and tokenizer files copied. A merged LoRA model's and a fully
 * fine-tuned one's (a resumable checkpoint's is float32, for an exact resume). Returns the files
 * written.
 */
export async function writeHfCheckpoint(
  base: HfCheckpoint,
  params: Record<string, HostTensor>,
  outDir: string,
  options: HfWriteOptions = {},
): Promise<string[]> {
  const existing = await readdir(outDir).catch(() => []);
  if (existing.length > 0) throw new Error(`writeHfCheckpoint: ${outDir} exists and is not empty`);
  const dtype = options.dtype ?? base.dtype;
  if (!(dtype in HALF_OF))
    throw new Error(
      `writeHfCheckpoint: dtype must be one of ${Object.keys(HALF_OF).join(", ")}, got ${JSON.stringify(dtype)}`,
    );
  const tensors = hfTensorsOfParams(base.config, params);
  await mkdir(outDir, { recursive: true });
  const modelConfig = JSON.parse(await readFile(join(base.folder, "config.json"), "utf8"));
  const fields = ["dtype", "torch_dtype"].filter((field) => field in modelConfig);
  // transformers reads either; a folder whose config states none loads as float32.
  if (fields.length === 0 && dtype !== "float32") fields.push("torch_dtype");
  for (const field of fields) modelConfig[field] = dtype;
  await writeFile(join(outDir, "config.json"), `${JSON.stringify(modelConfig, null, 2)}\n`);
  const half = HALF_OF[dtype];
  await writeSafetensorsFile(
    join(outDir, "model.safetensors"),
    tensors,
    { format: "pt" },
    half ? { float32As: half } : {},
  );
  const written = ["config.json", "model.safetensors"];
  const present = new Set(await readdir(base.folder));
  for (const file of MERGED_COPIED_FILES) {
    if (!present.has(file)) continue;
    await copyFile(join(base.folder, file), join(outDir, file));
    written.push(file);
  }
  return written.sort();
}
