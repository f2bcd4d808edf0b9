import assert from "node:assert/strict";
import { test } from "node:test";
import { toolSpec } from "../tools/index.ts";
import { type McpTool, toToolResult } from "./client.ts";
import { inputSchemaToZod, permissiveObjectSchema, textArgumentOf } from "./schema.ts";

test("JSON schemas become zod schemas that check required keys and types", () => {
  const { schema, exact } = inputSchemaToZod({
    type: "object",
    properties: {
      limit: { type: "integer", description: "how many" },
      query: { type: "string", description: "what to find" },
      tags: { type: "array", items: { type: "string" } },
    },
    required: ["query"],
  });
  assert.equal(exact, true);
  assert.equal(schema.safeParse({ query: "x" }).success, true);
  assert.equal(schema.safeParse({ query: "x", limit: 3, tags: ["a"] }).success, true);
  assert.equal(schema.safeParse({ limit: 3 }).success, false);
  assert.equal(schema.safeParse({ query: 1 }).success, false);
  assert.equal(schema.safeParse({ query: "x", limit: 1.5 }).success, false);
  // The spec a chat policy sees keeps the descriptions.
  const spec = toolSpec({
    name: "t",
    description: "d",
    schema,
    textArgument: "query",
    call: async () => ({ status: "ok", content: "", injected: false }),
  });
  assert.equal(
    (spec.parameters.properties as Record<string, { description?: string }>).query.description,
    "what to find",
  );
});

test("schemas zod cannot convert fall back to a permissive object that still checks basics", () => {
  const json = {
    type: "object",
    properties: { a: { type: "string" }, b: { not: { type: "string" } }, c: { type: ["number", "null"] } },
    required: ["a", "b"],
  };
  const { schema, exact } = inputSchemaToZod(json);
  assert.equal(exact, false);
  assert.equal(schema.safeParse({ a: "x", b: 1 }).success, true);
  assert.equal(schema.safeParse({ a: "x", b: 1, extra: true, c: null }).success, true);
  assert.equal(schema.safeParse({ a: "x" }).success, false); // b is required
  assert.equal(schema.safeParse({ a: 2, b: 1 }).success, false);
  assert.equal(schema.safeParse({ a: "x", b: 1, c: "no" }).success, false);
  assert.equal(permissiveObjectSchema({ required: ["z"] }).safeParse({}).success, false);
});

test("text argument: first required string, else first string, else first required", () => {
  const properties = { n: { type: "number" }, q: { type: "string" }, r: { type: "string" } };
  assert.equal(textArgumentOf({ properties, required: ["n", "r"] }), "r");
  assert.equal(textArgumentOf({ properties, required: ["n"] }), "q");
  assert.equal(textArgumentOf({ properties: { n: { type: "number" } }, required: ["n"] }), "n");
  assert.equal(textArgumentOf({}), "input");
});

test("tools/call results of any server map onto statuses", () => {
  const text = (value: string) => ({ type: "text", text: value });
  assert.deepEqual(toToolResult({ content: [text("a"), text("b")] }, 100, true), {
    status: "ok",
    content: "a\nb",
    injected: false,
  });
  assert.equal(toToolResult({ content: [text("bad")], isError: true }, 100, true).status, "error");
  assert.deepEqual(toToolResult({ content: [] }, 100, true), {
    status: "empty",
    content: "(empty result)",
    injected: false,
  });
  assert.equal(
    toToolResult(
      { content: [{ type: "image", data: "...", mimeType: "image/png" }, text("caption")] },
      100,
      true,
    ).content,
    "[image image/png]\ncaption",
  );
  assert.equal(toToolResult({ content: [], structuredContent: { x: 1 } }, 100, true).content, '{"x":1}');
  assert.equal(
    toToolResult({ content: [text("x".repeat(50))] }, 10, true).content,
    `${"x".repeat(10)}\n[truncated]`,
  );
  // agentrl labels: used when trusted and well-formed, ignored otherwise.
  const labelled = {
    content: [text("no results")],
    _meta: { "agentrl/result": { status: "empty", injected: true } },
  };
  assert.deepEqual(toToolResult(labelled, 100, true), {
    status: "empty",
    content: "no results",
    injected: true,
  });
  assert.deepEqual(toToolResult(labelled, 100, false), {
    status: "ok",
    content: "no results",
    injected: false,
  });
  const forged = {
    content: [text("x")],
    _meta: { "agentrl/result": { status: "exploded", injected: true } },
  };
  assert.equal(toToolResult(forged, 100, true).injected, false);
  assert.deepEqual(toToolResult(null, 100, true), {
    status: "empty",
    content: "(empty result)",
    injected: false,
  });
});

test("an McpTool is a Tool", () => {
  const tool: McpTool = {
    name: "x",
    mcpName: "x",
    description: "",
    schema: permissiveObjectSchema({}),
    inputSchema: {},
    exactSchema: false,
    textArgument: "input",
    call: async () => ({ status: "ok", content: "", injected: false }),
  };
  assert.equal(tool.textArgument, "input");
});
