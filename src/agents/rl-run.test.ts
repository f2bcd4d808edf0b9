/**
 * The agent of an RL run lives in its config: `train rl --agent` stores it, `--resume` rolls out
 * the same one without being told, refuses a different one, and names a module that is gone. The
 * end-to-end case runs the CLI for one tiny step (2 episodes of the plain `openai` example agent),
 * resumes it, then resumes from a working directory where the module is not.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { DEFAULT_RL_CONFIG } from "../rl/config.ts";
import { directoryRun, openRunDirectory } from "../store/index.ts";
import { parseRlRunConfig, resumedRunAgent } from "./rl-run.ts";

const run = promisify(execFile);

test("the agent field is validated and kept beside the strict RL config", () => {
  const config = parseRlRunConfig({ steps: 3, agent: { module: "a.ts", timeoutMs: 5000 } });
  assert.equal(config.steps, 3);
  assert.deepEqual(config.agent, { module: "a.ts", timeoutMs: 5000 });
  assert.equal(parseRlRunConfig({ steps: 3 }).agent, undefined);
  assert.throws(() => parseRlRunConfig({ agent: { module: 7, timeoutMs: 1 } }), /agent\.module/);
  assert.throws(() => parseRlRunConfig({ agent: { module: "a.ts", timeoutMs: -1 } }), /agent\.timeoutMs/);
  assert.throws(() => parseRlRunConfig({ agnet: {} }), /agnet/, "other unknown fields stay errors");
});

test("resume keeps the run's own agent", () => {
  const stored = { ...DEFAULT_RL_CONFIG, agent: { module: "examples/agents/openai.ts", timeoutMs: 1000 } };
  assert.deepEqual(resumedRunAgent(stored, undefined, "runs/x"), stored.agent);
  assert.deepEqual(resumedRunAgent(stored, "examples/agents/openai.ts", "runs/x"), stored.agent);
  assert.throws(() => resumedRunAgent(stored, "examples/agents/ai-sdk.ts", "runs/x"), /rolls out the agent/);
  assert.throws(
    () =>
      resumedRunAgent({ ...stored, agent: { module: "gone/agent.ts", timeoutMs: 1 } }, undefined, "runs/x"),
    /gone\/agent\.ts is gone/,
  );
  assert.equal(resumedRunAgent(DEFAULT_RL_CONFIG, undefined, "runs/x"), null);
  assert.throws(() => resumedRunAgent(DEFAULT_RL_CONFIG, "a.ts", "runs/x"), /started without --agent/);
});

test("train rl --agent stores the module; --resume uses it and names it when it is gone", async () => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-rl-agent-"));
  try {
    const cli = [join(process.cwd(), "bin/agentrl.js"), "train", "rl"];
    const dir = join(root, "rl");
    const flags = ["--steps", "1", "--tasks-per-step", "1", "--group-size", "2", "--families", "lookup"];
    await run(process.execPath, [
      ...cli,
      ...flags,
      "--eval-every",
      "0",
      "--agent",
      "examples/agents/openai.ts",
      "--agent-timeout",
      "60",
      "--runs",
      root,
      "--run-id",
      "rl",
      "--json",
    ]);
    const store = openRunDirectory(dir, { readOnly: true });
    const stored = directoryRun(store, dir);
    store.close();
    assert.deepEqual((stored.config as { agent?: unknown }).agent, {
      module: "examples/agents/openai.ts",
      timeoutMs: 60_000,
    });
    // Resumed with the same module (loaded from the config): the finished run completes again.
    const resumed = await run(process.execPath, [...cli, "--resume", dir, "--json"]);
    assert.match(resumed.stdout, /"steps"/);
    // From a directory where the module is not: a clear error, not a run without the agent.
    await assert.rejects(
      run(process.execPath, [...cli, "--resume", dir, "--json"], { cwd: root }),
      (error: { stderr: string }) => /examples\/agents\/openai\.ts is gone/.test(error.stderr),
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("an --agent-cmd run keeps its command: validated, resumed with it, refused a module", () => {
  const config = parseRlRunConfig({ steps: 3, agent: { command: "python3 agent.py", timeoutMs: 5000 } });
  assert.deepEqual(config.agent, { command: "python3 agent.py", timeoutMs: 5000 });
  assert.throws(
    () => parseRlRunConfig({ agent: { command: "", timeoutMs: 1 } }),
    /agent\.module.*agent\.command/,
  );
  assert.throws(() => parseRlRunConfig({ agent: { command: "x", timeoutMs: 0 } }), /agent\.timeoutMs/);
  const stored = { ...DEFAULT_RL_CONFIG, agent: { command: "python3 agent.py", timeoutMs: 1000 } };
  assert.deepEqual(resumedRunAgent(stored, undefined, "runs/x"), stored.agent);
  assert.deepEqual(resumedRunAgent(stored, undefined, "runs/x", "python3 agent.py"), stored.agent);
  assert.throws(() => resumedRunAgent(stored, undefined, "runs/x", "node agent.js"), /rolls out the command/);
  assert.throws(() => resumedRunAgent(stored, "a.ts", "runs/x"), /rolls out the command/);
  const moduleRun = { ...DEFAULT_RL_CONFIG, agent: { module: "examples/agents/openai.ts", timeoutMs: 1 } };
  assert.throws(() => resumedRunAgent(moduleRun, undefined, "runs/x", "python3 agent.py"), /not a command/);
});

test("train rl --agent-cmd rolls out a Python agent and stores its command", async () => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-rl-agent-cmd-"));
  try {
    const cli = [join(process.cwd(), "bin/agentrl.js"), "train", "rl"];
    const dir = join(root, "rl");
    const command = "python3 examples/agents/python_agent.py";
    const flags = ["--steps", "1", "--tasks-per-step", "1", "--group-size", "2", "--families", "lookup"];
    const { stdout } = await run(process.execPath, [
      ...cli,
      ...flags,
      "--eval-every",
      "0",
      "--agent-cmd",
      command,
      "--runs",
      root,
      "--run-id",
      "rl",
      "--json",
    ]);
    assert.match(stdout, /"steps"/);
    const store = openRunDirectory(dir, { readOnly: true });
    const stored = directoryRun(store, dir);
    const trajectories = store.trajectories(stored.id);
    store.close();
    assert.deepEqual((stored.config as { agent?: unknown }).agent, { command, timeoutMs: 120_000 });
    assert.equal(trajectories.length, 2, "the step's two episodes");
    for (const trajectory of trajectories) {
      assert.equal(trajectory.failure, undefined, `${trajectory.info?.agentStderr}`);
      assert.ok(trajectory.turns.every((turn) => turn.tokenIds.length > 0 && turn.logprobs?.length));
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
