/**
 * The `em` and `f1` verifiers for short free-text answers (TriviaQA, HotpotQA, SQuAD), with the
 * SQuAD normalisation of the official evaluation script: lower case, punctuation removed, the
 * articles `a`/`an`/`the` removed, whitespace collapsed. The gold is `task.answer` or any of
 * `task.aliases`; the best match counts.
 *
 * Token F1 (`f1Score`): precision and recall of the normalised tokens as multisets. As in the
 * HotpotQA script, `yes`/`no`/`noanswer` score 0 against anything but themselves, and two empty
 * token lists score 1 only when both are empty. The `f1` verifier accepts a score of at least the
 * threshold (`DEFAULT_F1_THRESHOLD` = 0.5: more than half of the answer is right in both
 * directions). Answers longer than `MAX_TEXT_ANSWER_CHARS` are rejected.
 *
 * A chat model may wrap its answer (`The answer is Paris.`, `\boxed{Paris}`): the candidates are
 * the whole response, its last `\boxed{…}` and what follows its last "answer is" / "answer:", and
 * the best candidate counts. Each must match on its own, so wrapping never makes a wrong answer right.
 *
 * Worked example: gold "Barack Obama", answer "President Barack Obama" → tokens {barack, obama}
 * and {president, barack, obama}; 2 shared; precision 2/3, recall 2/2, F1 = 2·(2/3)·1/(2/3+1) = 0.8.
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

/** An `f1` verifier accepting a best F1 of at least `threshold` (in (0, 1]). */
export function createF1Verifier(
  threshold = DEFAULT_F1_THRESHOLD,
): (task: Task, answer: string | null) => boolean {
  if (!(threshold > 0 && threshold <= 1)) throw new Error(`f1 threshold must be in (0, 1], got ${threshold}`);
  return (task, answer) => f1Score(task, answer) >= threshold;
}
