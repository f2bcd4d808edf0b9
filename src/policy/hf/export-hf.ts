/**
 * `agentrl export hf`: a lab checkpoint (models/base-strong, a trained run's model) written as a
 * Hugging Face checkpoint folder that transformers loads with `from_pretrained` (GPT-2, see
 * gpt2-export.ts), with equal logits (export-hf.test.ts, against transformers' own), and a chat
 * template writing the lab's tagged text protocol (agentrl-text.ts), so that `--policy hf:<out>`
 * feeds the model the ids the lab's embedded policy feeds it.
 */
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { encodeSafetensors } from "../../engine/safetensors.ts";
import { treeToHost } from "../../engine/tree.ts";
import { loadModelCheckpoint } from "../embedded/checkpoint.ts";
import { withoutValueHead } from "../embedded/model.ts";
import { AGENTRL_TEXT_TEMPLATE } from "./agentrl-text.ts";
import { gpt2Config, gpt2GenerationConfig, gpt2Tensors } from "./gpt2-export.ts";
import { wordLevelTokenizerConfig, wordLevelTokenizerJson } from "./word-level-export.ts";

/** The files written, in the order listed by the command. */
export const EXPORTED_FILES = [
  "config.json",
  "generation_config.json",
  "model.safetensors",
  "tokenizer.json",
  "tokenizer_config.json",
  "chat_template.jinja",
] as const;

export interface HfExportSummary {
  out: string;
  architecture: "GPT2LMHeadModel";
  parameters: number;
  vocabSize: number;
  files: string[];
}

/** Writes `outDir` (created; refused when it exists and is not empty). */
export async function exportHfCheckpoint(modelDir: string, outDir: string): Promise<HfExportSummary> {
  const existing = await readdir(outDir).catch(() => []);
  if (existing.length > 0) throw new Error(`export hf: --out ${outDir} exists and is not empty`);
  const checkpoint = await loadModelCheckpoint(modelDir);
  const { config, tokenizer } = checkpoint;
  const tensors = gpt2Tensors(await treeToHost(withoutValueHead(checkpoint.params)), config);
  const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
  const contents: Record<(typeof EXPORTED_FILES)[number], string | Uint8Array> = {
    "config.json": json(gpt2Config(config, tokenizer)),
    "generation_config.json": json(gpt2GenerationConfig(tokenizer)),
    // transformers refuses a safetensors file whose metadata names no framework.
    "model.safetensors": encodeSafetensors(tensors, { format: "pt" }),
    "tokenizer.json": json(wordLevelTokenizerJson(tokenizer)),
    "tokenizer_config.json": json(wordLevelTokenizerConfig(tokenizer, config.maxLen)),
    "chat_template.jinja": AGENTRL_TEXT_TEMPLATE,
  };
  await mkdir(outDir, { recursive: true });
  for (const file of EXPORTED_FILES) await writeFile(join(outDir, file), contents[file]);
  const parameters = Object.values(tensors).reduce((sum, t) => sum + t.data.length, 0);
  return {
    out: outDir,
    architecture: "GPT2LMHeadModel",
    parameters,
    vocabSize: config.vocabSize,
    files: [...EXPORTED_FILES],
  };
}
