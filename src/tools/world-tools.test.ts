import assert from "node:assert/strict";
import { test } from "node:test";
import type { ToolResult } from "../types/tool.ts";
import { callTool } from "./call-tool.ts";
import { uniformNoise } from "./noise.ts";
import { toolSpec } from "./spec.ts";
import { worldTools } from "./world-tools.ts";

const WORLD = {
  documents: [
    { id: "c1", title: "zenda", text: "zenda : city in ruritania . population 4213 . founded 1850 ." },
    { id: "c2", title: "zendar", text: "zendar : city in ruritania . population 977 . founded 1902 ." },
    { id: "k1", title: "ruritania", text: "ruritania : country . capital zenda . founded 1204 ." },
  ],
};

test("worldTools: search and calc over the world's documents", async () => {
  const [search, calc] = worldTools(WORLD);
  assert.deepEqual(
    [search.name, search.textArgument, calc.name, calc.textArgument],
    ["search", "query", "calc", "expression"],
  );
  assert.deepEqual((await callTool(search, { query: "zendar" })).refs, ["c2"]);
  assert.equal((await callTool(calc, { expression: "1902 - 1850" })).content, "52");
  const topTwo = worldTools(WORLD, { topK: 2 })[0];
  assert.equal((await callTool(topTwo, { query: "zenda" })).refs?.length, 2);
  assert.equal(
    (await worldTools(WORLD, { unsignedCalc: true })[1].call({ expression: "1 - 3" })).content,
    "2",
  );
});

test("worldTools noise: seeded per tool, reproducible, validated", async () => {
  const outcomes = async (seed: number) => {
    const [search, calc] = worldTools(WORLD, { noise: uniformNoise(0.5), seed });
    const results: ToolResult[] = [];
    for (let i = 0; i < 100; i++) {
      results.push(await callTool(search, { query: "zenda" }), await callTool(calc, { expression: "2 + 2" }));
    }
    return results.map((result) => `${result.status}/${result.injected}/${result.content}`);
  };
  const a = await outcomes(1);
  assert.deepEqual(a, await outcomes(1));
  assert.notDeepEqual(a, await outcomes(2));
  assert.ok(a.some((outcome) => outcome.includes("/true/")));
  assert.ok(a.some((outcome) => outcome.startsWith("ok/false/")));
  assert.throws(() => worldTools(WORLD, { noise: { error: 3 } }), /"error"/);
});

test("toolSpec: JSON schema of the arguments and the text argument", () => {
  const [search, calc] = worldTools(WORLD);
  assert.deepEqual(toolSpec(search), {
    name: "search",
    description: search.description,
    parameters: {
      type: "object",
      properties: {
        query: { type: "string", description: "What to look for, for example the name of an entity." },
      },
      required: ["query"],
      additionalProperties: false,
    },
    textArgument: "query",
  });
  const spec = toolSpec(calc);
  assert.deepEqual(spec.parameters.required, ["expression"]);
  assert.equal(spec.textArgument, "expression");
  assert.ok(!("$schema" in spec.parameters));
});
