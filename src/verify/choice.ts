/**
 * The `choice` verifier: multiple-choice answers (GPQA, MMLU style). The gold is a letter A–J
 * (`task.answer`); the choices' texts, when known, are in `task.metadata.choices` (the task loader
 * puts them there). What the response chose (`extractChoice`):
 *
 *   the last `\boxed{…}` → else what follows the last "answer is" / "answer:" / "option is" /
 *   "choice is" → else the whole response. That segment must then be exactly one letter in one of
 *   the forms `B`, `(B)`, `B)`, `B.`, `[B]`, `**B**`, `\text{B}`, optionally followed by the
 *   choice's text (`(B) 42 m/s`), or exactly the text of one choice (normalised like `em`).
 *
 * Rejected: a different letter, a letter past the last choice, several letters (`A or B`, `A, C`,
 * `(A) and (B)`), and letters merely mentioned inside prose with no answer phrase (a free-text
 * response is not scanned for a stray capital letter). Lower-case letters count only in the
 * bracketed forms or alone (`(b)`, `b`).
 */
import type { Task } from "../types/task.ts";
import { answerPhrase, boxedContents, MAX_ANSWER_CHARS, visibleText } from "./extract.ts";
import { normalizeText } from "./text.ts";

export const CHOICE_LETTERS = "ABCDEFGHIJ";

/** The choices of a task (`metadata.choices`, as the loader stores them), or null. */
export function taskChoices(task: Task): string[] | null {
  const choices = task.metadata?.choices;
  return Array.isArray(choices) && choices.every((choice) => typeof choice === "string") ? choices : null;
}

const CHOICE_PHRASE = /\b(?:answer|option|choice)\b(?:\s+(?:is|would be|should be|will be))?\s*[:=]?/gi;

function lastChoicePhrase(text: string): string | null {
  let end = -1;
  for (const match of text.matchAll(CHOICE_PHRASE)) end = match.index + match[0].length;
  if (end < 0) return null;
  return answerPhrase(`answer: ${text.slice(end, end + MAX_ANSWER_CHARS * 2)}`);
}

const SINGLE = /^(?:\(([A-Ja-j])\)|\[([A-Ja-j])\]|([A-J])[).:]?|([a-j])\))(?:\s+(.*))?$/s;
const SEVERAL = /^[([]?[A-Ja-j][)\]]?(?:\s*(?:,|;|\/|&|and|or)\s*[([]?[A-Ja-j][)\]]?)+\.?$/;

/** The letter a response chose (upper case), or null when it chose none or several. */
export function extractChoice(response: string, choices: readonly string[] | null = null): string | null {
  const text = visibleText(response);
  const boxed = boxedContents(text);
  const segment = boxed.length > 0 ? boxed[boxed.length - 1] : (lastChoicePhrase(text) ?? text);
  if (segment.length > MAX_ANSWER_CHARS) return null;
  const cleaned = segment
    .replace(/\\text(?:bf)?\{([^{}]*)\}/g, "$1")
    .replace(/\*\*|\$/g, "")
    .trim()
    .replace(/[.]$/, "")
    .trim();
  const count = choices?.length ?? CHOICE_LETTERS.length;
  const valid = (letter: string) => {
    const index = CHOICE_LETTERS.indexOf(letter.toUpperCase());
    return index >= 0 && index < count ? letter.toUpperCase() : null;
  };
  if (/^[a-j]$/.test(cleaned)) return valid(cleaned);
  if (SEVERAL.test(cleaned)) return null;
  const single = SINGLE.exec(cleaned);
  if (single) {
    const letter = single[1] ?? single[2] ?? single[3] ?? single[4];
    const rest = single[5];
    // `A cat sat` is prose, not option A: text after a bare letter needs a bracket or a stop.
    if (rest && single[3] && !/^[A-J][).:]/.test(cleaned)) return choiceByText(cleaned, choices, count);
    return valid(letter);
  }
  return choiceByText(cleaned, choices, count);
}

function choiceByText(text: string, choices: readonly string[] | null, count: number): string | null {
  if (!choices) return null;
  const wanted = normalizeText(text);
  if (!wanted) return null;
  const matches = choices.flatMap((choice, index) => (normalizeText(choice) === wanted ? [index] : []));
  return matches.length === 1 && matches[0] < count ? CHOICE_LETTERS[matches[0]] : null;
}

/** `choice` verifier: the chosen letter is the gold letter. */
export function verifyChoice(task: Task, answer: string | null): boolean {
  if (answer === null) return false;
  const gold = task.answer.trim().toUpperCase();
  if (!/^[A-J]$/.test(gold)) return false;
  return extractChoice(answer, taskChoices(task)) === gold;
}
