/**
 * `tokenizer_config.json` of a Hugging Face checkpoint folder, as `save_pretrained` writes it:
 * the special tokens (bos, eos, pad, unk: a string or an `AddedToken` object `{ content }`), the
 * added tokens, and the chat template (a string, or a list of `{ name, template }`).
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";

export type TokenizerConfig = Record<string, unknown>;

/** The parsed file, or `{}` when the folder has none (tokenizer.json alone is a valid tokenizer). */
export async function readTokenizerConfig(folder: string): Promise<TokenizerConfig> {
  const text = await readOptional(join(folder, "tokenizer_config.json"));
  if (text === undefined) return {};
  const value: unknown = JSON.parse(text);
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new Error(`${join(folder, "tokenizer_config.json")}: expected a JSON object`);
  }
  return value as TokenizerConfig;
}

/** A special token's text: the string itself, or an AddedToken object's `content`; else undefined. */
export function specialTokenText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (
    value !== null &&
    typeof value === "object" &&
    typeof (value as { content?: unknown }).content === "string"
  ) {
    return (value as { content: string }).content;
  }
  return undefined;
}

/** The special tokens a chat template sees by name, as transformers passes them (strings only). */
export const TEMPLATE_SPECIAL_TOKENS = [
  "bos_token",
  "eos_token",
  "unk_token",
  "pad_token",
  "sep_token",
  "cls_token",
  "mask_token",
] as const;

/** The file's text, or undefined when it does not exist. */
export async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}
