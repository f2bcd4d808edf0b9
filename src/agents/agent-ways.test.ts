/**
 * The four ways agents are written (examples/agents/), end to end against the embedded base
 * (models/base-strong) behind the gateway at concurrency 8: an Agents SDK agent on the global
 * default client with streaming, a module-level `new OpenAI()` from the environment (both in worker
 * slots), an Anthropic SDK agent through the gateway's `/v1/messages` (a worker slot too), and a
 * standard-library Python agent (`--agent-cmd`). Every episode is stored with the token ids and
 * log-probs the model sampled (those of the gateway's recorded call), none is an agent or infra
 * failure, and the pass@1 of each agrees with that of the per-call `openai.ts` agent (run in
 * process) within sampling error on the same tasks.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import openaiAgent from "../../examples/agents/openai.ts";
import type { GatewayCall } from "../gateway/types.ts";
import { openRunDirectory } from "../store/index.ts";
import type { AgentSourceOptions } from "./agent-source.ts";
import { evaluateAgent } from "./evaluate-agent.ts";
import type { AgentFunction } from "./types.ts";

const TASKS = 8;
const N = 1;

/** pass@1 of the agent on the shared tasks; asserts every episode is recorded whole. */
async function passAt1(name: string, agent: AgentSourceOptions): Promise<number> {
  const root = mkdtempSync(join(tmpdir(), "agentrl-agent-ways-"));
  try {
    const result = await evaluateAgent({
      ...agent,
      policy: "models/base-strong",
      tasks: { type: "world", split: "test", count: TASKS, seed: 3 },
      n: N,
      temperature: 1,
      topP: 1,
      concurrency: 8,
      runsRoot: root,
      runId: "ways",
    });
    assert.equal(result.metrics["gateway/failed_calls"], 0, `${name}: no failed call`);
    assert.equal(result.metrics["gateway/prefix_breaks"], 0, `${name}: no prefix break`);
    const store = openRunDirectory(join(root, "ways"));
    try {
      const run = store.listRuns()[0];
      const trajectories = store.trajectories(run.id);
      assert.equal(trajectories.length, TASKS * N, `${name}: every episode stored`);
      const keys = store.stateKeys(run.id);
      for (const trajectory of trajectories) {
        assert.equal(
          trajectory.failure,
          undefined,
          `${name}: ${trajectory.id} failed: ${trajectory.info?.error}`,
        );
        assert.ok(trajectory.turns.length > 0, `${name}: ${trajectory.id} has turns`);
        const episodeId = (trajectory.info?.gateway as { episodeId?: string } | undefined)?.episodeId;
        assert.ok(episodeId, `${name}: a gateway trajectory records its episode`);
        const calls = keys
          .filter((key) => key.startsWith(`gateway/calls/${episodeId}/`))
          .map((key) => store.getState<GatewayCall>(run.id, key)!);
        assert.equal(calls.length, trajectory.turns.length, `${name}: one recorded call per turn`);
        for (const [k, turn] of trajectory.turns.entries()) {
          assert.ok(turn.tokenIds.length > 0, `${name}: turn ${k} has its sampled ids`);
          assert.deepEqual(
            turn.tokenIds,
            calls[k].choices[0].tokenIds,
            `${name}: turn ${k}: the ids sampled`,
          );
          assert.deepEqual(
            turn.logprobs,
            calls[k].choices[0].logprobs,
            `${name}: turn ${k}: the log-probs sampled`,
          );
        }
      }
      return result.totals.correct / (TASKS * N);
    } finally {
      store.close();
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/**
 * Two pass@1 estimates of the same agent logic agree when their difference is within 3 standard
 * errors of a difference of two proportions over `count` episodes each (pooled p; at p = 0 or 1 the
 * error is 0 and they must be equal).
 */
function assertAgree(name: string, observed: number, reference: number, count: number) {
  const pooled = (observed + reference) / 2;
  const error = Math.sqrt((2 * pooled * (1 - pooled)) / count);
  assert.ok(
    Math.abs(observed - reference) <= 3 * error + 1e-9,
    `${name}: pass@1 ${observed} against ${reference} for the per-call agent (3 s.e. = ${(3 * error).toFixed(3)})`,
  );
}

test("the four ways of writing an agent, at concurrency 8, are recorded exactly and agree on pass@1", async (t) => {
  const reference = await passAt1("openai.ts (per-call baseURL, in process)", {
    agentPath: "examples/agents/openai.ts",
    agent: openaiAgent as unknown as AgentFunction,
  });
  const ways: [string, AgentSourceOptions][] = [
    [
      "openai-env.ts (module-level client from the environment)",
      { agentPath: "examples/agents/openai-env.ts" },
    ],
    [
      "openai-agents-global.ts (global default client, streaming)",
      { agentPath: "examples/agents/openai-agents-global.ts" },
    ],
    ["python_agent.py (--agent-cmd)", { agentCommand: "python3 examples/agents/python_agent.py" }],
    [
      "anthropic.ts (Anthropic SDK, module-level client, the gateway's /v1/messages)",
      { agentPath: "examples/agents/anthropic.ts" },
    ],
  ];
  for (const [name, agent] of ways) {
    const started = performance.now();
    const observed = await passAt1(name, agent);
    t.diagnostic(
      `${name}: pass@1 ${observed} (per-call ${reference}) in ${Math.round(performance.now() - started)} ms`,
    );
    assertAgree(name, observed, reference, TASKS * N);
  }
});
