/**
 * Code-generation tasks: the tests of a task row, the program in an answer, and how an output is
 * compared with the expected one. Rows are read as the benchmarks ship them (row.ts keeps every
 * unknown field in `task.metadata`):
 *
 * - LiveCodeBench: `public_test_cases` and `private_test_cases`, each a list (or its JSON text) of
 *   `{ input, output, testtype: "stdin" | "functional" }`; private tests may also be the release's
 *   compressed form (base64 of zlib of a pickled JSON string, decoded here without unpickling
 *   anything but one string); `metadata.func_name` names the function of functional tests, whose
 *   input is one JSON value per line (the arguments) and output one JSON value.
 * - APPS / TACO: `input_output` (or its JSON text) `{ inputs, outputs, fn_name? }`: stdin/stdout
 *   texts (a list of lines is joined), or with `fn_name` argument lists and return values (APPS
 *   wraps a return value in a one-element list; either form is accepted).
 * - Plain: `tests` (or `public_tests` + `hidden_tests`/`private_tests`) as `{ input, output }`
 *   lists, with `fn_name`/`func_name` for call-based ones (input: a JSON list of arguments).
 *
 * The program is the last fenced ```python block of the answer's visible part (after `</think>`),
 * else the last untagged fenced block. Outputs compare line by line after trimming each line and
 * dropping trailing blank lines; lines that differ still match when they hold the same tokens, with
 * numbers equal to a relative 1e-9 (`0.5` = `0.50`). Return values compare as JSON, numbers to the
 * same tolerance, tuples as lists.
 */
import { inflateSync } from "node:zlib";
import type { Task } from "../types/task.ts";
import { visibleText } from "./extract.ts";

export interface CodeTest {
  /** stdin text (`stdio`) or the JSON text of the argument list (`call`). */
  input: string;
  /** Expected stdout (`stdio`) or the JSON text of the expected value (`call`). */
  output: string;
  hidden: boolean;
}

export interface CodeTests {
  mode: "stdio" | "call";
  fnName?: string;
  tests: CodeTest[];
}

type Row = Record<string, unknown>;

function isObject(value: unknown): value is Row {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A JSON text is parsed; anything else is returned as is. */
function parsed(value: unknown): unknown {
  if (typeof value !== "string") return value;
  const text = value.trim();
  if (!text.startsWith("[") && !text.startsWith("{")) return value;
  try {
    return JSON.parse(text);
  } catch {
    return value;
  }
}

/**
 * The string inside a pickle that holds exactly one string (protocols 2-5: optional FRAME, one
 * SHORT_BINUNICODE / BINUNICODE / BINUNICODE8, optional MEMOIZE, STOP); anything else is refused.
 */
export function unpickleString(bytes: Uint8Array): string | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  if (bytes[at] !== 0x80) return null;
  at += 2;
  if (bytes[at] === 0x95) at += 9; // FRAME + 8-byte length
  const opcode = bytes[at++];
  let length: number;
  if (opcode === 0x8c) length = bytes[at++];
  else if (opcode === 0x58) {
    length = view.getUint32(at, true);
    at += 4;
  } else if (opcode === 0x8d) {
    length = Number(view.getBigUint64(at, true));
    at += 8;
  } else return null;
  if (at + length > bytes.length) return null;
  const text = new TextDecoder().decode(bytes.subarray(at, at + length));
  at += length;
  if (bytes[at] === 0x94) at++;
  return bytes[at] === 0x2e ? text : null;
}

/** LiveCodeBench's compressed private tests, or null when the text is not that form. */
function decompressedTests(value: string): unknown {
  if (!/^[A-Za-z0-9+/=\s]+$/.test(value) || value.length < 16) return null;
  try {
    const text = unpickleString(inflateSync(Buffer.from(value, "base64"), { maxOutputLength: 2 ** 30 }));
    return text === null ? null : JSON.parse(text);
  } catch {
    return null;
  }
}

const asText = (value: unknown): string =>
  Array.isArray(value)
    ? value.map(String).join("\n")
    : typeof value === "string"
      ? value
      : JSON.stringify(value);

/** LiveCodeBench / plain `{ input, output, testtype? }` lists. */
function caseList(value: unknown, hidden: boolean): { tests: CodeTest[]; functional: boolean } | null {
  let list = parsed(value);
  if (typeof list === "string") list = decompressedTests(list);
  if (!Array.isArray(list)) return null;
  const tests: CodeTest[] = [];
  let functional = false;
  for (const item of list) {
    if (!isObject(item) || item.input === undefined || item.output === undefined) return null;
    if (item.testtype === "functional") functional = true;
    tests.push({ input: asText(item.input), output: asText(item.output), hidden });
  }
  return { tests, functional };
}

/** LiveCodeBench functional input: one JSON value per line → the JSON list of arguments. */
function linesToArguments(input: string): string {
  const args = input
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as unknown);
  return JSON.stringify(args);
}

function fnNameOf(metadata: Row): string | undefined {
  const inner = parsed(metadata.metadata);
  for (const source of [metadata, isObject(inner) ? inner : {}]) {
    for (const key of ["fn_name", "func_name", "function_name", "entry_point"]) {
      if (typeof source[key] === "string" && source[key]) return source[key] as string;
    }
  }
  return undefined;
}

/** The tests of a task, or null when the task has none in a known shape (`codeTestsProblem` says why). */
export function taskCodeTests(task: Task): CodeTests | null {
  const found = readCodeTests(task);
  return "problem" in found ? null : found;
}

/**
 * Why a task's tests cannot be read (null when they can): a code task without readable tests
 * would score every answer 0, so task files are checked with this before a run and refused,
 * naming the task and the reason.
 */
export function codeTestsProblem(task: Task): string | null {
  const found = readCodeTests(task);
  return "problem" in found ? found.problem : null;
}

function readCodeTests(task: Task): CodeTests | { problem: string } {
  const metadata = task.metadata ?? {};
  let fnName = fnNameOf(metadata);
  const tests: CodeTest[] = [];
  let functional = false;

  const io = parsed(metadata.input_output);
  if (isObject(io) && Array.isArray(io.inputs) && Array.isArray(io.outputs)) {
    if (typeof io.fn_name === "string") fnName = io.fn_name;
    const call = typeof fnName === "string" && typeof io.fn_name === "string";
    for (let i = 0; i < Math.min(io.inputs.length, io.outputs.length); i++) {
      if (call) {
        tests.push({
          input: JSON.stringify(io.inputs[i]),
          output: JSON.stringify(io.outputs[i]),
          hidden: false,
        });
      } else tests.push({ input: asText(io.inputs[i]), output: asText(io.outputs[i]), hidden: false });
    }
    functional = call;
  } else {
    const fields: [string, boolean][] = [
      ["public_test_cases", false],
      ["private_test_cases", true],
      ["tests", false],
      ["public_tests", false],
      ["hidden_tests", true],
      ["private_tests", true],
    ];
    for (const [field, hidden] of fields) {
      if (metadata[field] === undefined || metadata[field] === null) continue;
      const found = caseList(metadata[field], hidden);
      if (!found) return { problem: `metadata.${field} is not a list of {input, output} test cases` };
      tests.push(...found.tests);
      functional ||= found.functional;
    }
    if (functional && fnName) {
      try {
        for (const test of tests) test.input = linesToArguments(test.input);
      } catch (error) {
        if (!(error instanceof SyntaxError)) throw error;
        return { problem: `a functional test's input is not one JSON value per line (${error.message})` };
      }
    } else if (fnName && tests.length > 0 && tests.every((test) => Array.isArray(parsed(test.input)))) {
      functional = true; // plain rows: a JSON argument list per test
    }
  }
  if (tests.length === 0) {
    return {
      problem:
        "no tests: expected metadata.input_output {inputs, outputs} or one of public_test_cases, " +
        "private_test_cases, tests, public_tests, hidden_tests, private_tests",
    };
  }
  return functional && fnName ? { mode: "call", fnName, tests } : { mode: "stdio", tests };
}

/** The last fenced Python block of a response (else its last untagged fenced block), or null. */
export function extractProgram(answer: string): string | null {
  const text = visibleText(answer);
  let tagged: string | null = null;
  let untagged: string | null = null;
  const fence = /```([A-Za-z0-9_+-]*)[^\n]*\n/g;
  for (let match = fence.exec(text); match; match = fence.exec(text)) {
    const start = match.index + match[0].length;
    const end = text.indexOf("```", start);
    if (end < 0) break;
    const language = match[1].toLowerCase();
    const body = text.slice(start, end);
    if (language === "python" || language === "py" || language === "python3") tagged = body;
    else if (language === "") untagged = body;
    fence.lastIndex = end + 3;
  }
  const program = tagged ?? untagged;
  return program?.trim() ? program : null;
}

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

function numbersClose(a: number, b: number): boolean {
  return a === b || Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));
}

function lines(text: string): string[] {
  const all = text
    .replace(/\r\n?/g, "\n")
    .split("\n")
    .map((line) => line.trim());
  while (all.length > 0 && all[all.length - 1] === "") all.pop();
  return all;
}

/** Printed output against the expected output (rules in the file comment). */
export function stdoutMatches(actual: string, expected: string): boolean {
  const got = lines(actual);
  const want = lines(expected);
  if (got.length !== want.length) return false;
  for (let i = 0; i < got.length; i++) {
    if (got[i] === want[i]) continue;
    const a = got[i].split(/\s+/);
    const b = want[i].split(/\s+/);
    if (a.length !== b.length) return false;
    for (let j = 0; j < a.length; j++) {
      if (a[j] === b[j]) continue;
      if (!NUMBER.test(a[j]) || !NUMBER.test(b[j]) || !numbersClose(Number(a[j]), Number(b[j]))) return false;
    }
  }
  return true;
}

function valuesEqual(a: unknown, b: unknown): boolean {
  if (typeof a === "number" && typeof b === "number") return numbersClose(a, b);
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => valuesEqual(item, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length && keys.every((key) => key in b && valuesEqual(a[key], b[key]))
    );
  }
  return a === b;
}

/** A returned value (JSON text) against the expected one; APPS's one-element wrapping is accepted. */
export function returnMatches(actual: string, expected: string): boolean {
  let got: unknown;
  let want: unknown;
  try {
    got = JSON.parse(actual);
    want = JSON.parse(expected);
  } catch {
    return false;
  }
  if (valuesEqual(got, want)) return true;
  return Array.isArray(want) && want.length === 1 && valuesEqual(got, want[0]);
}
