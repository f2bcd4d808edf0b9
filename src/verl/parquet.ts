/**
 * Nested parquet for verl: rows of plain JSON values written as real parquet types (LIST of STRUCT,
 * not JSON strings), because verl hands what `pd.read_parquet` / `datasets` give back straight to
 * the chat template and the agent loop.
 *
 * The schema is inferred from the values the way pyarrow infers it from Python dicts: a struct has
 * the union of the keys seen at its path, and a row without a key reads back as null there. That
 * union is the trap for anything whose keys differ from row to row (or between the elements of one
 * list): two tool schemas with different `properties`, or the `arguments` of two different tools,
 * would each gain the other's fields as nulls, which the chat template then shows the model. Such
 * values are wrapped in `jsonText(value)` and stored as one JSON string (parquet JSON type), each
 * exactly as it was (a UTF8 column holding JSON text); the reader decodes them (see src/verl/templates/agentrl_sft_dataset.py).
 *
 * Whole numbers are INT64, other numbers DOUBLE (a path holding both is DOUBLE); an empty object,
 * or a path that holds values of different kinds, is stored as a JSON string.
 */
import { parquetWriteBuffer } from "hyparquet-writer";

/** A value stored as one JSON string column value instead of nested parquet types. */
export class JsonText {
  readonly value: unknown;
  constructor(value: unknown) {
    this.value = value;
  }
}

/** Marks `value` to be written as a JSON string (see the file comment). */
export function jsonText(value: unknown): JsonText {
  return new JsonText(value);
}

type SchemaNode =
  | { kind: "string" }
  | { kind: "double" }
  | { kind: "int64" }
  | { kind: "boolean" }
  | { kind: "json" }
  | { kind: "null" }
  | { kind: "list"; element: SchemaNode }
  | { kind: "struct"; fields: Map<string, SchemaNode> };

function infer(value: unknown): SchemaNode {
  if (value === null || value === undefined) return { kind: "null" };
  if (value instanceof JsonText) return { kind: "json" };
  if (typeof value === "string") return { kind: "string" };
  if (typeof value === "number") return Number.isSafeInteger(value) ? { kind: "int64" } : { kind: "double" };
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
  const numbers = new Set(["int64", "double"]);
  if (numbers.has(a.kind) && numbers.has(b.kind)) return a.kind === b.kind ? a : { kind: "double" };
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
      // A plain UTF8 string holding JSON text: every reader (pyarrow of any version, datasets,
      // DuckDB) gives back a str, which the Python side decodes with json.loads.
      return [{ name, type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" }];
    case "double":
      return [{ name, type: "DOUBLE", repetition_type: "OPTIONAL" }];
    case "int64":
      return [{ name, type: "INT64", repetition_type: "OPTIONAL" }];
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
      return JSON.stringify(value instanceof JsonText ? value.value : value);
    case "int64":
      return BigInt(value as number);
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

/** The bytes of a parquet file holding `rows` (columns: the keys of the first row, in order). */
export function nestedParquetBuffer(rows: readonly Record<string, unknown>[]): ArrayBuffer {
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
