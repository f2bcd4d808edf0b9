/**
 * The `math` verifier: a final answer compared with the gold by value and by symbolic equivalence
 * with a computer-algebra system (@cortex-js/compute-engine parses the LaTeX), never by string
 * equality alone.
 *
 * Extraction (`extractMathAnswers`), from the response's visible tail (extract.ts):
 *   every `\boxed{…}` (nested braces) → else the last "answer is …" / "answer: …" → else the whole
 *   response when it is short math (not prose) → else the last `$…$` span → else the last number.
 *   Several boxed values must ALL equal the gold: a response that boxes two different values is
 *   hedging and is rejected (and so is one with more than `MAX_BOXED` boxes).
 *
 * Normalisation (`normalizeMathAnswer`), applied to gold and answer alike:
 *   `\dfrac`/`\tfrac` → `\frac`; `\left`/`\right`/`\big…`, `\displaystyle`, LaTeX spacing (`\,`
 *   `\!` `\;` `~`), `$` and `\(`/`\[` delimiters and a trailing period dropped; `1{,}000`,
 *   `1,000,000` (groups of exactly three digits) and `1 000` are thousands separators; degrees
 *   (`^\circ`, `°`, `\degree`) and the percent sign are stripped, so `30^\circ` = 30 and `50\%` = 50
 *   (a percentage is compared as the number written, not as 0.5); a leading `x =` is dropped; a unit
 *   after a plain number (`5 \text{cm}`, `12 inches`) is dropped, and nothing else is.
 *
 * Comparison (`mathEqual`): equal normalised strings; else both parsed by the CAS and compared:
 *   constant expressions numerically with relative tolerance `RELATIVE_TOLERANCE` (1e-9: `\frac12` =
 *   `0.5` = `1/2`, `2\sqrt2` = `\sqrt8`, but `1/3` ≠ `0.33` and `\pi` ≠ `3.14159`; answers are exact,
 *   a rounded decimal is a different answer); expressions with variables by evaluation at fixed
 *   sample points (`(x+1)^2` = `x^2+2x+1`); tuples and lists element by element in order, sets in
 *   any order; equations side by side. Infinite or undefined values never compare equal numerically.
 *
 * Bounds: answers longer than `MAX_ANSWER_CHARS` are rejected; the CAS only sees expressions built
 * from a whitelist of operations (no sums, integrals, products; factorials of at most 100), with at
 * most `MAX_NODES` nodes, so a hostile answer cannot make verification slow.
 */
import { ComputeEngine } from "@cortex-js/compute-engine";
import { ClassifiedError, infraFailure } from "../types/failure.ts";
import type { Task } from "../types/task.ts";
import {
  answerPhrase,
  boxedContents,
  lastInlineMath,
  lastNumber,
  looksLikeMath,
  MAX_ANSWER_CHARS,
  MAX_BOXED,
  visibleText,
} from "./extract.ts";

type Expression = ReturnType<ComputeEngine["parse"]>;

export const RELATIVE_TOLERANCE = 1e-9;
/** Most MathJSON nodes of an expression handed to the CAS. */
export const MAX_NODES = 200;
const MAX_DEPTH = 24;
const MAX_FACTORIAL = 100;
const MAX_VARIABLES = 4;
/** Sample values of free variables (arbitrary irrational-looking numbers, fixed for determinism). */
const SAMPLE_POINTS = [0.5377, 1.8339, -2.2588, 0.8622, 0.3188, -1.3077, 2.7694, -0.4336];
const SAMPLES = 5;

let engine: ComputeEngine | undefined;
function computeEngine(): ComputeEngine {
  engine ??= new ComputeEngine();
  return engine;
}

export type MathAnswerSource = "boxed" | "answer-phrase" | "whole" | "inline-math" | "last-number";

/** The final answer(s) a response gives, and where they came from; null when it gives none. */
export function extractMathAnswers(response: string): { answers: string[]; source: MathAnswerSource } | null {
  const text = visibleText(response);
  const boxed = boxedContents(text)
    .map((content) => content.trim())
    .filter(Boolean);
  if (boxed.length > 0) return { answers: [...new Set(boxed)], source: "boxed" };
  const phrase = answerPhrase(text);
  if (phrase) return { answers: [phrase], source: "answer-phrase" };
  const whole = text.trim();
  if (whole && whole.length <= MAX_ANSWER_CHARS && looksLikeMath(whole)) {
    return { answers: [whole], source: "whole" };
  }
  const inline = lastInlineMath(text);
  if (inline) return { answers: [inline], source: "inline-math" };
  const number = lastNumber(text);
  return number ? { answers: [number], source: "last-number" } : null;
}

/**
 * `math` verifier: every extracted answer equals the gold (or one of its aliases) and is a final
 * value (`isFinalValue`), not the question's own expression or arithmetic left undone.
 */
export function verifyMath(task: Task, answer: string | null): boolean {
  if (answer === null) return false;
  const extracted = extractMathAnswers(answer);
  if (!extracted || extracted.answers.length > MAX_BOXED) return false;
  const golds = [task.answer, ...(task.aliases ?? [])].map(goldOf);
  const candidates = extracted.answers.map(goldOf); // `\boxed{\boxed{3}}` reads as 3
  return candidates.every(
    (candidate) =>
      golds.some((gold) => mathEqual(gold, candidate)) && isFinalValue(candidate, golds, task.question),
  );
}

/**
 * True when `candidate` states a result rather than restating the problem. Equivalence alone would
 * accept "2+3" for "What is 2+3?" (it equals the gold 5), so an answer equal to the gold is also
 * required to be final:
 * - written as a gold is written (same normalised text): always final (a gold of `2^{10}`);
 * - arithmetic on numbers alone (`3+2`, `10-5`, `2\cdot3`, `2^{10}`, `3!`, `\frac{6}{4}`) must be
 *   done: only a number, a signed number, a fraction of integers in lowest terms, a mixed number
 *   or a power of ten is final (`finalForm`), in each element of a tuple or set too;
 * - any other expression (with variables, roots, constants) is final unless it appears verbatim
 *   in the question (whitespace, `$` and braces aside): `(x+1)^2` for "Expand $(x+1)^2$",
 *   `\sqrt{8}` for "Simplify $\sqrt{8}$". A lone symbol (`x`, `\pi`) is not a restatement.
 */
export function isFinalValue(candidate: string, golds: readonly string[], question: string): boolean {
  const text = normalizeMathAnswer(candidate);
  if (text === null) return false;
  if (golds.some((gold) => normalizeMathAnswer(gold) === text) || PLAIN_NUMBER.test(text)) return true;
  return casVerdict(text, text, () => {
    const json = computeEngine().parse(text, { canonical: false }).json;
    // A guard only: an answer mathEqual accepted as equal was parsed within the whitelist.
    if (!allowed(json, 0, { nodes: 0 })) return true;
    if (undoneArithmetic(json)) return false;
    return !(Array.isArray(json) && !finalForm(json) && compact(question).includes(compact(text)));
  });
}

const ARITHMETIC = new Set([
  "Add",
  "Subtract",
  "Negate",
  "Multiply",
  "Divide",
  "Rational",
  "Power",
  "Square",
  "Factorial",
  "InvisibleOperator",
  "Delimiter",
]);
const COLLECTIONS = new Set(["Tuple", "List", "Set", "Sequence"]);

function literal(json: unknown): number | null {
  if (typeof json === "number") return json;
  const num = (json as { num?: unknown } | null)?.num;
  return typeof num === "string" && Number.isFinite(Number(num)) ? Number(num) : null;
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** An integer literal, or a negated one (`\frac{-3}{4}` parses its numerator as `Negate(3)`). */
function signedInteger(json: unknown): number | null {
  if (Array.isArray(json) && json[0] === "Negate" && json.length === 2) {
    const inner = literal(json[1]);
    return inner !== null && Number.isInteger(inner) ? -inner : null;
  }
  const value = literal(json);
  return value !== null && Number.isInteger(value) ? value : null;
}

/**
 * The forms of a final number: a number, a negated one, a fraction of integers in lowest terms
 * (denominator > 1), a mixed number (`2\frac{1}{2}`), a power of ten (`10^{6}`), in parentheses
 * or not.
 */
function finalForm(json: unknown): boolean {
  if (literal(json) !== null) return true;
  if (!Array.isArray(json)) return false;
  const [head, ...args] = json;
  if (head === "Delimiter") return args.length >= 1 && finalForm(args[0]);
  // One sign: `-5`, `-\frac{3}{4}`; `--5` is arithmetic left to do.
  if (head === "Negate")
    return args.length === 1 && finalForm(args[0]) && !(Array.isArray(args[0]) && args[0][0] === "Negate");
  if (head === "Divide" || head === "Rational") {
    const [a, b] = args.map(signedInteger);
    return args.length === 2 && a !== null && b !== null && b > 1 && gcd(Math.abs(a), b) === 1;
  }
  if (head === "InvisibleOperator" && args.length === 2) {
    const whole = literal(args[0]);
    const fraction = args[1];
    return (
      whole !== null &&
      Number.isInteger(whole) &&
      whole > 0 &&
      Array.isArray(fraction) &&
      fraction[0] === "Divide" &&
      finalForm(fraction) &&
      Math.abs(signedInteger(fraction[1]) ?? Infinity) < (signedInteger(fraction[2]) ?? 0)
    );
  }
  if (head === "Power")
    return args.length === 2 && literal(args[0]) === 10 && signedInteger(args[1]) !== null;
  return false;
}

/** Numbers combined by operations only, not yet in a final form (in any element of a collection). */
function undoneArithmetic(json: unknown): boolean {
  if (!Array.isArray(json)) return false;
  const [head, ...args] = json;
  const inner = head === "Delimiter" ? args[0] : json;
  if (Array.isArray(inner) && COLLECTIONS.has(inner[0])) return inner.slice(1).some(undoneArithmetic);
  return onlyNumbers(json) && !finalForm(json);
}

function onlyNumbers(json: unknown): boolean {
  if (literal(json) !== null) return true;
  if (!Array.isArray(json)) return false;
  const [head, ...args] = json;
  if (typeof head !== "string" || !ARITHMETIC.has(head)) return false;
  // The delimiter's spec (`'(,)'`) is text, not an operand.
  const operands = head === "Delimiter" ? args.slice(0, 1) : args;
  return operands.length > 0 && operands.every(onlyNumbers);
}

/** Text compared for a verbatim copy: no whitespace, `$`, braces or `\left`/`\right`; one fraction command. */
function compact(text: string): string {
  return text.replace(/\\[dt]frac/g, "\\frac").replace(/\\(?:left|right)(?![A-Za-z])|[\s${}]/g, "");
}

/** A gold written as a solution (or a box in a box) keeps only its last boxed value. */
function goldOf(gold: string): string {
  const boxed = boxedContents(gold);
  return boxed.length > 0 ? boxed[boxed.length - 1] : gold;
}

const UNIT_AFTER_NUMBER =
  /^(-?\d[\d,]*(?:\.\d+)?)\s*(?:\\(?:text|mbox|mathrm|textrm)\{\s*[A-Za-z][A-Za-z .]*\}|(?!pi\b)[A-Za-z]{2,}(?:\s[A-Za-z]+)?)(?:\^\{?[23]\}?)?$/;

/** The normalised form of an answer (rules in the file comment); null when empty or too long. */
export function normalizeMathAnswer(answer: string): string | null {
  let text = answer.trim();
  if (!text || text.length > MAX_ANSWER_CHARS) return null;
  const wrapped = /^\\(?:text|textbf|mathrm|mbox|textrm)\{([^{}]*)\}$/.exec(text);
  if (wrapped) text = wrapped[1];
  text = text
    .replace(/\\[dt]frac/g, "\\frac")
    .replace(/\\(?:left|right)\s*\./g, "")
    .replace(/\\(?:left|right|[bB]igg?[lr]?)(?![A-Za-z])/g, "")
    .replace(/\\displaystyle/g, "")
    .replace(/\\[,;:! ]/g, "")
    .replace(/~/g, "")
    .replace(/\{,\}/g, "")
    .replace(/\\\$|\$/g, "")
    .replace(/^\\[([]|\\[)\]]$/g, "")
    .replace(/\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|°|\\degree(?![A-Za-z])/g, "")
    .replace(/\\?%/g, "")
    .replace(/\s+/g, " ")
    .trim()
    .replace(/[.,;]+$/, "")
    .trim();
  const assignment = /^[A-Za-z]\s*=\s*([^=]+)$/.exec(text);
  if (assignment) text = assignment[1].trim();
  const unit = UNIT_AFTER_NUMBER.exec(text);
  if (unit) text = unit[1];
  if (/^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$/.test(text)) text = text.replace(/,/g, "");
  else if (/^-?\d{1,3}(?: \d{3})+(?:\.\d+)?$/.test(text)) text = text.replace(/ /g, "");
  return text || null;
}

const PLAIN_NUMBER = /^[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?$/i;

/** True when `candidate` is the same mathematical answer as `gold` (rules in the file comment). */
export function mathEqual(gold: string, candidate: string): boolean {
  const a = normalizeMathAnswer(gold);
  const b = normalizeMathAnswer(candidate);
  if (a === null || b === null) return false;
  if (a === b) return true;
  if (PLAIN_NUMBER.test(a) && PLAIN_NUMBER.test(b)) return closeNumbers(Number(a), Number(b));
  return casVerdict(a, b, () => {
    const x = parseBounded(a);
    const y = parseBounded(b);
    return x !== null && y !== null && equivalent(x, y);
  });
}

/**
 * The CAS's comparison, with its failures classified. An input the whitelist refuses is a
 * rejection (false, above); the CAS throwing on an input it accepted means the checker could not
 * judge the answer: that is not "wrong", so it is an infra failure (`math-checker-error`) that the
 * episode loop records and leaves out of every score, instead of a 0. (An answer that makes the
 * CAS throw escapes a 0 but earns nothing; every such episode is counted and reported, so a policy
 * drifting towards them shows.)
 */
export function casVerdict(gold: string, candidate: string, compare: () => boolean): boolean {
  try {
    return compare();
  } catch (error) {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    throw new ClassifiedError(
      infraFailure(
        "math-checker-error",
        `the CAS failed comparing "${gold}" with "${candidate}": ${message}`,
      ),
      { cause: error },
    );
  }
}

function closeNumbers(a: number, b: number): boolean {
  if (!Number.isFinite(a) || !Number.isFinite(b)) return false;
  return Math.abs(a - b) <= RELATIVE_TOLERANCE * Math.max(1, Math.abs(a), Math.abs(b));
}

const ALLOWED_HEADS = new Set([
  "Add",
  "Subtract",
  "Negate",
  "Multiply",
  "Divide",
  "Rational",
  "Power",
  "Sqrt",
  "Root",
  "Square",
  "Exp",
  "Ln",
  "Log",
  "Lb",
  "Lg",
  "Sin",
  "Cos",
  "Tan",
  "Cot",
  "Sec",
  "Csc",
  "Arcsin",
  "Arccos",
  "Arctan",
  "Sinh",
  "Cosh",
  "Tanh",
  "Abs",
  "Floor",
  "Ceil",
  "Complex",
  "Tuple",
  "List",
  "Set",
  "Sequence",
  "Delimiter",
  "Equal",
  "InvisibleOperator",
  "Factorial",
]);
const CONSTANTS = new Set([
  "Pi",
  "ExponentialE",
  "ImaginaryUnit",
  "PositiveInfinity",
  "NegativeInfinity",
  "Half",
  "Nothing",
]);
const VARIABLE = /^[A-Za-z]$|^(?:alpha|beta|gamma|delta|theta|lambda|mu|phi|sigma|tau|omega)$/;

/** Checks the syntax tree (MathJSON) against the whitelist; counts nodes. */
function allowed(json: unknown, depth: number, budget: { nodes: number }): boolean {
  if (++budget.nodes > MAX_NODES || depth > MAX_DEPTH) return false;
  if (typeof json === "number") return true;
  if (typeof json === "string") {
    if (json.startsWith("'")) return false; // a string literal: text, not math
    return CONSTANTS.has(json) || VARIABLE.test(json);
  }
  if (Array.isArray(json)) {
    const [head, ...args] = json;
    if (typeof head !== "string" || !ALLOWED_HEADS.has(head)) return false;
    // The delimiter spec (`'(,)'`) is the one string literal allowed.
    if (head === "Delimiter") return args.length >= 1 && allowed(args[0], depth + 1, budget);
    if (head === "Factorial") {
      const [argument] = args;
      if (typeof argument !== "number" || argument > MAX_FACTORIAL) return false;
    }
    return args.every((arg) => allowed(arg, depth + 1, budget));
  }
  if (typeof json === "object" && json !== null) {
    const node = json as { num?: unknown; sym?: unknown; fn?: unknown };
    if (typeof node.num === "string") return node.num.length <= 60;
    if (node.sym !== undefined) return allowed(node.sym, depth, budget);
    if (node.fn !== undefined) return allowed(node.fn, depth, budget);
  }
  return false;
}

/** Parses without canonicalising (no evaluation happens), checks the whitelist, then canonicalises. */
function parseBounded(latex: string): Expression | null {
  const ce = computeEngine();
  const raw = ce.parse(latex, { canonical: false });
  if (!allowed(raw.json, 0, { nodes: 0 })) return null;
  const expression = ce.parse(latex);
  if (!expression.isValid || !allowed(expression.json, 0, { nodes: 0 })) return null;
  return expression;
}

const ORDERED = new Set(["Tuple", "List", "Sequence", "Delimiter"]);

function equivalent(x: Expression, y: Expression): boolean {
  const xCollection = x.operator === "Set" || ORDERED.has(x.operator);
  const yCollection = y.operator === "Set" || ORDERED.has(y.operator);
  if (xCollection || yCollection) {
    if (!xCollection || !yCollection) return false;
    const xs: readonly Expression[] = x.ops ?? [];
    const ys: readonly Expression[] = y.ops ?? [];
    if (xs.length !== ys.length) return false;
    if (x.operator !== "Set" && y.operator !== "Set") return xs.every((item, i) => equivalent(item, ys[i]));
    const unused = [...ys];
    return xs.every((item) => {
      const match = unused.findIndex((other) => equivalent(item, other));
      if (match < 0) return false;
      unused.splice(match, 1);
      return true;
    });
  }
  if (x.operator === "Equal" || y.operator === "Equal") {
    if (x.operator !== y.operator || x.ops?.length !== 2 || y.ops?.length !== 2) return false;
    const [xl, xr] = x.ops;
    const [yl, yr] = y.ops;
    return (equivalent(xl, yl) && equivalent(xr, yr)) || (equivalent(xl, yr) && equivalent(xr, yl));
  }
  if (x.isSame(y)) return true;
  const variables = [...new Set([...x.unknowns, ...y.unknowns])];
  if (variables.length === 0) return sameValue(x, y);
  if (variables.length > MAX_VARIABLES) return false;
  const ce = computeEngine();
  let agreements = 0;
  for (let sample = 0; sample < SAMPLES; sample++) {
    const values = Object.fromEntries(
      variables.map((name, i) => [name, ce.number(SAMPLE_POINTS[(sample + 3 * i) % SAMPLE_POINTS.length])]),
    );
    const xv = x.subs(values).N();
    const yv = y.subs(values).N();
    const finite = Number.isFinite(xv.re) && Number.isFinite(yv.re);
    if (!finite) continue;
    if (!sameValue(xv, yv)) return false;
    agreements++;
  }
  return agreements >= 3;
}

function sameValue(x: Expression, y: Expression): boolean {
  const xv = x.N();
  const yv = y.N();
  const [xr, xi, yr, yi] = [xv.re, xv.im, yv.re, yv.im].map((part) => (Number.isNaN(part) ? 0 : part));
  if (Number.isNaN(xv.re) || Number.isNaN(yv.re)) return false;
  return closeNumbers(xr, yr) && closeNumbers(xi, yi);
}
