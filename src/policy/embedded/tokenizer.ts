/**
 * Word-level tokenizer of the embedded policy. Ids, in order: the specials `<pad> <bos> <eos>
 * <unk>`, the digits `0`–`9`, the protocol tags (`PROTOCOL_TOKENS`), then the caller's words (the
 * world vocabulary and tool message words). Numbers are spelled digit by digit (`1850` →
 * `1 8 5 0`) so copying a number from an observation is copying tokens. The token list is saved in
 * every checkpoint, so ids never drift.
 *
 * Input is canonical protocol text (`canonicalText` in src/env/protocol.ts): tokens separated by
 * whitespace. A word in the vocabulary is one token; any other word is split into runs of digits
 * (one token per digit) and non-digits (a known word, else `<unk>`). Decoding joins consecutive
 * digit tokens without spaces and separates every other token by one space, so canonical text
 * round-trips, except two numbers written side by side (`12 34` decodes as `1234`).
 */
import { PROTOCOL_TOKENS } from "../../env/protocol.ts";
import type { Tokenizer } from "../../types/policy.ts";

export const SPECIAL_TOKENS = ["<pad>", "<bos>", "<eos>", "<unk>"] as const;
export const DIGIT_TOKENS = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"] as const;

/** The serialised form stored in checkpoints. */
export interface WordTokenizerJson {
  type: "word-level";
  version: 1;
  /** Token of each id. */
  tokens: string[];
}

const DIGIT_RUN = /\d+|\D+/g;

export class WordTokenizer implements Tokenizer {
  readonly tokens: readonly string[];
  readonly padId = 0;
  readonly bosId = 1;
  readonly eosId = 2;
  readonly unkId = 3;
  readonly #ids: Map<string, number>;
  readonly #isDigit: boolean[];

  /** Prefer `createWordTokenizer` / `WordTokenizer.fromJSON`; `tokens` is the full id → token list. */
  constructor(tokens: readonly string[]) {
    const expectedPrefix = [...SPECIAL_TOKENS, ...DIGIT_TOKENS];
    expectedPrefix.forEach((token, i) => {
      if (tokens[i] !== token) {
        throw new Error(`WordTokenizer: id ${i} must be "${token}", got "${tokens[i]}"`);
      }
    });
    this.tokens = [...tokens];
    this.#ids = new Map();
    this.tokens.forEach((token, id) => {
      if (token === "" || /\s/.test(token))
        throw new Error(`WordTokenizer: token ${id} is empty or has whitespace`);
      if (this.#ids.has(token)) throw new Error(`WordTokenizer: duplicate token "${token}"`);
      if (id >= expectedPrefix.length && /^\d+$/.test(token)) {
        throw new Error(`WordTokenizer: "${token}" is a number; numbers are spelled with digit tokens`);
      }
      this.#ids.set(token, id);
    });
    this.#isDigit = this.tokens.map((token) => /^\d$/.test(token));
  }

  get vocabSize(): number {
    return this.tokens.length;
  }

  /** Id of a token, or undefined when it is not in the vocabulary. */
  idOf(token: string): number | undefined {
    return this.#ids.get(token);
  }

  /** Id of a token; throws when absent (for tags the protocol guarantees). */
  requireId(token: string): number {
    const id = this.#ids.get(token);
    if (id === undefined) throw new Error(`WordTokenizer: "${token}" is not in the vocabulary`);
    return id;
  }

  tokenOf(id: number): string {
    const token = this.tokens[id];
    if (token === undefined) throw new Error(`WordTokenizer: id ${id} out of range [0, ${this.vocabSize})`);
    return token;
  }

  encode(text: string): number[] {
    const ids: number[] = [];
    for (const word of text.split(/\s+/)) {
      if (word === "") continue;
      const id = this.#ids.get(word);
      if (id !== undefined) {
        ids.push(id);
        continue;
      }
      for (const run of word.match(DIGIT_RUN) ?? []) {
        if (/^\d/.test(run)) {
          for (const digit of run) ids.push(this.#ids.get(digit)!);
        } else {
          ids.push(this.#ids.get(run) ?? this.unkId);
        }
      }
    }
    return ids;
  }

  decode(ids: readonly number[]): string {
    let text = "";
    let previousDigit = false;
    for (const id of ids) {
      const token = this.tokenOf(id);
      const digit = this.#isDigit[id];
      if (text !== "" && !(digit && previousDigit)) text += " ";
      text += token;
      previousDigit = digit;
    }
    return text;
  }

  toJSON(): WordTokenizerJson {
    return { type: "word-level", version: 1, tokens: [...this.tokens] };
  }

  static fromJSON(json: unknown): WordTokenizer {
    const value = json as Partial<WordTokenizerJson> | null;
    if (value?.type !== "word-level" || value.version !== 1 || !Array.isArray(value.tokens)) {
      throw new Error(
        'WordTokenizer.fromJSON: expected { type: "word-level", version: 1, tokens: string[] }',
      );
    }
    if (!value.tokens.every((token) => typeof token === "string")) {
      throw new Error("WordTokenizer.fromJSON: every token must be a string");
    }
    return new WordTokenizer(value.tokens);
  }
}

/**
 * A tokenizer over the fixed prefix (specials, digits, protocol tags) plus `words`, in the order
 * given. Words already in the prefix and repeated words are skipped; number words are rejected.
 */
export function createWordTokenizer(words: Iterable<string>): WordTokenizer {
  const tokens: string[] = [...SPECIAL_TOKENS, ...DIGIT_TOKENS, ...PROTOCOL_TOKENS];
  const seen = new Set(tokens);
  for (const word of words) {
    if (seen.has(word)) continue;
    seen.add(word);
    tokens.push(word);
  }
  return new WordTokenizer(tokens);
}
