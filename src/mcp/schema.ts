/**
 * An MCP tool's input JSON schema as a zod schema, so that arguments are checked by `callTool` and
 * by the chat parser before they go to the server, exactly like a built-in tool's.
 *
 * zod 4's `z.fromJSONSchema` does the conversion. Should it refuse a schema (a construct it does not
 * support), a permissive fallback is used: an object that requires the schema's `required` keys and
 * checks the basic `type` of each declared property (string, number, integer, boolean, array,
 * object, null), and lets anything else through. The server validates the arguments again anyway.
 */
import { z } from "zod";

type JsonSchema = Record<string, unknown>;

const BASIC: Record<string, () => z.ZodType> = {
  string: () => z.string(),
  number: () => z.number(),
  integer: () => z.number().int(),
  boolean: () => z.boolean(),
  array: () => z.array(z.unknown()),
  object: () => z.record(z.string(), z.unknown()),
  null: () => z.null(),
};

function basicType(schema: unknown): z.ZodType {
  const type = (schema as JsonSchema | undefined)?.type;
  const types = (Array.isArray(type) ? type : [type]).filter(
    (name): name is string => typeof name === "string" && name in BASIC,
  );
  if (types.length === 0) return z.unknown();
  const [firstType, ...rest] = types.map((name) => BASIC[name]());
  return rest.length === 0 ? firstType : z.union([firstType, ...rest]);
}

/** The permissive fallback (see the file comment). */
export function permissiveObjectSchema(schema: JsonSchema): z.ZodType<Record<string, unknown>> {
  const properties = (schema.properties ?? {}) as Record<string, unknown>;
  const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
  const shape: Record<string, z.ZodType> = {};
  for (const [name, property] of Object.entries(properties)) {
    const type = basicType(property);
    shape[name] = required.has(name) ? type : type.optional();
  }
  for (const name of required) shape[name] ??= z.unknown().refine((value) => value !== undefined);
  return z.looseObject(shape) as unknown as z.ZodType<Record<string, unknown>>;
}

/** Zod schema of an MCP tool's `inputSchema`, and whether the permissive fallback was needed. */
export function inputSchemaToZod(schema: JsonSchema): {
  schema: z.ZodType<Record<string, unknown>>;
  exact: boolean;
} {
  try {
    const converted = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
    return { schema: converted as z.ZodType<Record<string, unknown>>, exact: true };
  } catch {
    return { schema: permissiveObjectSchema(schema), exact: false };
  }
}

/** The argument the tagged text protocol fills: the first required string property, else the first string one. */
export function textArgumentOf(schema: JsonSchema): string {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = Array.isArray(schema.required) ? schema.required.map(String) : [];
  const isString = (name: string) => {
    const type = properties[name]?.type;
    return type === "string" || (Array.isArray(type) && type.includes("string"));
  };
  return required.find(isString) ?? Object.keys(properties).find(isString) ?? required[0] ?? "input";
}
