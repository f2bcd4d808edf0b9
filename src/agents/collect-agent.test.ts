/**
 * `data collect --agent`: an agent's episodes through the gateway become a dataset the `data`
 * commands read. Against the scripted expert (deterministic, always right) it keeps exactly the
 * episodes `data collect --policy expert --noise 0` keeps, under the same ids and task order;
 * against the embedded base the filter and per-task quota reject as in process (every kept episode
 * passes, at most `keep-per-task` per task, kept + rejected = episodes) and kept trajectories hold
 * the exact ids the gateway recorded. The CLI case runs collect and export as a user would.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import openaiAgent from "../../examples/agents/openai.ts";
import { collectDataset } from "../data/collect.ts";
import { loadDataset } from "../data/dataset.ts";
import { datasetStats } from "../data/stats.ts";
import { flattenTrajectory } from "../types/trajectory.ts";
import { collectAgentDataset } from "./collect-agent.ts";
import type { AgentFunction } from "./types.ts";

const run = promisify(execFile);
const agent = openaiAgent as unknown as AgentFunction;

test("with the expert behind the gateway it keeps what in-process collect keeps", async () => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-agent-collect-"));
  try {
    const tasks = { count: 4, seed: 7 };
    const viaAgent = await collectAgentDataset({
      agentPath: "examples/agents/openai.ts",
      agent,
      policy: "expert",
      tasks,
      seed: 7,
      samplesPerTask: 2,
      maxKeptPerTask: 1,
      out: join(root, "agent"),
    });
    const inProcess = await collectDataset({
      policy: "expert",
      tasks,
      seed: 7,
      noise: 0,
      samplesPerTask: 2,
      out: join(root, "loop"),
    });
    assert.equal(viaAgent.kept, inProcess.kept);
    assert.deepEqual(viaAgent.rejections, inProcess.rejections);
    const a = loadDataset(viaAgent.directory);
    const b = loadDataset(inProcess.directory);
    assert.deepEqual(
      a.trajectories.map((t) => t.id),
      b.trajectories.map((t) => t.id),
    );
    assert.equal(a.provenance.source, "collect");
    assert.deepEqual(a.provenance.agent, {
      module: "examples/agents/openai.ts",
      policy: "expert",
      timeoutMs: 120_000,
    });
    assert.deepEqual(
      a.tools?.map((tool) => tool.name),
      ["search", "calc"],
    );
    assert.ok(a.trajectories.every((t) => t.info?.gateway && t.info.source === "collect"));
    assert.equal(viaAgent.gateway.prefixBreaks, 0);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("against the base the filter and quota reject as in process; kept ids are the gateway's", async () => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-agent-collect-"));
  try {
    const result = await collectAgentDataset({
      agentPath: "examples/agents/openai.ts",
      agent,
      policy: "models/base-strong",
      temperature: 1,
      tasks: { count: 4, seed: 3, family: "lookup" },
      seed: 3,
      samplesPerTask: 3,
      maxKeptPerTask: 1,
      concurrency: 4,
      chunkTasks: 2,
      out: join(root, "base"),
    });
    assert.equal(result.episodes, 12);
    assert.equal(result.kept + result.rejected, 12);
    // Seeded end to end: this set has both right and wrong episodes, and a task solved twice.
    assert.ok(result.kept > 0 && (result.rejections.correct ?? 0) > 0, JSON.stringify(result));
    assert.ok((result.rejections["over-quota"] ?? 0) > 0, JSON.stringify(result.rejections));
    const dataset = loadDataset(result.directory);
    assert.equal(dataset.trajectories.length, result.kept);
    assert.ok(dataset.trajectories.every((t) => t.correct));
    assert.equal(new Set(dataset.trajectories.map((t) => t.taskId)).size, result.kept, "one per task");
    for (const trajectory of dataset.trajectories) {
      const flat = flattenTrajectory(trajectory);
      assert.ok(flat.lossMask.some(Boolean) && flat.logprobs.every(Number.isFinite));
    }
    assert.equal(datasetStats(dataset.trajectories).trajectories, result.kept);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("agentrl data collect --agent, then data export; a missing --policy is named", async () => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-agent-collect-cli-"));
  try {
    const cli = (...args: string[]) => run(process.execPath, ["bin/agentrl.js", "data", ...args]);
    const out = join(root, "ds");
    const collected = await cli(
      "collect",
      "--agent",
      "examples/agents/openai.ts",
      "--policy",
      "expert",
      "--tasks",
      "3",
      "--out",
      out,
      "--json",
    );
    const result = JSON.parse(collected.stdout);
    assert.equal(result.kept, 3);
    await cli("export", out, "--out", join(root, "sft.jsonl"));
    const lines = readFileSync(join(root, "sft.jsonl"), "utf8").trim().split("\n");
    assert.equal(lines.length, 3);
    assert.ok(JSON.parse(lines[0]).messages.some((m: { tool_calls?: unknown }) => m.tool_calls));
    await assert.rejects(
      cli("collect", "--agent", "examples/agents/openai.ts", "--tasks", "1"),
      (error: { stderr: string }) => /--agent needs --policy/.test(error.stderr),
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("agentrl data collect --agent-cmd keeps a Python agent's episodes, and never an agent failure", async () => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-agent-cmd-collect-"));
  try {
    const collect = (command: string, out: string) =>
      run(process.execPath, [
        "bin/agentrl.js",
        ...[
          "data",
          "collect",
          "--agent-cmd",
          command,
          "--policy",
          "expert",
          "--tasks",
          "3",
          "--filter",
          "all",
        ],
        ...["--out", join(root, out), "--json"],
      ]);
    const python = JSON.parse((await collect("python3 examples/agents/python_agent.py", "py")).stdout);
    assert.equal(python.kept, 3);
    // A command that exits with an error: its episodes are the agent's failures, not the model's data.
    const failing = JSON.parse((await collect(`python3 -c "import sys; sys.exit(3)"`, "failing")).stdout);
    assert.equal(failing.kept, 0);
    assert.deepEqual(failing.rejections, { "agent-failure": 3 });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
