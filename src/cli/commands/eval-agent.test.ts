/**
 * `agentrl eval --agent` from the command line, against the scripted expert behind the gateway
 * (fast): the plain `openai` example solves what the expert solves, the run holds the gateway's
 * metrics, and `--resume` recognises an agent run and finds every episode stored.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runCli } from "../testing.ts";
import { register as registerEval } from "./eval.ts";

test("agentrl eval --agent --json, then --resume", async () => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-eval-agent-cli-"));
  try {
    const args = ["eval", "--agent", "examples/agents/openai.ts", "--policy", "expert", "--tasks", "3"];
    const { out } = await runCli(
      [registerEval],
      [...args, "--n", "2", "--runs", root, "--run-id", "a", "--json"],
    );
    const result = JSON.parse(out.join("\n"));
    assert.equal(result.config.policy, "agent:examples/agents/openai.ts@expert");
    assert.equal(result.metrics["eval/pass@1"], 1, "the expert's answers come back through the agent");
    assert.equal(result.metrics["gateway/prefix_breaks"], 0);
    assert.ok(result.metrics["gateway/calls"] >= 6);
    const resumed = await runCli([registerEval], ["eval", "--resume", join(root, "a"), "--json"]);
    const again = JSON.parse(resumed.out.join("\n"));
    assert.deepEqual(again.episodes, { resumed: 6, sampled: 0 });
    await assert.rejects(
      runCli(
        [registerEval],
        ["eval", "--agent", "examples/agents/openai.ts", "--tasks", "1", "--runs", root],
      ),
      /needs --policy/,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
