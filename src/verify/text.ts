/**
 * The `em` and `f1` verifiers for short free-text answers (TriviaQA, HotpotQA, SQuAD), with the
 * SQuAD normalisation of the official evaluation script: lower case, punctuation removed, the
 * articles `a`/`an`/`the` removed, whitespace collapsed. The gold is `task.answer` or any of
 * `task.aliases`; the best match counts.
 *
 * Token F1 (`f1Score`): precision and recall of the normalised tokens as multisets. As in the
 * HotpotQA script, `yes`/`no`/`noanswer` score 0 against anything but themselves, and two empty
 * token lists score 1 only when both are empty. Answers longer than `MAX_TEXT_ANSWER_CHARS` are
 * rejected.
 *
 * The `f1` verifier (a yes/no reward, not the averaged metric) accepts an answer when, against one
 * gold or alias, (1) its token F1 is at least the threshold (`DEFAULT_F1_THRESHOLD` = 0.5: half of
 * the answer is right in both directions) and (2) the tokens it shares with that gold come in the
 * gold's order (`inGoldOrder`: their longest common subsequence is the whole overlap). Why (2):
 * SQuAD's and HotpotQA's F1 is a bag of words because it scores extractive spans, copied from the
 * passage, so their words can never come out of order and the metric never had to look; as the
 * pass/fail test of a generated answer it would accept "Obama Barack" for "Barack Obama" (F1 = 1)
 * and "Peace and War" for "War and Peace", which name something else or nothing. Partial and
 * padded answers keep the metric's verdict ("Obama", "President Barack Obama"); a reordering that
 * is a legitimate answer (a date written day-first) is given as an alias. `f1Score` stays the
 * official bag-of-words F1.
 *
 * A chat model may wrap its answer (`The answer is Paris.`, `\boxed{Paris}`): the candidates are
 * the whole response, its last `\boxed{…}` and what follows its last "answer is" / "answer:", and
 * the best candidate counts. Each must match on its own, so wrapping never makes a wrong answer right.
 *
 * Worked example: gold "Barack Obama", answer "President Barack Obama" → tokens {barack, obama}
 * and {president, barack, obama}; 2 shared; precision 2/3, recall 2/2, F1 = 2·(2/3)·1/(2/3+1) = 0.8;
 * the shared tokens come as "barack obama", in the gold's order: accepted. "Obama Barack": F1 = 1,
 * but the longest common subsequence is 1 token of the 2 shared: rejected.
 */
import type { Task } from "../types/task.ts";
import { answerPhrase, boxedContents, visibleText } from "./extract.ts";

export const DEFAULT_F1_THRESHOLD = 0.5;
export const MAX_TEXT_ANSWER_CHARS = 2000;

/** SQuAD normalisation. Punctuation is any Unicode punctuation or symbol character. */
export function normalizeText(text: string): string {
  return text
    .toLowerCase()
    .replace(/[\p{P}\p{S}]/gu, "")
    .replace(/\b(?:a|an|the)\b/g, " ")
    .split(/\s+/)
    .filter(Boolean)
    .join(" ");
}

function golds(task: Task): string[] {
  return [task.answer, ...(task.aliases ?? [])];
}

/** Normalised exact match against one gold. */
export function exactMatch(gold: string, answer: string): boolean {
  return normalizeText(gold) === normalizeText(answer);
}

const SPECIAL = new Set(["yes", "no", "noanswer"]);

/** Token F1 of `answer` against one gold, in [0, 1]. */
export function tokenF1(gold: string, answer: string): number {
  const goldText = normalizeText(gold);
  const answerText = normalizeText(answer);
  if ((SPECIAL.has(goldText) || SPECIAL.has(answerText)) && goldText !== answerText) return 0;
  const goldTokens = goldText ? goldText.split(" ") : [];
  const answerTokens = answerText ? answerText.split(" ") : [];
  if (goldTokens.length === 0 || answerTokens.length === 0) {
    return goldTokens.length === answerTokens.length ? 1 : 0;
  }
  const counts = new Map<string, number>();
  for (const token of goldTokens) counts.set(token, (counts.get(token) ?? 0) + 1);
  let shared = 0;
  for (const token of answerTokens) {
    const left = counts.get(token) ?? 0;
    if (left > 0) {
      shared++;
      counts.set(token, left - 1);
    }
  }
  if (shared === 0) return 0;
  const precision = shared / answerTokens.length;
  const recall = shared / goldTokens.length;
  return (2 * precision * recall) / (precision + recall);
}

/** Normalised tokens (empty for an empty text). */
function tokens(text: string): string[] {
  const normal = normalizeText(text);
  return normal ? normal.split(" ") : [];
}

/**
 * True when the tokens `answer` shares with `gold` (as multisets) come in the gold's order: the
 * longest common subsequence of the two token lists is as long as their overlap. Vacuously true
 * when they share none (F1 is then 0 anyway).
 */
export function inGoldOrder(gold: string, answer: string): boolean {
  const g = tokens(gold);
  const a = tokens(answer);
  const counts = new Map<string, number>();
  for (const token of g) counts.set(token, (counts.get(token) ?? 0) + 1);
  let shared = 0;
  for (const token of a) {
    const left = counts.get(token) ?? 0;
    if (left > 0) {
      shared++;
      counts.set(token, left - 1);
    }
  }
  // LCS by dynamic programming over one row (answers are capped at MAX_TEXT_ANSWER_CHARS).
  const row = new Array<number>(g.length + 1).fill(0);
  for (const token of a) {
    let diagonal = 0;
    for (let j = 1; j <= g.length; j++) {
      const above = row[j];
      row[j] = token === g[j - 1] ? diagonal + 1 : Math.max(row[j], row[j - 1]);
      diagonal = above;
    }
  }
  return row[g.length] === shared;
}

/** The whole response, its last boxed value and its answer phrase (see the file comment). */
export function textAnswerCandidates(response: string): string[] {
  if (response.length > MAX_TEXT_ANSWER_CHARS) return [];
  const text = visibleText(response);
  const boxed = boxedContents(text);
  const candidates = [text, boxed.length > 0 ? boxed[boxed.length - 1] : null, answerPhrase(text)];
  return [...new Set(candidates.filter((candidate): candidate is string => Boolean(candidate?.trim())))];
}

/** `em` verifier: the answer equals the gold or an alias after normalisation. */
export function verifyExactMatch(task: Task, answer: string | null): boolean {
  if (answer === null) return false;
  const candidates = textAnswerCandidates(answer).filter((candidate) => normalizeText(candidate));
  return candidates.some((candidate) => golds(task).some((gold) => exactMatch(gold, candidate)));
}

/** Best token F1 over the candidates, the gold and its aliases; 0 for no answer or an oversized one. */
export function f1Score(task: Task, answer: string | null): number {
  if (answer === null) return 0;
  let best = 0;
  for (const candidate of textAnswerCandidates(answer)) {
    for (const gold of golds(task)) best = Math.max(best, tokenF1(gold, candidate));
  }
  return best;
}

/** The `f1` verifier at the default threshold. */
export const verifyF1 = createF1Verifier();

/**
 * An `f1` verifier: some candidate reaches an F1 of at least `threshold` (in (0, 1]) against a gold
 * or alias whose order its shared tokens keep (see the file comment).
 */
export function createF1Verifier(
  threshold = DEFAULT_F1_THRESHOLD,
): (task: Task, answer: string | null) => boolean {
  if (!(threshold > 0 && threshold <= 1)) throw new Error(`f1 threshold must be in (0, 1], got ${threshold}`);
  return (task, answer) =>
    answer !== null &&
    textAnswerCandidates(answer).some((candidate) =>
      golds(task).some((gold) => tokenF1(gold, candidate) >= threshold && inGoldOrder(gold, candidate)),
    );
}
