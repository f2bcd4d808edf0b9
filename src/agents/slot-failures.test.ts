/**
 * An agent that exits its process, one that hangs and one that allocates without bound each lose
 * only their own episode, at concurrency 8 against the scripted expert behind the gateway: in worker
 * slots (`--agent`: `process.exit`, a synchronous endless loop, an array grown past the slot's heap
 * limit) and in command slots (`--agent-cmd`: a non-zero exit, a hang whose background child must
 * die with its process group, no answer at all). The failed episodes are stored as `agent` failures
 * with their code (and a command's stderr); every other episode of the run is correct, with no failure.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { resolveEvalTasks } from "../eval/eval-tasks.ts";
import { openRunDirectory } from "../store/index.ts";
import type { Trajectory } from "../types/trajectory.ts";
import type { AgentSourceOptions } from "./agent-source.ts";
import { evaluateAgent } from "./evaluate-agent.ts";

const SOURCE = { type: "world", split: "test", count: 10, seed: 5 } as const;
const taskIds = resolveEvalTasks(SOURCE).map((task) => task.id);

async function runAgent(root: string, agent: AgentSourceOptions): Promise<Map<string, Trajectory>> {
  await evaluateAgent({
    ...agent,
    policy: "expert",
    tasks: SOURCE,
    n: 1,
    concurrency: 8,
    // Long enough for a slot to import its agent and run out of heap on a loaded machine.
    timeoutMs: 8000,
    retries: 0,
    runsRoot: root,
    runId: "failures",
  });
  const store = openRunDirectory(join(root, "failures"));
  try {
    const trajectories = store.trajectories(store.listRuns()[0].id);
    return new Map(trajectories.map((trajectory) => [trajectory.taskId, trajectory]));
  } finally {
    store.close();
  }
}

/** Whether process `pid` is gone (or a zombie nobody reaps yet) within 3 s. */
async function diesSoon(pid: number): Promise<boolean> {
  for (let waited = 0; waited < 3000; waited += 50) {
    let state: string;
    try {
      state = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "")[0];
    } catch {
      return true;
    }
    if (state === "Z") return true;
    await new Promise((done) => setTimeout(done, 50));
  }
  return false;
}

function assertOnlyTheirOwn(byTask: Map<string, Trajectory>, expected: Record<string, string>) {
  assert.equal(byTask.size, taskIds.length, "every episode stored");
  for (const id of taskIds) {
    const trajectory = byTask.get(id)!;
    const code = expected[id];
    if (code) {
      assert.equal(trajectory.failure?.class, "agent", `${id}: an agent failure`);
      assert.equal(trajectory.failure?.code, code, `${id}: ${trajectory.failure?.message}`);
      assert.equal(trajectory.correct, false);
    } else {
      assert.equal(trajectory.failure, undefined, `${id}: ${trajectory.failure?.message}`);
      assert.equal(trajectory.correct, true, `${id}: the expert answers right`);
    }
  }
}

test("worker slots: an agent that exits, hangs or allocates without bound loses only its own episode", async () => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-slot-failures-"));
  try {
    const path = join(root, "faulty.ts");
    const [exits, hangs, allocates] = taskIds;
    writeFileSync(
      path,
      [
        `import agent from ${JSON.stringify(resolve("examples/agents/openai-env.ts"))};`,
        "export default async function faulty(task, context) {",
        `  if (task.id === ${JSON.stringify(exits)}) process.exit(3);`,
        `  if (task.id === ${JSON.stringify(hangs)}) for (;;) {}`,
        `  if (task.id === ${JSON.stringify(allocates)}) { const kept = []; for (;;) kept.push(new Array(1e6).fill(kept.length)); }`,
        "  return agent(task, context);",
        "}",
      ].join("\n"),
    );
    const byTask = await runAgent(root, { agentPath: path, agentMemoryMb: 128 });
    assertOnlyTheirOwn(byTask, {
      [exits]: "agent-exited",
      [hangs]: "agent-timeout",
      [allocates]: "agent-out-of-memory",
    });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("command slots: a command that exits, hangs (with a child) or prints nothing loses only its own episode", async () => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-cmd-failures-"));
  try {
    const [exits, hangs, silent] = taskIds;
    const childPid = join(root, "child.pid");
    const script = join(root, "faulty.py");
    writeFileSync(
      script,
      [
        "import json, os, subprocess, sys, time",
        "task = json.loads(sys.stdin.readline())",
        `if task["id"] == ${JSON.stringify(exits)}: print("giving up on " + task["id"], file=sys.stderr); sys.exit(3)`,
        `if task["id"] == ${JSON.stringify(hangs)}:`,
        `    child = subprocess.Popen(["sleep", "600"])`,
        `    open(${JSON.stringify(childPid)}, "w").write(str(child.pid))`,
        "    time.sleep(600)",
        `if task["id"] == ${JSON.stringify(silent)}: sys.exit(0)`,
        "sys.stdin = __import__('io').StringIO(json.dumps(task))",
        `exec(open(${JSON.stringify(resolve("examples/agents/python_agent.py"))}).read())`,
      ].join("\n"),
    );
    const byTask = await runAgent(root, { agentCommand: `python3 ${script}` });
    assertOnlyTheirOwn(byTask, {
      [exits]: "agent-exited",
      [hangs]: "agent-timeout",
      [silent]: "agent-no-answer",
    });
    const pid = Number(readFileSync(childPid, "utf8"));
    assert.ok(await diesSoon(pid), "the hung command's child died with its process group");
    assert.equal(
      byTask.get(exits)!.info?.agentStderr,
      `giving up on ${exits}\n`,
      "stderr kept with the episode",
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
