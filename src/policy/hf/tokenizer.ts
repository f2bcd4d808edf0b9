/**
 * The tokenizer of a Hugging Face checkpoint folder, from its `tokenizer.json` through
 * `@huggingface/tokenizers` (the pure-JS port of the Rust `tokenizers` library that transformers.js
 * itself uses; docs/real-checkpoints.md has the comparison that chose it). Ids equal the Python
 * `tokenizers` library's on the committed corpus (tokenizer.test.ts).
 *
 * Conventions:
 * - `encode` adds no special tokens unless asked: a chat template already writes `<bos>` and the
 *   role markers, and special-token text inside the string (`<|im_start|>`) is matched as the
 *   special token, as transformers does.
 * - `decode` keeps special tokens unless asked, and never applies transformers'
 *   `clean_up_tokenization_spaces` (it rewrites " ." to "."): decoding sampled ids must give the
 *   text the model wrote, so a parse and a re-encode see the same characters.
 * - `eosTokenIds`: the tokenizer config's `eos_token` and every id of `generation_config.json`'s
 *   `eos_token_id` (Qwen3 stops on both `<|im_end|>` and `<|endoftext|>`), without repeats.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import {
  readOptional,
  readTokenizerConfig,
  specialTokenText,
  type TokenizerConfig,
} from "./tokenizer-config.ts";

export interface HfTokenizer {
  encode(text: string, options?: { addSpecialTokens?: boolean }): number[];
  decode(ids: readonly number[], options?: { skipSpecialTokens?: boolean }): string;
  readonly eosTokenIds: readonly number[];
  /** Tokens in the vocabulary, added tokens included (the model's embedding may be padded larger). */
  readonly vocabSize: number;
  tokenId(token: string): number | undefined;
  /** The token text of an id (byte-level BPE shows bytes as `Ġ`-style characters), or undefined. */
  tokenText(id: number): string | undefined;
  /** The `bos_token` of the tokenizer config, when it names one. */
  readonly bosToken: string | undefined;
}

/** Loads `<folder>/tokenizer.json` with `tokenizer_config.json` and `generation_config.json` when present. */
export async function loadHfTokenizer(folder: string): Promise<HfTokenizer> {
  const path = join(folder, "tokenizer.json");
  let tokenizerJson: unknown;
  try {
    tokenizerJson = JSON.parse(await readFile(path, "utf8"));
  } catch (error) {
    throw new Error(`hf tokenizer: cannot read ${path}: ${(error as Error).message}`);
  }
  const config = await readTokenizerConfig(folder);
  const generationText = await readOptional(join(folder, "generation_config.json"));
  const generationEos =
    generationText === undefined
      ? undefined
      : (JSON.parse(generationText) as { eos_token_id?: unknown }).eos_token_id;
  return hfTokenizerFromJson(tokenizerJson, config, generationEos);
}

/** A tokenizer from the parsed files (`generationEos`: generation_config.json's `eos_token_id`). */
export function hfTokenizerFromJson(
  tokenizerJson: unknown,
  config: TokenizerConfig,
  generationEos?: unknown,
): HfTokenizer {
  if (tokenizerJson === null || typeof tokenizerJson !== "object" || !("model" in tokenizerJson)) {
    throw new Error("hf tokenizer: tokenizer.json must be an object with a `model` field");
  }
  const tokenizer = new Tokenizer(tokenizerJson, config);
  const vocabSize = tokenizer.get_vocab(true).size;
  const eos: number[] = [];
  const addEos = (id: number | undefined) => {
    if (id !== undefined && !eos.includes(id)) eos.push(id);
  };
  const eosText = specialTokenText(config.eos_token);
  if (eosText !== undefined) addEos(tokenizer.token_to_id(eosText));
  for (const id of Array.isArray(generationEos) ? generationEos : [generationEos]) {
    if (Number.isInteger(id)) addEos(id as number);
  }
  return {
    eosTokenIds: eos,
    vocabSize,
    bosToken: specialTokenText(config.bos_token),
    encode: (text, options) =>
      tokenizer.encode(text, { add_special_tokens: options?.addSpecialTokens ?? false }).ids,
    // The library refuses an empty list; nothing decodes to nothing.
    decode: (ids, options) =>
      ids.length === 0
        ? ""
        : tokenizer.decode([...ids], {
            skip_special_tokens: options?.skipSpecialTokens ?? false,
            clean_up_tokenization_spaces: false,
          }),
    tokenId: (token) => tokenizer.token_to_id(token),
    tokenText: (id) => tokenizer.id_to_token(id),
  };
}
