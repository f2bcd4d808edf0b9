import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { DuckDBInstance } from "@duckdb/node-api";
import { parquetReadObjects } from "hyparquet";
import { register as registerData } from "../cli/commands/data.ts";
import { runCli } from "../cli/testing.ts";
import { runEpisodes } from "../env/run-episodes.ts";
import { worldToolsFor } from "../env/task-set.ts";
import { createMockPolicy } from "../policy/mock.ts";
import { scriptedPolicy } from "../policy/scripted/index.ts";
import { toolSpecsToOpenAi } from "../store/index.ts";
import { toolSpec } from "../tools/index.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { checkAnswer } from "../world/index.ts";
import { datasetTasks } from "./tasks.ts";
import { SFT_DATASET_TEMPLATE, verlParquetBuffer, verlRow } from "./verl-parquet.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-export-"));
after(() => rmSync(root, { recursive: true, force: true }));

/** Drops null/undefined object fields (parquet structs read absent keys back as null, as pyarrow does). */
function normalise(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalise);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== null && v !== undefined)
        .map(([k, v]) => [k, normalise(v)]),
    );
  }
  return value;
}

test("verl parquet round-trips: what hyparquet reads back equals what was written", async () => {
  const tasks = datasetTasks({ count: 12, seed: 9 });
  const tools = worldToolsFor()(tasks[0], 0).map(toolSpec);
  const noisy = await runEpisodes({
    policy: scriptedPolicy("expert"),
    episodes: tasks.map((task, i) => ({ task, seed: i })),
    tools: worldToolsFor({ noise: { error: 0.2, corrupted: 0.2 } }),
    verify: checkAnswer,
  });
  // One malformed turn too: it exports as an assistant message plus the error as a user message.
  const [garbled] = await runEpisodes({
    policy: createMockPolicy((c) => (c.turns.length === 0 ? "no tags here" : " <answer> 3 </answer>")),
    episodes: [{ task: tasks[0], seed: 1 }],
    tools: worldToolsFor(),
    verify: checkAnswer,
  });
  const trajectories: Trajectory[] = [...noisy, garbled];
  const rows = trajectories.map((t, i) => verlRow(t, tools, i === 0 ? "you are an agent ." : undefined));
  const back = await parquetReadObjects({ file: verlParquetBuffer(rows) });
  assert.equal(back.length, rows.length);
  // messages are nested parquet; tools are JSON text holding each row's tools exactly.
  assert.deepEqual(
    normalise(back.map(({ tools: _, ...row }) => row)),
    normalise(rows.map(({ tools: _, ...row }) => row)),
  );
  for (const row of back) assert.deepEqual(JSON.parse(row.tools as string), toolSpecsToOpenAi(tools));
  const first = back[0] as { messages: { role: string }[] };
  assert.deepEqual(
    first.messages.slice(0, 2).map((m) => m.role),
    ["system", "user"],
  );
});

/**
 * What verl's MultiTurnSFTDataset sees, read by DuckDB (not the writer's library) and decoded by the
 * Python dataset class the export writes beside the parquet, run with python3: every tool keeps its
 * own parameters (no other tool's fields as nulls), and every tool call's arguments are an object
 * equal to what the policy called.
 */
test("verl parquet through DuckDB and agentrl_sft_dataset.py: distinct tool schemas, arguments as objects", async () => {
  const tasks = datasetTasks({ count: 6, seed: 4 });
  const tools = worldToolsFor()(tasks[0], 0).map(toolSpec);
  const trajectories = await runEpisodes({
    policy: scriptedPolicy("expert"),
    episodes: tasks.map((task, i) => ({ task, seed: i })),
    tools: worldToolsFor(),
    verify: checkAnswer,
  });
  const parquet = join(root, "duck.parquet");
  writeFileSync(parquet, new Uint8Array(verlParquetBuffer(trajectories.map((t) => verlRow(t, tools)))));
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  let rows: Record<string, unknown>[];
  try {
    rows = (
      await connection.runAndReadAll(`SELECT messages, tools FROM read_parquet('${parquet}') ORDER BY id`)
    ).getRowObjectsJson() as Record<string, unknown>[];
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
  const input = join(root, "duck-rows.json");
  writeFileSync(input, JSON.stringify(rows));
  const script = `
import json, sys
sys.path.insert(0, ${JSON.stringify(dirname(fileURLToPath(SFT_DATASET_TEMPLATE)))})
from agentrl_sft_dataset import decode_messages, decode_tools
rows = json.load(open(${JSON.stringify(input)}))
print(json.dumps([{"messages": decode_messages(r["messages"]), "tools": decode_tools(r["tools"])} for r in rows]))`;
  const { stdout } = await promisify(execFile)("python3", ["-c", script], {
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
  });
  const decoded = JSON.parse(stdout) as {
    messages: { role: string; tool_calls?: { function: { name: string; arguments: unknown } }[] }[];
    tools: { function: { name: string; parameters: { properties: Record<string, unknown> } } }[];
  }[];
  const byId = [...trajectories].sort((a, b) => (a.id < b.id ? -1 : 1));
  assert.equal(decoded.length, byId.length);
  decoded.forEach((row, i) => {
    const properties = Object.fromEntries(
      row.tools.map((tool) => [tool.function.name, Object.keys(tool.function.parameters.properties)]),
    );
    assert.deepEqual(properties, { search: ["query"], calc: ["expression"] });
    assert.deepEqual(row.tools, toolSpecsToOpenAi(tools));
    const calls = row.messages.flatMap((m) => m.tool_calls ?? []).map((call) => call.function);
    const expected = byId[i].turns
      .map((turn) => turn.action)
      .filter((action) => action.type === "tool-call")
      .map((action) => ({ name: action.tool, arguments: action.arguments }));
    assert.ok(expected.length >= 1, "the expert calls a tool");
    assert.deepEqual(calls, expected);
    for (const message of row.messages)
      assert.ok(!(Object.values(message) as unknown[]).includes(null), "no null fields");
  });
  const both = decoded.filter((row) => {
    const names = new Set(row.messages.flatMap((m) => m.tool_calls ?? []).map((call) => call.function.name));
    return names.has("search") && names.has("calc");
  });
  assert.ok(both.length > 0, "some row calls both tools, whose arguments would merge as structs");
});

async function cli(args: string[]): Promise<string> {
  return (await runCli(registerData, args)).out.join("\n");
}

test("agentrl data stitch | collect | stats | export (openai-jsonl, verl-parquet)", async () => {
  const stitched = join(root, "stitched");
  const real = join(root, "real");
  await cli(["data", "stitch", "--tasks", "20", "--seed", "2", "--out", stitched, "--json"]);
  const collected = JSON.parse(
    await cli(["data", "collect", "--tasks", "20", "--seed", "2", "--noise", "0.3", "--out", real, "--json"]),
  );
  assert.equal(collected.kept + collected.rejected, 20);
  const stats = JSON.parse(await cli(["data", "stats", real, "--json"]));
  assert.equal(stats.trajectories, collected.kept);
  assert.equal(stats.provenance.source, "collect");
  assert.ok(stats.tool_failure_rate > 0);
  assert.match(await cli(["data", "stats", stitched]), /tool failures: 0\.0% of calls/);

  const jsonl = join(root, "out", "real.jsonl");
  await cli(["data", "export", real, "--format", "openai-jsonl", "--no-lossless", "--out", jsonl]);
  const lines = readFileSync(jsonl, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
  assert.equal(lines.length, collected.kept);
  assert.ok(lines.every((line) => line.messages && line.tools && !line.agentrl));

  const parquet = join(root, "out", "stitched.parquet");
  const summary = JSON.parse(
    await cli(["data", "export", stitched, "--format", "verl-parquet", "--out", parquet, "--json"]),
  );
  assert.equal(summary.written, 20);
  const rows = await parquetReadObjects({ file: new Uint8Array(readFileSync(parquet)).buffer });
  assert.equal(rows.length, 20);
  assert.ok(
    rows.every((row) => Array.isArray(row.messages) && Array.isArray(JSON.parse(row.tools as string))),
  );
  assert.ok(existsSync(join(root, "out", "agentrl_sft_dataset.py")), "the dataset class beside the parquet");
  await assert.rejects(
    cli(["data", "export", real, "--format", "csv", "--out", jsonl]),
    /--format must be one of openai-jsonl, verl-parquet/,
  );
});
