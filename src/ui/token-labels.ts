/**
 * Best-effort token texts for the token view, without the policy's tokenizer: the embedded
 * word-level tokenizer (src/policy/embedded/tokenizer.ts) writes one id per whitespace-separated
 * word and one per digit of a number, so when the turn's text splits into exactly as many pieces
 * as it has ids, piece i is the text of id i. Any other count (a BPE model, a word the vocabulary
 * lacks, an end-of-sequence id) gives null and the view shows bare ids: a label is never guessed.
 */

/** Pieces of `text` as the word tokenizer would split it: words, numbers spelled digit by digit. */
export function wordPieces(text: string): string[] {
  const pieces: string[] = [];
  for (const word of text.split(/\s+/)) {
    if (word === "") continue;
    if (/^\d+$/.test(word)) pieces.push(...word);
    else pieces.push(word);
  }
  return pieces;
}

/** One label per id, or null when the pieces do not line up with the ids one to one. */
export function tokenLabels(text: string, count: number): string[] | null {
  if (count === 0) return [];
  const pieces = wordPieces(text);
  return pieces.length === count ? pieces : null;
}
