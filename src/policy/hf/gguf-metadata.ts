/**
 * The model's hyperparameters as GGUF keys, as llama.cpp's convert_hf_to_gguf.py writes them for
 * each architecture (`{arch}` is llama, qwen2, qwen3 or gpt2):
 *
 * - every one: `{arch}.block_count`, `context_length`, `embedding_length`, `feed_forward_length`,
 *   `attention.head_count`;
 * - llama-style blocks: `attention.head_count_kv`, `rope.freq_base`,
 *   `attention.layer_norm_rms_epsilon`, `attention.key_length` and `value_length` (the head size,
 *   which Qwen3 sets apart from hidden/heads); linear rope scaling as `rope.scaling.type` "linear"
 *   and `rope.scaling.factor` (Llama 3's scaling is the `rope_freqs` tensor, gguf-tensors.ts);
 *   Llama also `vocab_size` and `rope.dimension_count`;
 * - GPT-2: `attention.layer_norm_epsilon`.
 *
 * And `general.architecture`, `general.type` "model", `general.name`, `general.file_type` and
 * `general.quantization_version` (2, ggml's); from generation_config.json, the sampling defaults
 * llama.cpp starts from (`general.sampling.temp`, `top_k`, `top_p`, `min_p`, `penalty_repeat`),
 * written as convert writes them whether or not `do_sample` is set.
 */
import type { HfModelConfig } from "./config.ts";
import { GGUF_ARCHITECTURES, type GgufFileType, LLAMA_FILE_TYPE } from "./gguf-tensors.ts";
import { type GgufValue, gguf } from "./gguf-writer.ts";

/** ggml's GGML_QNT_VERSION, which convert records in every file. */
export const GGML_QUANT_VERSION = 2;

/** `general.*` and `{arch}.*` keys, general.architecture first. */
export function ggufModelMetadata(
  config: HfModelConfig,
  fileType: GgufFileType,
  name: string,
): Map<string, GgufValue> {
  const arch = GGUF_ARCHITECTURES[config.architecture];
  const kv = new Map<string, GgufValue>();
  kv.set("general.architecture", gguf.str(arch));
  kv.set("general.type", gguf.str("model"));
  kv.set("general.name", gguf.str(name));
  const key = (suffix: string, value: GgufValue) => kv.set(`${arch}.${suffix}`, value);
  key("block_count", gguf.u32(config.layers));
  key("context_length", gguf.u32(config.maxPositions));
  key("embedding_length", gguf.u32(config.hiddenSize));
  key("feed_forward_length", gguf.u32(config.intermediateSize));
  key("attention.head_count", gguf.u32(config.heads));
  if (config.block === "gpt2") {
    key("attention.layer_norm_epsilon", gguf.f32(config.normEps));
  } else {
    key("attention.head_count_kv", gguf.u32(config.kvHeads));
    if (config.rope.type === "linear") {
      key("rope.scaling.type", gguf.str("linear"));
      key("rope.scaling.factor", gguf.f32(config.rope.factor));
    }
    key("rope.freq_base", gguf.f32(config.ropeTheta));
    key("attention.layer_norm_rms_epsilon", gguf.f32(config.normEps));
    key("attention.key_length", gguf.u32(config.headDim));
    key("attention.value_length", gguf.u32(config.headDim));
    if (arch === "llama") {
      key("vocab_size", gguf.u32(config.vocabSize));
      key("rope.dimension_count", gguf.u32(config.headDim));
    }
  }
  kv.set("general.file_type", gguf.u32(LLAMA_FILE_TYPE[fileType]));
  kv.set("general.quantization_version", gguf.u32(GGML_QUANT_VERSION));
  return kv;
}

/** generation_config.json's field of each `general.sampling.*` key convert writes, with the key's type. */
const SAMPLING_FIELDS = [
  ["temperature", "temp", "float32"],
  ["top_k", "top_k", "int32"],
  ["top_p", "top_p", "float32"],
  ["min_p", "min_p", "float32"],
  ["repetition_penalty", "penalty_repeat", "float32"],
] as const;

/** The `general.sampling.*` keys of a generation_config.json object (fields it lacks are left out). */
export function samplingMetadata(generation: Record<string, unknown>): Map<string, GgufValue> {
  const kv = new Map<string, GgufValue>();
  for (const [field, key, type] of SAMPLING_FIELDS) {
    const value = generation[field];
    if (typeof value !== "number") continue;
    kv.set(`general.sampling.${key}`, type === "int32" ? gguf.i32(value) : gguf.f32(value));
  }
  return kv;
}
