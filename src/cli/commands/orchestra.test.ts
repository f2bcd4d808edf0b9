import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runCli } from "../testing.ts";
import { register } from "./orchestra.ts";

test("orchestra tasks prints tasks at each requested value, and names the valid axes on a bad one", async () => {
  const { out } = await runCli(register, [
    "orchestra",
    "tasks",
    "--axis",
    "depth",
    "--values",
    "2,4,6",
    "--count",
    "1",
  ]);
  const headers = out.filter((line) => line.startsWith("orch/"));
  assert.equal(headers.length, 3);
  assert.deepEqual(
    headers.map((line) => /depth (\d+)/.exec(line)?.[1]),
    ["2", "4", "6"],
  );
  const json = JSON.parse(
    (
      await runCli(register, ["orchestra", "tasks", "--axis", "robustness", "--values", "3", "--json"])
    ).out.join("\n"),
  );
  for (const task of json) assert.equal(task.metadata.orchestra.axes.robustness, 3);
  await assert.rejects(
    runCli(register, ["orchestra", "tasks", "--axis", "width"]),
    /depth, horizon, breadth, parallel, robustness/,
  );
  await assert.rejects(
    runCli(register, ["orchestra", "tasks", "--axis", "breadth", "--values", "1"]),
    /breadth must be an integer in \[2, 12\]/,
  );
});

test("orchestra pretrain → train → report, end to end on a tiny model", async () => {
  const dir = mkdtempSync(join(tmpdir(), "orchestra-cli-"));
  try {
    const pretrainConfig = join(dir, "base.json");
    writeFileSync(
      pretrainConfig,
      JSON.stringify({
        name: "tiny-orchestrator",
        mix: "strong",
        model: { dModel: 32, nLayers: 1, nHeads: 2, dFF: 64, maxLen: 256 },
        steps: 2,
        warmupSteps: 1,
        tokensPerStep: 1024,
        cardEpisodes: 0,
        out: join(dir, "models"),
      }),
    );
    const runs = join(dir, "runs");
    await runCli(register, [
      "orchestra",
      "pretrain",
      "--config",
      pretrainConfig,
      "--card-tasks",
      "2",
      "--runs",
      runs,
    ]);
    const base = join(dir, "models", "tiny-orchestrator");
    assert.ok(readFileSync(join(base, "MODEL_CARD.md"), "utf8").includes("Accuracy as an orchestrator"));

    const rlConfig = join(dir, "rl.json");
    writeFileSync(
      rlConfig,
      JSON.stringify({
        name: "tiny-grpo",
        base,
        steps: 1,
        tasksPerStep: 2,
        groupSize: 2,
        maxExtraRollouts: 0,
        out: join(dir, "models", "tiny-grpo"),
        orchestra: { axes: ["breadth"], maxValue: 2 },
      }),
    );
    await runCli(register, ["orchestra", "train", "--config", rlConfig, "--runs", runs]);
    assert.ok(existsSync(join(dir, "models", "tiny-grpo", "checkpoint.json")));
    assert.ok(
      readFileSync(join(dir, "models", "tiny-grpo", "MODEL_CARD.md"), "utf8").includes("1 steps of 2 tasks"),
    );
    await assert.rejects(
      runCli(register, [
        "orchestra",
        "train",
        "--config",
        rlConfig,
        "--runs",
        runs,
        "--base",
        base,
        "--seed",
        "-1",
      ]),
      /--seed/,
    );
    writeFileSync(rlConfig, JSON.stringify({ base, orchestra: { degree: "medium" } }));
    await assert.rejects(
      runCli(register, ["orchestra", "train", "--config", rlConfig, "--runs", runs]),
      /orchestra\.degree/,
    );

    const out = join(dir, "report");
    await runCli(register, [
      "orchestra",
      "report",
      "--policy",
      `grpo=${join(dir, "models", "tiny-grpo")}`,
      "--axes",
      "robustness",
      "--values",
      "2",
      "--tasks",
      "3",
      "--competence",
      "weak",
      "--out",
      out,
    ]);
    const report = JSON.parse(readFileSync(join(out, "orchestra.json"), "utf8"));
    assert.deepEqual(
      [...new Set(report.rows.map((row: { contender: string }) => row.contender))],
      ["single-agent", "delegate-one", "call-every", "grpo"],
    );
    for (const row of report.rows) assert.equal(row.tasks, 3);
    const html = readFileSync(join(out, "orchestra.html"), "utf8");
    assert.ok(html.includes("<svg") && html.includes("gain over the single agent"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
