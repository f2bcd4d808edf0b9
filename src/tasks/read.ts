/**
 * Reading task files: JSONL (one JSON object per line; blank lines skipped), JSON (an array of
 * objects) and parquet (hyparquet; SNAPPY natively, GZIP, BROTLI and ZSTD through node:zlib). Every
 * row goes through `rowToTask` (row.ts); task ids must be unique within a file.
 */
import { readFileSync } from "node:fs";
import { basename, extname } from "node:path";
import { brotliDecompressSync, gunzipSync, zstdDecompressSync } from "node:zlib";
import { parquetReadObjects } from "hyparquet";
import type { Task } from "../types/task.ts";
import { rowToTask, TaskFileError } from "./row.ts";

export const TASK_FILE_FORMATS = ["jsonl", "json", "parquet"] as const;
export type TaskFileFormat = (typeof TASK_FILE_FORMATS)[number];

/** The format of a file from its extension (`.jsonl`/`.ndjson`, `.json`, `.parquet`). */
export function taskFileFormat(path: string): TaskFileFormat {
  const extension = extname(path).toLowerCase();
  if (extension === ".jsonl" || extension === ".ndjson") return "jsonl";
  if (extension === ".json") return "json";
  if (extension === ".parquet") return "parquet";
  throw new Error(`${path}: unknown task file type "${extension}" (expected .jsonl, .json or .parquet)`);
}

function stemOf(path: string): string {
  const name = basename(path);
  const extension = extname(name);
  return extension ? name.slice(0, -extension.length) : name;
}

/** Decompressors for the parquet codecs hyparquet does not decode itself. */
const PARQUET_DECOMPRESSORS = {
  GZIP: (input: Uint8Array) => new Uint8Array(gunzipSync(input)),
  BROTLI: (input: Uint8Array) => new Uint8Array(brotliDecompressSync(input)),
  ZSTD: (input: Uint8Array) => new Uint8Array(zstdDecompressSync(input)),
};

/** Raw rows of a file with their 1-based positions (lines for JSONL, rows otherwise). */
export async function readRows(path: string): Promise<{ row: unknown; position: number; where: string }[]> {
  const format = taskFileFormat(path);
  if (format === "parquet") {
    const bytes = readFileSync(path);
    const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    let rows: Record<string, unknown>[];
    try {
      rows = await parquetReadObjects({ file: buffer, compressors: PARQUET_DECOMPRESSORS });
    } catch (error) {
      throw new Error(`${path}: cannot read parquet: ${(error as Error).message}`);
    }
    return rows.map((row, i) => ({ row, position: i + 1, where: `${path} row ${i + 1}` }));
  }
  const text = readFileSync(path, "utf8");
  if (format === "json") {
    let rows: unknown;
    try {
      rows = JSON.parse(text);
    } catch (error) {
      throw new TaskFileError(path, `invalid JSON: ${(error as Error).message}`);
    }
    if (!Array.isArray(rows)) throw new TaskFileError(path, "a .json task file must hold an array of rows");
    return rows.map((row, i) => ({ row, position: i + 1, where: `${path} row ${i + 1}` }));
  }
  const rows: { row: unknown; position: number; where: string }[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].replace(/\r$/, "").replace(/^\uFEFF/, "");
    if (!line.trim()) continue;
    const where = `${path}:${i + 1}`;
    try {
      rows.push({ row: JSON.parse(line), position: i + 1, where });
    } catch (error) {
      throw new TaskFileError(where, `invalid JSON: ${(error as Error).message}`);
    }
  }
  return rows;
}

/** Every task of a file, in file order; throws `TaskFileError` at the first malformed row. */
export async function readTaskFile(path: string): Promise<Task[]> {
  const stem = stemOf(path);
  const tasks: Task[] = [];
  const seen = new Map<string, string>();
  for (const { row, position, where } of await readRows(path)) {
    const task = rowToTask(row, { stem, position, where });
    const previous = seen.get(task.id);
    if (previous !== undefined)
      throw new TaskFileError(where, `duplicate id "${task.id}" (also at ${previous})`);
    seen.set(task.id, where);
    tasks.push(task);
  }
  return tasks;
}
