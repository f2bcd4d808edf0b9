/**
 * JSON Lines files, streamed: one JSON value per line, written with backpressure and read one line
 * at a time, so a file larger than memory passes through. Values use the lossless codec
 * (json-codec.ts), which reads plain JSON as is. A malformed line is an error naming the file and
 * line number; blank lines are skipped.
 */
import { once } from "node:events";
import { createReadStream, createWriteStream, mkdirSync, renameSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import { createInterface } from "node:readline";
import { decodeJson, encodeJson } from "./json-codec.ts";

/** A problem with one line of a JSONL file; `line` is 1-based. */
export class JsonlError extends Error {
  readonly path: string;
  readonly line: number;

  constructor(path: string, line: number, message: string) {
    super(`${path}:${line}: ${message}`);
    this.name = "JsonlError";
    this.path = path;
    this.line = line;
  }
}

export interface JsonlRow {
  /** 1-based line number in the file, for error messages downstream. */
  line: number;
  value: unknown;
}

/** Yields each non-blank line's parsed value with its line number; throws `JsonlError` on bad JSON. */
export async function* readJsonl(path: string): AsyncGenerator<JsonlRow> {
  const lines = createInterface({ input: createReadStream(path, { encoding: "utf8" }), crlfDelay: Infinity });
  let line = 0;
  try {
    for await (const rawText of lines) {
      line++;
      const text = line === 1 ? rawText.replace(/^\uFEFF/, "") : rawText;
      if (text.trim() === "") continue;
      let value: unknown;
      try {
        value = decodeJson(text);
      } catch (error) {
        throw new JsonlError(path, line, `invalid JSON (${(error as Error).message})`);
      }
      yield { line, value };
    }
  } finally {
    lines.close();
  }
}

/**
 * Writes one line per row and returns the number of rows. The file appears only when complete:
 * rows go to a temporary file renamed over `path` at the end, so a crash or a throwing row source
 * never leaves half a file behind.
 */
export async function writeJsonl(
  path: string,
  rows: Iterable<unknown> | AsyncIterable<unknown>,
): Promise<number> {
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.tmp-${process.pid}`;
  const stream = createWriteStream(temporary, { encoding: "utf8" });
  let count = 0;
  try {
    for await (const row of rows) {
      if (row === undefined) throw new Error(`writeJsonl: row ${count + 1} is undefined`);
      if (!stream.write(`${encodeJson(row)}\n`)) await once(stream, "drain");
      count++;
    }
    stream.end();
    await once(stream, "finish");
  } catch (error) {
    stream.destroy();
    rmSync(temporary, { force: true });
    throw error;
  }
  renameSync(temporary, path);
  return count;
}
