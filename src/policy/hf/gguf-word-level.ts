/**
 * The lab's word-level tokenizer (src/policy/embedded/tokenizer.ts) as llama.cpp tokenizer keys.
 * llama.cpp has no word-level model; the nearest is its BPE tokenizer with the `whitespace`
 * pre-tokenizer (jina-v2-zh's): text split at whitespace into words, kept as raw UTF-8 (no byte
 * mapping), each word merged by the merge list, each resulting piece looked up. With every merge
 * that joins two substrings of a vocabulary word into a longer one, any two adjacent pieces of a
 * vocabulary word can merge, so a vocabulary word always ends as itself: one token, the lab's id.
 * No merge involves a digit (no vocabulary word mixes digits with other characters: refused, as
 * `export hf` refuses it), so a number stays one token per digit, as the lab spells it, and a word
 * that is a vocabulary word followed or preceded by digits (`born1850`) splits as the lab splits it.
 *
 * What llama.cpp cannot reproduce: a word outside the vocabulary. The lab gives `<unk>`; llama.cpp
 * gives the pieces the merges reach, and drops a piece that is no token. Canonical protocol text
 * (src/env/protocol.ts) uses the vocabulary only, so episodes tokenize alike; ids fed directly are
 * always the lab's. Decoding joins pieces without spaces (llama.cpp's BPE keeps the spaces inside
 * tokens, and these have none): `what is` comes back `whatis`.
 *
 * `<pad> <bos> <eos> <unk>` are CONTROL tokens (as `export hf` marks them special), with their ids
 * as the padding, bos, eos and unknown ids; no token is added to a prompt (the lab adds none).
 */
import { SPECIAL_TOKENS, type WordTokenizer } from "../embedded/tokenizer.ts";
import { TOKEN_TYPE } from "./gguf-tokenizer.ts";
import { type GgufValue, gguf } from "./gguf-writer.ts";

/**
 * Every merge "x y" with x, y and xy substrings of one vocabulary word (xy = word[i..j), split at
 * k), in the order of the words, then i, j, k; each once.
 */
export function wordMerges(tokens: readonly string[]): string[] {
  const merges = new Set<string>();
  for (const token of tokens) {
    const chars = [...token];
    for (let i = 0; i < chars.length; i++)
      for (let j = i + 2; j <= chars.length; j++)
        for (let k = i + 1; k < j; k++)
          merges.add(`${chars.slice(i, k).join("")} ${chars.slice(k, j).join("")}`);
  }
  return [...merges];
}

/** What llama.cpp's tokenizer does differently from the lab's, for the export's output. */
export const WORD_LEVEL_NOTE =
  "tokenizer: llama.cpp splits text at whitespace and rebuilds each vocabulary word from merges, so text of vocabulary words (all protocol text) gets the lab's ids; a word outside the vocabulary gets the pieces the merges reach where the lab gives <unk>, and detokenized text has no spaces between words";

/** The `tokenizer.*` keys of a lab tokenizer (the chat template is added by the caller). */
export function wordLevelMetadata(tokenizer: WordTokenizer): Map<string, GgufValue> {
  const mixed = tokenizer.tokens.filter((token) => /\d/.test(token) && !/^\d$/.test(token));
  if (mixed.length > 0)
    throw new Error(
      `export gguf: vocabulary words mixing digits and other characters cannot be split as the lab splits them: ${mixed.slice(0, 5).join(", ")}`,
    );
  const specials = new Set<string>(SPECIAL_TOKENS);
  const kv = new Map<string, GgufValue>();
  kv.set("tokenizer.ggml.model", gguf.str("gpt2"));
  kv.set("tokenizer.ggml.pre", gguf.str("whitespace"));
  kv.set("tokenizer.ggml.tokens", gguf.strs(tokenizer.tokens));
  kv.set(
    "tokenizer.ggml.token_type",
    gguf.i32s(
      tokenizer.tokens.map((token) => (specials.has(token) ? TOKEN_TYPE.control : TOKEN_TYPE.normal)),
    ),
  );
  kv.set("tokenizer.ggml.merges", gguf.strs(wordMerges(tokenizer.tokens)));
  kv.set("tokenizer.ggml.bos_token_id", gguf.u32(tokenizer.bosId));
  kv.set("tokenizer.ggml.eos_token_id", gguf.u32(tokenizer.eosId));
  kv.set("tokenizer.ggml.unknown_token_id", gguf.u32(tokenizer.unkId));
  kv.set("tokenizer.ggml.padding_token_id", gguf.u32(tokenizer.padId));
  kv.set("tokenizer.ggml.add_bos_token", gguf.bool(false));
  kv.set("tokenizer.ggml.add_eos_token", gguf.bool(false));
  return kv;
}
