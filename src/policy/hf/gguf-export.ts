/**
 * `agentrl export gguf`: a model as one GGUF file that llama.cpp loads (and so Ollama and
 * LM Studio, which run llama.cpp), in f32, f16 or q8_0, written as llama.cpp's own
 * convert_hf_to_gguf.py writes the same checkpoint (gguf-tensors.ts, gguf-metadata.ts,
 * gguf-tokenizer.ts; gguf-export.test.ts checks the logits through llama.cpp itself). The source:
 *
 * - a Hugging Face checkpoint folder (`hf:` folders: Qwen3, Qwen2, Llama, GPT-2; a trained run's
 *   `<run>/model`), with its tokenizer.json and chat template;
 * - a PEFT LoRA adapter folder (`<run>/adapter`): merged into its base (the folder its
 *   adapter_config.json names, or `base`), W + s·B·A as `train` merges it (lora.ts `mergeLora`);
 * - a lab model directory (models/base-strong, a lab run's model): the GPT-2 that `export hf`
 *   writes (gpt2-export.ts), llama.cpp's `gpt2`, with the lab's tokenizer as near as llama.cpp's
 *   tokenizers come (gguf-word-level.ts) and the lab's text protocol as its chat template.
 *
 * A folder without tokenizer.json is refused: llama.cpp's `no_vocab` files load, then abort on the
 * first prompt.
 */
import { existsSync, readFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import type { HostTensor } from "../../engine/tree.ts";
import { treeToHost } from "../../engine/tree.ts";
import { loadModelCheckpoint } from "../embedded/checkpoint.ts";
import { textStopTokens } from "../embedded/embedded-policy.ts";
import { withoutValueHead } from "../embedded/model.ts";
import { AGENTRL_TEXT_TEMPLATE } from "./agentrl-text.ts";
import { type HfModelConfig, parseHfConfig } from "./config.ts";
import { ggufModelMetadata, samplingMetadata } from "./gguf-metadata.ts";
import { GGUF_ARCHITECTURES, type GgufFileType, ggufTensors } from "./gguf-tensors.ts";
import { bpeTokenizerMetadata } from "./gguf-tokenizer.ts";
import { WORD_LEVEL_NOTE, wordLevelMetadata } from "./gguf-word-level.ts";
import { type GgufValue, gguf, writeGguf } from "./gguf-writer.ts";
import { gpt2Config, gpt2Tensors } from "./gpt2-export.ts";
import { adapterBase } from "./load.ts";
import { mergeLora } from "./lora.ts";
import { ADAPTER_CONFIG, readPeftAdapter } from "./peft.ts";
import { loadHfCheckpoint, selectHfParams } from "./weights.ts";

export interface GgufExportOptions {
  type: GgufFileType;
  /** An adapter folder's base checkpoint folder (default: the one its adapter_config.json names). */
  base?: string;
}

export interface GgufExportSummary {
  out: string;
  /** What was read: a lab model, a checkpoint folder, or an adapter merged into its base. */
  source: "lab" | "hf" | "hf+lora";
  /** llama.cpp's architecture (`general.architecture`). */
  architecture: string;
  type: GgufFileType;
  parameters: number;
  tensors: number;
  vocabSize: number;
  /** `tokenizer.ggml.model`/`tokenizer.ggml.pre`. */
  tokenizer: string;
  chatTemplate: boolean;
  bytes: number;
  /** What the file does differently from agentrl's own use of the model, to print. */
  notes: string[];
}

interface Source {
  kind: GgufExportSummary["source"];
  config: HfModelConfig;
  params: Record<string, HostTensor>;
  tokenizer: Map<string, GgufValue>;
  notes: string[];
}

async function labSource(dir: string): Promise<Source> {
  const checkpoint = await loadModelCheckpoint(dir);
  const { tokenizer } = checkpoint;
  const config = parseHfConfig(gpt2Config(checkpoint.config, tokenizer));
  const host = await treeToHost(withoutValueHead(checkpoint.params));
  const params = selectHfParams(config, gpt2Tensors(host, checkpoint.config), dir);
  const metadata = wordLevelMetadata(tokenizer);
  metadata.set("tokenizer.chat_template", gguf.str(AGENTRL_TEXT_TEMPLATE));
  const stops = textStopTokens(tokenizer.tokens).join(" ");
  return {
    kind: "lab",
    config,
    params,
    tokenizer: metadata,
    notes: [
      WORD_LEVEL_NOTE,
      `stops: the lab ends a turn at ${stops} as well as <eos>; GGUF holds one end-of-sequence id, so pass them to llama.cpp as stop strings`,
    ],
  };
}

/** The tokenizer keys of a checkpoint folder (its tokenizer.json and chat template), and its sampling defaults. */
function hfTokenizer(folder: string, config: HfModelConfig, notes: string[]): Map<string, GgufValue> {
  // llama.cpp's `no_vocab` files load, then abort the process on the first prompt they are given.
  if (!existsSync(join(folder, "tokenizer.json")))
    throw new Error(`export gguf: ${folder} has no tokenizer.json; llama.cpp needs the model's tokenizer`);
  const { metadata } = bpeTokenizerMetadata(folder, config);
  if (!metadata.has("tokenizer.chat_template")) notes.push("no chat template in the folder: none written");
  const generation = join(folder, "generation_config.json");
  if (existsSync(generation))
    for (const [key, value] of samplingMetadata(JSON.parse(readFileSync(generation, "utf8"))))
      metadata.set(key, value);
  return metadata;
}

/** config.json of a checkpoint folder, parsed (before its weights are read, to refuse early). */
function folderConfig(folder: string): HfModelConfig {
  return parseHfConfig(JSON.parse(readFileSync(join(folder, "config.json"), "utf8")));
}

async function hfSource(folder: string, base: string | undefined): Promise<Source> {
  const notes: string[] = [];
  if (existsSync(join(folder, "config.json"))) {
    // The tokenizer first: a folder llama.cpp could not run is refused before its weights are read.
    const tokenizer = hfTokenizer(folder, folderConfig(folder), notes);
    const checkpoint = loadHfCheckpoint(folder);
    return { kind: "hf", config: checkpoint.config, params: checkpoint.tensors, tokenizer, notes };
  }
  const baseFolder = base ?? adapterBase(folder);
  if (baseFolder === null) throw new Error(`export gguf: ${folder}: no base checkpoint for the adapter`);
  const tokenizer = hfTokenizer(baseFolder, folderConfig(baseFolder), notes);
  const checkpoint = loadHfCheckpoint(baseFolder);
  const adapter = await readPeftAdapter(folder, checkpoint.config);
  notes.push(
    `LoRA adapter merged into ${baseFolder} (rank ${adapter.config.rank}, alpha ${adapter.config.alpha})`,
  );
  return {
    kind: "hf+lora",
    config: checkpoint.config,
    params: mergeLora(checkpoint.tensors, adapter.tensors, adapter.config, checkpoint.config),
    tokenizer,
    notes,
  };
}

/** Reads `source` (a lab model directory, a checkpoint folder or an adapter folder; `hf:` allowed). */
async function readSource(source: string, base: string | undefined): Promise<Source> {
  const folder = source.startsWith("hf:") ? source.slice(3) : source;
  if (existsSync(join(folder, "checkpoint.json"))) return labSource(folder);
  if (existsSync(join(folder, "config.json")) || existsSync(join(folder, ADAPTER_CONFIG)))
    return hfSource(folder, base === undefined ? undefined : resolve(base));
  const hint = existsSync(join(folder, "model")) ? ` (a run's model is ${join(folder, "model")})` : "";
  throw new Error(
    `export gguf: ${folder} is not a lab model directory (checkpoint.json), a Hugging Face checkpoint folder (config.json) or a PEFT adapter folder (${ADAPTER_CONFIG})${hint}`,
  );
}

/** Writes `out` (replaced once complete). */
export async function exportGguf(
  source: string,
  out: string,
  options: GgufExportOptions,
): Promise<GgufExportSummary> {
  const model = await readSource(source, options.base);
  const name = basename(resolve(source.startsWith("hf:") ? source.slice(3) : source));
  const metadata = ggufModelMetadata(model.config, options.type, name);
  for (const [key, value] of model.tokenizer) metadata.set(key, value);
  const tensors = ggufTensors(model.config, model.params, options.type);
  const bytes = writeGguf(out, metadata, tensors);
  const tokenizerModel = (metadata.get("tokenizer.ggml.model") as { value: string }).value;
  const pre = metadata.get("tokenizer.ggml.pre") as { value: string } | undefined;
  return {
    out,
    source: model.kind,
    architecture: GGUF_ARCHITECTURES[model.config.architecture],
    type: options.type,
    parameters: Object.values(model.params).reduce((sum, t) => sum + t.data.length, 0),
    tensors: tensors.length,
    vocabSize: model.config.vocabSize,
    tokenizer: pre ? `${tokenizerModel}/${pre.value}` : tokenizerModel,
    chatTemplate: metadata.has("tokenizer.chat_template"),
    bytes,
    notes: model.notes,
  };
}
