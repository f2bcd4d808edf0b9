/**
 * `agentrl boundary` on `eval --agent` runs (policy `agent:<module>@<model>`): the runs compare on
 * their shared tasks like any eval runs, and the checkpoint behind an agent run's gateway scores
 * perplexity from the exact ids the gateway stored (the run records that model's tokenizer), for
 * its own trajectories and for another run's.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import openaiAgent from "../../examples/agents/openai.ts";
import { scorerForEvalRun } from "../eval/embedded-scorer.ts";
import { runBoundary } from "../eval/run-boundary.ts";
import { evaluateAgent } from "./evaluate-agent.ts";
import type { AgentFunction } from "./types.ts";

test("boundary compares agent runs and scores perplexity under the checkpoint behind the gateway", async () => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-agent-boundary-"));
  try {
    const common = {
      agentPath: "examples/agents/openai.ts",
      agent: openaiAgent as unknown as AgentFunction,
      tasks: { type: "world" as const, split: "test" as const, count: 4, seed: 3, family: "lookup" as const },
      n: 2,
      temperature: 1,
      runsRoot: root,
    };
    await evaluateAgent({ ...common, policy: "models/base-strong", runId: "base" });
    await evaluateAgent({ ...common, policy: "expert", runId: "expert" });
    const result = await runBoundary({
      directories: [join(root, "base"), join(root, "expert")],
      out: join(root, "boundary"),
      scorerFor: (run) => scorerForEvalRun(run.config),
    });
    assert.deepEqual(
      result.runs.map((run) => run.label),
      ["agent:examples/agents/openai.ts@models/base-strong", "agent:examples/agents/openai.ts@expert"],
    );
    assert.equal(result.analysis.tasks.length, 4);
    const expertCurve = result.analysis.runs[1].curves.overall;
    assert.equal(expertCurve[0].passAtK, 1, "the scripted expert solves every lookup");
    // Only the checkpoint scores; the scripted expert has no model.
    assert.deepEqual(
      result.perplexity.map((entry) => entry.scoredBy),
      [result.runs[0].label, result.runs[0].label],
    );
    assert.ok(result.perplexityNotes.some((note) => note.includes('policy "expert"')));
    const own = result.perplexity[0].result;
    assert.ok(own.scored > 0, "the base's correct episodes are scored");
    assert.equal(own.tokenSource.reEncoded, 0, "from the gateway's exact ids");
    assert.ok(own.pooled !== null && own.pooled >= 1);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
