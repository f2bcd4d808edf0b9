/**
 * Writing task files, JSONL or parquet by extension. A row holds the `Task` fields under their own
 * names (`systemPrompt`, `worldSeed`, …), so `readTaskFile(writeTaskFile(tasks))` gives the same
 * tasks back. In parquet, text fields are UTF-8 strings, `hops`/`worldSeed` doubles, and lists and
 * objects (`aliases`, `gold`, `evidence`, `metadata`) JSON columns; a column no task uses is left out.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { parquetWriteBuffer } from "hyparquet-writer";
import type { Task } from "../types/task.ts";
import { taskFileFormat } from "./read.ts";

/** The row of a task: its fields in a fixed order, absent ones left out. */
export function taskToRow(task: Task): Record<string, unknown> {
  const row: Record<string, unknown> = { id: task.id, question: task.question, answer: task.answer };
  if (task.aliases && task.aliases.length > 0) row.aliases = task.aliases;
  row.family = task.family;
  for (const key of ["template", "hops", "worldSeed", "split", "gold", "evidence", "systemPrompt"] as const) {
    if (task[key] !== undefined) row[key] = task[key];
  }
  if (task.metadata && Object.keys(task.metadata).length > 0) row.metadata = task.metadata;
  return row;
}

type ColumnType = "STRING" | "DOUBLE" | "JSON";

const COLUMNS: [keyof Task, ColumnType][] = [
  ["id", "STRING"],
  ["question", "STRING"],
  ["answer", "STRING"],
  ["aliases", "JSON"],
  ["family", "STRING"],
  ["template", "STRING"],
  ["hops", "DOUBLE"],
  ["worldSeed", "DOUBLE"],
  ["split", "STRING"],
  ["gold", "JSON"],
  ["evidence", "JSON"],
  ["systemPrompt", "STRING"],
  ["metadata", "JSON"],
];
const REQUIRED = new Set<keyof Task>(["id", "question", "answer", "family"]);

/** The bytes of a parquet file holding `tasks`. */
export function tasksToParquet(tasks: readonly Task[]): ArrayBuffer {
  const rows = tasks.map(taskToRow);
  const columnData = COLUMNS.filter(([name]) => REQUIRED.has(name) || rows.some((row) => name in row)).map(
    ([name, type]) => ({
      name,
      type,
      data: rows.map((row) => (row[name] === undefined ? null : row[name])) as never[],
    }),
  );
  return parquetWriteBuffer({ columnData });
}

/** Writes `tasks` to `path` (`.jsonl` or `.parquet`), creating its folder. */
export function writeTaskFile(path: string, tasks: readonly Task[]): void {
  const format = taskFileFormat(path);
  mkdirSync(dirname(path), { recursive: true });
  if (format === "parquet") {
    writeFileSync(path, new Uint8Array(tasksToParquet(tasks)));
  } else if (format === "jsonl") {
    writeFileSync(path, tasks.map((task) => `${JSON.stringify(taskToRow(task))}\n`).join(""));
  } else {
    writeFileSync(path, `${JSON.stringify(tasks.map(taskToRow), null, 2)}\n`);
  }
}
