/**
 * A tokenizer's fingerprint: a hash of its id → token table. An eval run records the fingerprint
 * of the policy's tokenizer; perplexity scoring reuses the stored token ids only when the scoring
 * model's tokenizer has the same fingerprint (never re-tokenise what can be reused exactly).
 */
import { hashString, mixSeeds } from "../core/random.ts";
import type { Tokenizer } from "../types/policy.ts";

export interface TokenizerInfo {
  fingerprint: string;
  vocabSize: number;
}

/** Two FNV-1a passes (forward and reversed token order) over the decoded vocabulary: 64 bits in hex. */
export function tokenizerFingerprint(tokenizer: Tokenizer): TokenizerInfo {
  const tokens: string[] = [];
  for (let id = 0; id < tokenizer.vocabSize; id++) tokens.push(tokenizer.decode([id]));
  const text = tokens.join("\u0000");
  const forward = mixSeeds(hashString(text), tokenizer.vocabSize);
  const backward = mixSeeds(hashString(tokens.reverse().join("\u0000")), tokenizer.vocabSize);
  const hex = (value: number) => value.toString(16).padStart(8, "0");
  return { fingerprint: `${hex(forward)}${hex(backward)}`, vocabSize: tokenizer.vocabSize };
}
