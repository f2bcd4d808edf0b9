/**
 * The one loader of JSON config files (`--config` of recipe, train rl, train sft, pretrain,
 * orchestra; `--reward` spec files): every error names the file, a syntax error also its line and
 * column (`configs/rl.json:3:5: not valid JSON (…)`), so an editor can jump to it.
 */
import { readFileSync } from "node:fs";

/** Line and column (1-based) of a character offset in a text. */
export function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset).split("\n");
  return { line: before.length, column: before[before.length - 1].length + 1 };
}

/** `text` parsed as JSON; a syntax error says `<label> <path>:<line>:<column>: not valid JSON (…)`. */
export function parseJsonText(text: string, path: string, label: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    const message = (error as Error).message.replace(/\s*\(line \d+ column \d+\)$/, "");
    const offset = /at position (\d+)/.exec(message);
    // V8 gives no position when the text ends early: the error is at its end.
    const position = offset ? Number(offset[1]) : /end of JSON input/.test(message) ? text.length : null;
    const at =
      position === null ? "" : `:${lineColumn(text, position).line}:${lineColumn(text, position).column}`;
    throw new Error(`${label} ${path}${at}: not valid JSON (${message})`);
  }
}

/** The JSON in the file at `path`; unreadable or invalid files are errors naming it (see above). */
export function readJsonFile(path: string, label: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new Error(`${label} ${path}: cannot read the file (${(error as Error).message})`);
  }
  return parseJsonText(text.replace(/^\uFEFF/, ""), path, label);
}

/** A config file's object of fields (see `readJsonFile`); anything but a JSON object is an error. */
export function readConfigFile(path: string, label: string): Record<string, unknown> {
  const value = readJsonFile(path, label);
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new Error(`${label} ${path}: must hold a JSON object of config fields, not ${describe(value)}`);
  return value as Record<string, unknown>;
}

/**
 * Validates a config read from `path` (merged with flag overrides): a validation error is re-thrown
 * with the file named, so every config error says where it came from. Without a file, `parse` runs
 * as is.
 */
export function parseConfigFrom<T>(path: string | undefined, label: string, parse: () => T): T {
  if (path === undefined) return parse();
  try {
    return parse();
  } catch (error) {
    throw new Error(`${label} ${path} (with any flags given): ${(error as Error).message}`, { cause: error });
  }
}

function describe(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`;
}
