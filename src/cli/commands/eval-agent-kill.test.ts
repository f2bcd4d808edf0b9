/**
 * A killed `agentrl eval --agent` resumes without losing or duplicating an episode: the CLI runs in
 * a child process (expert behind the gateway, one episode at a time) with an agent that, on its
 * fourth episode, writes a marker and hangs; the parent SIGKILLs it there (three episodes stored,
 * one in flight), resumes with `--resume`, and finds every episode exactly once.
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

test("agentrl eval --agent killed with SIGKILL mid-run resumes with every episode exactly once", async () => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-agent-kill-"));
  try {
    const marker = join(root, "hung");
    const agentPath = join(root, "hanging-agent.ts");
    writeFileSync(
      agentPath,
      [
        `import agent from ${JSON.stringify(resolve("examples/agents/openai.ts"))};`,
        `import { existsSync, writeFileSync } from "node:fs";`,
        "let started = 0;",
        "export default async function hanging(task, context) {",
        `  if (++started === 4 && !existsSync(${JSON.stringify(marker)})) {`,
        `    writeFileSync(${JSON.stringify(marker)}, task.id);`,
        "    await new Promise(() => {});",
        "  }",
        "  return agent(task, context);",
        "}",
      ].join("\n"),
    );
    const args = ["eval", "--agent", agentPath, "--policy", "expert", "--tasks", "4", "--n", "2"];
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
    for (let waited = 0; !existsSync(marker); waited += 50) {
      assert.ok(waited < 60_000 && child.exitCode === null, `the agent never hung: ${stderr}`);
      await sleep(50);
    }
    child.kill("SIGKILL");
    assert.equal(await exited, "SIGKILL");

    const killed = openRunDirectory(join(root, "k"));
    const storedAtKill = [...killed.episodeKeys(killed.listRuns()[0].id)];
    killed.close();
    assert.equal(storedAtKill.length, 3, "three episodes finished before the kill");
    const hungTask = readFileSync(marker, "utf8");
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
      assert.ok(
        keys.some((key) => key.startsWith(`${hungTask}#`)),
        "the episode cut by the kill was run again",
      );
      assert.equal(run.status, "completed");
    } finally {
      store.close();
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
