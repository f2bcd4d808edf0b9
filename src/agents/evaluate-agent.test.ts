/**
 * `evaluateAgent` end to end. Against the embedded base checkpoint behind the gateway, the plain
 * `openai` example agent's stored trajectories hold exactly the ids and log-probs the model sampled:
 * each turn is replayed in process from the stored context ids and the call's recorded seed (the
 * embedded policy draws turn k from (seed, k) alone) and must come out identical; no prefix breaks
 * (our server re-renders the history to the ids it sampled). Against a scripted upstream (fast): a
 * throwing or hanging agent is a failed episode in the denominator, and a stopped run resumes
 * without losing or duplicating an episode.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { stepCountIs, streamText, tool } from "ai";
import { z } from "zod";
import aiSdkAgent from "../../examples/agents/ai-sdk.ts";
import openaiAgent from "../../examples/agents/openai.ts";
import openaiAgentsAgent from "../../examples/agents/openai-agents.ts";
import type { GatewayCall } from "../gateway/types.ts";
import { resolvePolicy } from "../policy/resolve.ts";
import { episodeKey, openRunDirectory } from "../store/index.ts";
import type { PolicyContext } from "../types/policy.ts";
import { evaluateAgent } from "./evaluate-agent.ts";
import type { AgentFunction } from "./types.ts";
import { agentWorldTools } from "./world-tools.ts";

const agent = openaiAgent as unknown as AgentFunction;

/**
 * Runs `agent` on lookup tasks against models/base-strong and replays every stored turn in process.
 * Sampling is seeded end to end, so the task seeds below are ones where the model searches before it
 * answers (at least one multi-turn episode, so the merge of calls is exercised), not luck.
 */
async function checkAgainstBase(agentToCheck: AgentFunction, name: string, count: number, taskSeed = 3) {
  const root = mkdtempSync(join(tmpdir(), "agentrl-agent-eval-"));
  try {
    const result = await evaluateAgent({
      agentPath: name,
      agent: agentToCheck,
      policy: "models/base-strong",
      tasks: { type: "world", split: "test", count, seed: taskSeed, family: "lookup" },
      n: 1,
      temperature: 1,
      topP: 1,
      concurrency: 2,
      runsRoot: root,
      runId: "e2e",
    });
    assert.equal(result.metrics["gateway/prefix_breaks"], 0);
    assert.equal(result.totals.policyErrors, 0);
    const store = openRunDirectory(join(root, "e2e"));
    const policy = await resolvePolicy("models/base-strong", { temperature: 1, topP: 1 });
    try {
      const run = store.listRuns()[0];
      const trajectories = store.trajectories(run.id);
      assert.equal(trajectories.length, count);
      let turnsChecked = 0;
      const calls: GatewayCall[] = [];
      for (const trajectory of trajectories) {
        const info = trajectory.info?.gateway as { episodeId: string } | undefined;
        assert.ok(info, "a gateway trajectory records its episode");
        const episodeId = info.episodeId;
        const episodeCalls = store
          .stateKeys(run.id)
          .filter((key) => key.startsWith(`gateway/calls/${episodeId}/`))
          .map((key) => store.getState<GatewayCall>(run.id, key)!);
        calls.push(...episodeCalls);
        assert.equal(episodeCalls.length, trajectory.turns.length, "one call per turn");
        assert.ok(trajectory.prompt.tokenIds.length > 0);
        for (const [k, turn] of trajectory.turns.entries()) {
          assert.ok(turn.tokenIds.length > 0 && turn.logprobs?.length === turn.tokenIds.length);
          assert.deepEqual(
            turn.tokenIds,
            episodeCalls[k].choices[0].tokenIds,
            "the ids the upstream returned",
          );
          const context: PolicyContext = {
            episodeId: `replay-${k}`,
            task: { id: trajectory.taskId, question: "", answer: "", family: trajectory.family },
            prompt: trajectory.prompt,
            turns: trajectory.turns.slice(0, k),
            tools: toolSpecs,
            seed: episodeCalls[k].request.seed as number,
            maxTokens: 32,
          };
          const [step] = await policy.act([context]);
          assert.deepEqual(step.tokenIds, turn.tokenIds, `turn ${k}: ids`);
          assert.equal(step.logprobs?.length, turn.tokenIds.length);
          for (const [t, logprob] of (step.logprobs ?? []).entries())
            assert.ok(Math.abs(logprob - (turn.logprobs?.[t] ?? Number.NaN)) < 1e-6, `turn ${k} token ${t}`);
          turnsChecked++;
        }
      }
      assert.ok(turnsChecked >= count + 1, `${name}: ${turnsChecked} turns replayed`);
      return { result, calls };
    } finally {
      store.close();
      await policy.close?.();
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

test("plain openai agent on the embedded base: stored ids and log-probs are what the model sampled", async () => {
  await checkAgainstBase(agent, "examples/agents/openai.ts", 2);
});

test("AI SDK agent (generateText, zod tools), and a streaming one, are recorded exactly", async () => {
  const { result } = await checkAgainstBase(
    aiSdkAgent as unknown as AgentFunction,
    "examples/agents/ai-sdk.ts",
    1,
    4,
  );
  assert.equal(result.totals.samples, 1);
  const streaming: AgentFunction = async (task, { baseURL, apiKey, model, signal }) => {
    const world = agentWorldTools(task);
    const provider = createOpenAICompatible({ name: "agentrl", baseURL, apiKey });
    const run = streamText({
      model: provider(model),
      prompt: task.question,
      tools: {
        search: tool({
          inputSchema: z.object({ query: z.string() }),
          execute: ({ query }) => world.call("search", { query }),
        }),
      },
      stopWhen: stepCountIs(4),
      maxRetries: 0,
      abortSignal: signal,
    });
    return await run.text;
  };
  const { calls } = await checkAgainstBase(streaming, "streaming", 1, 4);
  assert.ok(calls.length > 0 && calls.every((call) => call.stream), "every call was streamed and recorded");
});

test("OpenAI Agents SDK agent on its default Responses API is recorded exactly", async () => {
  const { calls } = await checkAgainstBase(
    openaiAgentsAgent as unknown as AgentFunction,
    "examples/agents/openai-agents.ts",
    1,
    4,
  );
  assert.ok(
    calls.length > 1 && calls.every((call) => call.api === "responses"),
    "it spoke the Responses API",
  );
});

const toolSpecs = [
  { name: "search", description: "", parameters: {}, textArgument: "query" },
  { name: "calc", description: "", parameters: {}, textArgument: "expression" },
];

test("failed agents count as failures; a stopped run resumes without losing or duplicating episodes", async () => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-agent-resume-"));
  try {
    const tasks = { type: "world" as const, split: "test" as const, count: 3, seed: 5 };
    let started = 0;
    const stop = new AbortController();
    const flaky: AgentFunction = async (task, context) => {
      started++;
      if (started === 4) stop.abort(); // stop mid-run, with this episode in flight
      if (task.id.endsWith("0") || /\/1$/.test(task.id)) throw new Error("agent bug");
      return agent(task, context);
    };
    await assert.rejects(
      evaluateAgent({
        agentPath: "flaky",
        agent: flaky,
        policy: "expert",
        tasks,
        n: 2,
        concurrency: 1,
        timeoutMs: 1500,
        runsRoot: root,
        runId: "r",
        signal: stop.signal,
      }),
      /stopped/,
    );
    const before = openRunDirectory(join(root, "r"));
    const storedBefore = before.episodeKeys(before.listRuns()[0].id).size;
    before.close();
    assert.equal(storedBefore, 3, "the three finished episodes were stored, the cut one was not");

    const hanging: AgentFunction = (task, context) =>
      task.id === firstTask ? new Promise(() => {}) : agent(task, context);
    let firstTask = "";
    const result = await evaluateAgent({
      agentPath: "flaky",
      agent: async (task, context) => {
        firstTask ||= task.id;
        return hanging(task, context);
      },
      policy: "expert",
      tasks,
      n: 2,
      concurrency: 2,
      timeoutMs: 1500,
      runsRoot: root,
      runId: "r",
    });
    assert.deepEqual(result.episodes, { resumed: 3, sampled: 3 });
    const store = openRunDirectory(join(root, "r"));
    try {
      const run = store.listRuns()[0];
      const keys = [...store.episodeKeys(run.id)].sort();
      const expected = result.counts
        .flatMap((count) => [episodeKey(count.taskId, 0), episodeKey(count.taskId, 1)])
        .sort();
      assert.deepEqual(keys, expected, "every episode exactly once");
      const failed = store.trajectories(run.id).filter((t) => t.endReason === "policy-error");
      assert.ok(
        failed.some((t) => /timeout/.test(String(t.info?.error))),
        "the hanging agent timed out",
      );
      assert.equal(result.totals.samples, 6, "failures stay in the denominator");
      assert.equal(result.totals.policyErrors, failed.length);
    } finally {
      store.close();
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
