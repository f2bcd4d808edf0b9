import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { parquetReadObjects } from "hyparquet";
import { register as registerData } from "../cli/commands/data.ts";
import { runCli } from "../cli/testing.ts";
import { runEpisodes } from "../env/run-episodes.ts";
import { worldToolsFor } from "../env/task-set.ts";
import { createMockPolicy } from "../policy/mock.ts";
import { scriptedPolicy } from "../policy/scripted/index.ts";
import { toolSpec } from "../tools/index.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { checkAnswer } from "../world/index.ts";
import { datasetTasks } from "./tasks.ts";
import { verlParquetBuffer, verlRow } from "./verl-parquet.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-export-"));

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
  assert.deepEqual(normalise(back), normalise(rows));
  const first = back[0] as { messages: { role: string }[]; tools: { function: { name: string } }[] };
  assert.deepEqual(
    first.messages.slice(0, 2).map((m) => m.role),
    ["system", "user"],
  );
  assert.deepEqual(
    first.tools.map((t) => t.function.name),
    ["search", "calc"],
  );
  const toolCall = (
    back[1] as { messages: { tool_calls?: { function: { arguments: string } }[] }[] }
  ).messages.find((m) => m.tool_calls)!;
  assert.equal(
    typeof toolCall.tool_calls![0].function.arguments,
    "string",
    "arguments as a JSON string, as verl's tests write them",
  );
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
  assert.ok(rows.every((row) => Array.isArray(row.messages) && Array.isArray(row.tools)));
  await assert.rejects(
    cli(["data", "export", real, "--format", "csv", "--out", jsonl]),
    /--format must be one of openai-jsonl, verl-parquet/,
  );
});
