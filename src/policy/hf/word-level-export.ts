/**
 * The lab's word-level tokenizer as a Hugging Face `tokenizer.json` giving the same ids:
 * a `WordLevel` model over the lab's token list, split on whitespace (`WhitespaceSplit`), then
 * every digit apart (`Digits` with `individual_digits`), unknown pieces to `<unk>`. That is the lab's
 * rule (src/policy/embedded/tokenizer.ts) as long as no vocabulary word mixes digits with other
 * characters (the lab looks such a word up whole; the split would cut it): such a vocabulary is
 * refused. The four specials are added tokens matched only as whole words, as in the lab.
 *
 * Decoding differs by design of the library: transformers joins every token with a space, so
 * `1 8 5 0` is not glued back into `1850` as the lab's decoder does. Ids, which is what a trainer
 * and a server exchange, are equal.
 */
import { SPECIAL_TOKENS, type WordTokenizer } from "../embedded/tokenizer.ts";

export function wordLevelTokenizerJson(tokenizer: WordTokenizer): Record<string, unknown> {
  const mixed = tokenizer.tokens.filter((token) => /\d/.test(token) && !/^\d$/.test(token));
  if (mixed.length > 0) {
    throw new Error(
      `export hf: vocabulary words mixing digits and other characters cannot be reproduced by a WordLevel tokenizer: ${mixed.slice(0, 5).join(", ")}`,
    );
  }
  const vocab: Record<string, number> = {};
  tokenizer.tokens.forEach((token, id) => {
    vocab[token] = id;
  });
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: SPECIAL_TOKENS.map((content) => ({
      id: tokenizer.requireId(content),
      content,
      single_word: true,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: null,
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [{ type: "WhitespaceSplit" }, { type: "Digits", individual_digits: true }],
    },
    post_processor: null,
    decoder: null,
    model: { type: "WordLevel", vocab, unk_token: "<unk>" },
  };
}

/** tokenizer_config.json: the specials by name (the chat template is chat_template.jinja: agentrl-text.ts). */
export function wordLevelTokenizerConfig(tokenizer: WordTokenizer, maxLen: number): Record<string, unknown> {
  return {
    tokenizer_class: "PreTrainedTokenizerFast",
    bos_token: tokenizer.tokenOf(tokenizer.bosId),
    eos_token: tokenizer.tokenOf(tokenizer.eosId),
    unk_token: tokenizer.tokenOf(tokenizer.unkId),
    pad_token: tokenizer.tokenOf(tokenizer.padId),
    model_max_length: maxLen,
    clean_up_tokenization_spaces: false,
  };
}
