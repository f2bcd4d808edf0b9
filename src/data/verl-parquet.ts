/**
 * verl's multi-turn SFT parquet: one row per trajectory with a `messages` column (the chat
 * messages, OpenAI format: `role`, `content`, assistant `tool_calls: [{ id, type: "function",
 * function: { name, arguments } }]` with `arguments` a JSON string, `tool` messages with
 * `tool_call_id`) and a `tools` column (OpenAI function tools: `{ type: "function", function:
 * { name, description, parameters } }`), as read by verl's `MultiTurnSFTDataset`
 * (verl/utils/dataset/multiturn_sft_dataset.py: `messages_key` default "messages", `tools_key`
 * default "tools", both passed through `convert_nested_value_to_list_recursive` to
 * `apply_chat_template(messages, tools=...)`; tests/utils/dataset/test_multiturn_sft_dataset_on_cpu.py
 * writes `tool_calls` with `function.arguments` as a JSON string). Assistant messages are what
 * verl's loss covers, as our SFT does. Extra columns `id`, `task_id`, `family` carry provenance;
 * verl ignores them.
 *
 * The columns are real nested parquet types (LIST of STRUCT), not JSON strings, because verl hands
 * the values to the chat template as they come out of pandas. The schema is inferred from the
 * values the way pyarrow infers it from Python dicts: a struct has the union of the keys seen at
 * its path and a row without a key reads back as null there (pyarrow does the same, so a `tools`
 * column written by pandas has the same shape). Numbers are DOUBLE; a path that holds values of
 * different kinds (or an empty object) is stored as a JSON string.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { parquetWriteBuffer } from "hyparquet-writer";
import {
  deriveToolSpecs,
  directoryRun,
  openRunDirectory,
  toolSpecsToOpenAi,
  trajectoryMessages,
} from "../store/index.ts";
import type { ToolSpec } from "../types/policy.ts";
import type { Trajectory } from "../types/trajectory.ts";

type SchemaNode =
  | { kind: "string" }
  | { kind: "double" }
  | { kind: "boolean" }
  | { kind: "json" }
  | { kind: "null" }
  | { kind: "list"; element: SchemaNode }
  | { kind: "struct"; fields: Map<string, SchemaNode> };

function infer(value: unknown): SchemaNode {
  if (value === null || value === undefined) return { kind: "null" };
  if (typeof value === "string") return { kind: "string" };
  if (typeof value === "number") return { kind: "double" };
  if (typeof value === "boolean") return { kind: "boolean" };
  if (Array.isArray(value))
    return { kind: "list", element: value.map(infer).reduce(merge, { kind: "null" }) };
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) return { kind: "json" };
    return { kind: "struct", fields: new Map(entries.map(([key, v]) => [key, infer(v)])) };
  }
  return { kind: "json" };
}

function merge(a: SchemaNode, b: SchemaNode): SchemaNode {
  if (a.kind === "null") return b;
  if (b.kind === "null") return a;
  if (a.kind === "list" && b.kind === "list") return { kind: "list", element: merge(a.element, b.element) };
  if (a.kind === "struct" && b.kind === "struct") {
    const fields = new Map(a.fields);
    for (const [key, node] of b.fields)
      fields.set(key, fields.has(key) ? merge(fields.get(key)!, node) : node);
    return { kind: "struct", fields };
  }
  return a.kind === b.kind ? a : { kind: "json" };
}

type SchemaElement = Record<string, unknown>;

/** Preorder parquet schema elements of a column (3-level LISTs, optional everything). */
function schemaElements(name: string, node: SchemaNode): SchemaElement[] {
  switch (node.kind) {
    case "string":
    case "null":
      return [{ name, type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" }];
    case "json":
      return [{ name, type: "BYTE_ARRAY", converted_type: "JSON", repetition_type: "OPTIONAL" }];
    case "double":
      return [{ name, type: "DOUBLE", repetition_type: "OPTIONAL" }];
    case "boolean":
      return [{ name, type: "BOOLEAN", repetition_type: "OPTIONAL" }];
    case "list":
      return [
        { name, repetition_type: "OPTIONAL", converted_type: "LIST", num_children: 1 },
        { name: "list", repetition_type: "REPEATED", num_children: 1 },
        ...schemaElements("element", node.element),
      ];
    case "struct":
      return [
        { name, repetition_type: "OPTIONAL", num_children: node.fields.size },
        ...[...node.fields].flatMap(([field, child]) => schemaElements(field, child)),
      ];
  }
}

/** The value as the writer wants it for `node` (JSON nodes stringified, absent fields null). */
function prepare(value: unknown, node: SchemaNode): unknown {
  if (value === null || value === undefined) return null;
  switch (node.kind) {
    case "json":
      return JSON.stringify(value);
    case "list":
      return (value as unknown[]).map((item) => prepare(item, node.element));
    case "struct":
      return Object.fromEntries(
        [...node.fields].map(([field, child]) => [
          field,
          prepare((value as Record<string, unknown>)[field], child),
        ]),
      );
    default:
      return value;
  }
}

/** One verl row of a trajectory. */
export function verlRow(
  trajectory: Trajectory,
  tools: readonly ToolSpec[],
  systemPrompt?: string,
): Record<string, unknown> {
  return {
    id: trajectory.id,
    task_id: trajectory.taskId,
    family: trajectory.family,
    messages: trajectoryMessages(trajectory, systemPrompt),
    tools: toolSpecsToOpenAi(tools),
  };
}

/** The bytes of a verl multi-turn SFT parquet file holding `rows` (from `verlRow`). */
export function verlParquetBuffer(rows: readonly Record<string, unknown>[]): ArrayBuffer {
  if (rows.length === 0) throw new Error("verl parquet: no rows to write");
  const names = Object.keys(rows[0]);
  const nodes = names.map((name) => rows.map((row) => infer(row[name])).reduce(merge, { kind: "null" }));
  const schema = [
    { name: "root", num_children: names.length },
    ...names.flatMap((name, i) => schemaElements(name, nodes[i])),
  ];
  return parquetWriteBuffer({
    columnData: names.map((name, i) => ({
      name,
      data: rows.map((row) => prepare(row[name], nodes[i])) as never[],
    })),
    schema: schema as never,
  });
}

export interface VerlExportOptions {
  correctOnly?: boolean;
  systemPrompt?: string;
  /** Overrides the run's recorded tool specs. */
  tools?: readonly ToolSpec[];
}

/** Writes a dataset (run) directory as verl multi-turn SFT parquet; returns the row count. */
export function exportVerlParquet(
  directory: string,
  path: string,
  options: VerlExportOptions = {},
): {
  written: number;
  tools: ToolSpec[];
} {
  const store = openRunDirectory(directory, { readOnly: true });
  try {
    const run = directoryRun(store, directory);
    const trajectories = store.trajectories(run.id, options.correctOnly ? { correct: true } : {});
    const tools = [...(options.tools ?? store.toolSpecs(run.id) ?? deriveToolSpecs(trajectories))];
    const rows = trajectories.map((trajectory) => verlRow(trajectory, tools, options.systemPrompt));
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, new Uint8Array(verlParquetBuffer(rows)));
    return { written: rows.length, tools };
  } finally {
    store.close();
  }
}
