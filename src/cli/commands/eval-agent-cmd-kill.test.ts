/**
 * A killed `agentrl eval --agent-cmd` resumes without losing or duplicating an episode: the CLI runs
 * in a child process (expert behind the gateway, one episode at a time) with a Python agent that, on
 * its fourth episode, writes a marker and hangs; the parent SIGKILLs the CLI there (three episodes
 * stored, one in flight), ends the orphaned agent's process group (a SIGKILL gives the CLI no chance
 * to), resumes with `--resume` (the command comes from the run's config), and finds every episode
 * exactly once.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { episodeKey, openRunDirectory } from "../../store/index.ts";
import { runCli } from "../testing.ts";
import { register as registerEval } from "./eval.ts";

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

test("agentrl eval --agent-cmd killed with SIGKILL mid-run resumes with every episode exactly once", async () => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-agent-cmd-kill-"));
  let hungGroup: number | null = null;
  try {
    const marker = join(root, "hung");
    const counter = join(root, "started");
    const script = join(root, "hanging.py");
    writeFileSync(
      script,
      [
        "import io, json, os, sys, time",
        "task = json.loads(sys.stdin.readline())",
        // One byte appended per episode started: the count survives the processes.
        `with open(${JSON.stringify(counter)}, "a") as f: f.write("x")`,
        `started = os.path.getsize(${JSON.stringify(counter)})`,
        `if started == 4 and not os.path.exists(${JSON.stringify(marker)}):`,
        `    open(${JSON.stringify(marker)}, "w").write(task["id"] + "\\n" + str(os.getpgid(0)))`,
        "    time.sleep(600)",
        "sys.stdin = io.StringIO(json.dumps(task))",
        `exec(open(${JSON.stringify(resolve("examples/agents/python_agent.py"))}).read())`,
      ].join("\n"),
    );
    const args = [
      "eval",
      "--agent-cmd",
      `python3 ${script}`,
      "--policy",
      "expert",
      "--tasks",
      "4",
      "--n",
      "2",
    ];
    const common = ["--concurrency", "1", "--runs", root, "--run-id", "k"];
    const child = spawn(process.execPath, ["src/cli/main.ts", ...args, ...common], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    const exited = new Promise<NodeJS.Signals | null>((done) =>
      child.on("exit", (_code, signal) => done(signal)),
    );
    for (let waited = 0; !existsSync(marker) || !readFileSync(marker, "utf8").includes("\n"); waited += 50) {
      assert.ok(waited < 60_000 && child.exitCode === null, `the agent never hung: ${stderr}`);
      await sleep(50);
    }
    child.kill("SIGKILL");
    assert.equal(await exited, "SIGKILL");
    const [hungTask, group] = readFileSync(marker, "utf8").split("\n");
    hungGroup = Number(group);

    const killed = openRunDirectory(join(root, "k"));
    const storedAtKill = [...killed.episodeKeys(killed.listRuns()[0].id)];
    killed.close();
    assert.equal(storedAtKill.length, 3, "three episodes finished before the kill");
    assert.ok(
      !storedAtKill.some((key) => key.startsWith(`${hungTask}#1`)),
      "the episode in flight was not stored",
    );

    const { out } = await runCli([registerEval], ["eval", "--resume", join(root, "k"), "--json"]);
    const result = JSON.parse(out.join("\n"));
    assert.deepEqual(result.episodes, { resumed: 3, sampled: 5 });
    const store = openRunDirectory(join(root, "k"));
    try {
      const run = store.listRuns()[0];
      const keys = [...store.episodeKeys(run.id)].sort();
      const expected = result.counts.flatMap((count: { taskId: string }) =>
        [0, 1].map((s) => episodeKey(count.taskId, s)),
      );
      assert.deepEqual(keys, expected.sort());
      assert.equal(store.countTrajectories(run.id), 8, "no episode stored twice");
      for (const trajectory of store.trajectories(run.id))
        assert.equal(
          trajectory.failure,
          undefined,
          `${trajectory.id}: ${trajectory.failure?.message}: ${trajectory.info?.agentStderr}`,
        );
      assert.ok(
        keys.some((key) => key.startsWith(`${hungTask}#`)),
        "the episode cut by the kill was run again",
      );
      assert.equal(run.status, "completed");
    } finally {
      store.close();
    }
  } finally {
    if (hungGroup !== null) {
      try {
        process.kill(-hungGroup, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    rmSync(root, { recursive: true, force: true });
  }
});
