/**
 * What the scripted agents do with text: recognise a document or a number in an observation, make
 * a plausible guess, slip a digit.
 */
import type { Rng } from "../../core/random.ts";
import type { Task } from "../../types/task.ts";
import { normalizeAnswer, type ParsedDocument, parseDocuments } from "../../world/index.ts";

/** The document titled `name` in an observation, if the observation holds it. */
export function findDocument(observation: string, name: string): ParsedDocument | undefined {
  return parseDocuments(observation).find((document) => document.title === name);
}

/** True when `value` appears as a token of the observation (a calc result). */
export function observationHasNumber(observation: string, value: string): boolean {
  return observation.split(/\s+/).includes(value);
}

/** A random number with as many digits as the task's answer (a year for a year, …). */
export function guessNumber(task: Task, rng: Rng): string {
  const normal = normalizeAnswer(task.answer);
  const digits = /^\d+$/.test(normal) ? normal.length : 2;
  if (digits === 1) return String(rng.range(0, 9));
  return String(rng.range(10 ** (digits - 1), 10 ** digits - 1));
}

/** The number with one digit changed (never to a leading zero), so it is always wrong. */
export function slipDigit(value: string, rng: Rng): string {
  const negative = value.startsWith("-");
  const digits = negative ? value.slice(1) : value;
  if (!/^\d+$/.test(digits)) return value;
  const position = rng.int(digits.length);
  const old = Number(digits[position]);
  const lowest = position === 0 && digits.length > 1 ? 1 : 0;
  const choices: number[] = [];
  for (let d = lowest; d <= 9; d++) if (d !== old) choices.push(d);
  const next = digits.slice(0, position) + String(rng.pick(choices)) + digits.slice(position + 1);
  return (negative ? "-" : "") + next;
}
