/**
 * Answer checking. `normalizeAnswer` trims, lower-cases, drops a trailing `.`, and writes numbers
 * in one canonical form, so numeric answers compare as numbers: `4,213`, `4 , 213` (canonical
 * spacing of a thousands separator), `4 2 1 3` (digits decoded one token at a time), `04213` and
 * `4213.0` all normalise to `4213`. Anything else is compared as trimmed lower-case text with
 * single spaces.
 */
import type { Task } from "../types/task.ts";

const THOUSANDS = /^[+-]?\d{1,3}( ?, ?\d{3})+(\.\d+)?$/;
const SPACED_DIGITS = /^[+-]?\d( \d)+$/;
const PLAIN_NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;

export function normalizeAnswer(text: string): string {
  let answer = text.trim().toLowerCase().replace(/\s+/g, " ");
  while (answer.endsWith(".")) answer = answer.slice(0, -1).trimEnd();
  let numeric = answer.replace(/^([+-]) /, "$1");
  if (THOUSANDS.test(numeric)) numeric = numeric.replace(/ ?, ?/g, "");
  else if (SPACED_DIGITS.test(numeric)) numeric = numeric.replaceAll(" ", "");
  else numeric = numeric.replace(/ ?\. ?/, "."); // canonical decimal point: `3 . 5`
  if (PLAIN_NUMBER.test(numeric)) {
    const value = Number(numeric);
    if (Number.isFinite(value)) return String(value === 0 ? 0 : value);
  }
  return answer;
}

/** True when `answer` normalises to the task's answer or one of its aliases; null is never right. */
export function checkAnswer(task: Task, answer: string | null): boolean {
  if (answer === null) return false;
  const given = normalizeAnswer(answer);
  return [task.answer, ...(task.aliases ?? [])].some((accepted) => normalizeAnswer(accepted) === given);
}
