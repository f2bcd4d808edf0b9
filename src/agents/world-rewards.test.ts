/**
 * Reward presets on gateway trajectories of world tasks: the plain `openai` example agent, run by
 * `runAgentEpisode` against the scripted expert behind the gateway, gets turn-level credit from
 * `turn-credit` (and its noise-aware form) exactly as an in-process episode of the same task does:
 * its search results are checked against the world's own tool, so they carry the documents found.
 * An agent whose tool output differs from the world's earns no evidence credit (nothing to check).
 * A model turn that calls search and calc at once keeps both calls, each checked and credited.
 */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import OpenAI from "openai";
import openaiAgent from "../../examples/agents/openai.ts";
import { DEFAULT_BUDGETS, runEpisodes } from "../env/run-episodes.ts";
import { worldToolsFor } from "../env/task-set.ts";
import { resolveEvalTasks } from "../eval/eval-tasks.ts";
import { resolveUpstream } from "../gateway/resolve-upstream.ts";
import { startGateway } from "../gateway/server.ts";
import { resolvePolicy } from "../policy/resolve.ts";
import { TURN_REWARD_TOTAL, withRewards } from "../reward/index.ts";
import type { Task } from "../types/task.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { checkAnswer } from "../world/index.ts";
import { runAgentEpisode } from "./run-episode.ts";
import type { AgentFunction } from "./types.ts";
import { agentWorldTools } from "./world-tools.ts";

const turnTotal = (trajectory: Trajectory) =>
  trajectory.turns.reduce((sum, turn) => sum + (turn.rewards[TURN_REWARD_TOTAL] ?? 0), 0);

async function throughGateway(agent: AgentFunction, tasks: readonly Task[]): Promise<Trajectory[]> {
  const upstream = await resolveUpstream("expert");
  const gateway = await startGateway({ upstream, token: "t", policyId: "agent", log: () => {} });
  try {
    const out: Trajectory[] = [];
    for (const [i, task] of tasks.entries()) {
      const { trajectory } = await runAgentEpisode({
        gateway,
        agent,
        task,
        key: `k${i}`,
        seed: i,
        verify: checkAnswer,
        apiKey: "t",
        timeoutMs: 30_000,
      });
      out.push(trajectory);
    }
    return out;
  } finally {
    await gateway.close();
  }
}

const tasks = resolveEvalTasks({ type: "world", split: "test", count: 3, seed: 5, family: "bridge" });

test("turn-credit gives a gateway episode the turn rewards of the same in-process episode", async () => {
  const agentRuns = await throughGateway(openaiAgent as unknown as AgentFunction, tasks);
  const policy = await resolvePolicy("expert");
  const inProcess = await runEpisodes({
    policy,
    episodes: tasks.map((task, i) => ({ task, seed: i, id: `k${i}` })),
    tools: worldToolsFor({}),
    verify: checkAnswer,
    budgets: DEFAULT_BUDGETS,
  });
  for (const [i, task] of tasks.entries()) {
    const check = agentRuns[i].info?.worldTools as { checked: number; matched: number };
    assert.ok(check.checked > 0 && check.matched === check.checked, JSON.stringify(check));
    assert.ok(agentRuns[i].correct, "the expert answers");
    for (const preset of ["turn-credit", "turn-credit-noise-aware", "mt-grpo"]) {
      const viaAgent = withRewards(agentRuns[i], task, preset);
      const viaLoop = withRewards(inProcess[i], task, preset);
      assert.equal(viaAgent.outcomeReward, viaLoop.outcomeReward, `${preset} outcome`);
      assert.ok(turnTotal(viaAgent) > 0, `${preset}: turn credit earned`);
      assert.ok(Math.abs(turnTotal(viaAgent) - turnTotal(viaLoop)) < 1e-9, `${preset} turn total`);
    }
  }
});

test("tool output the world's tool would not give earns no evidence credit", async () => {
  // The plain `openai` agent, but the search text is changed before the model sees it.
  const edited: AgentFunction = async (task, { baseURL, apiKey, model, signal }) => {
    const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
    const tools = agentWorldTools(task);
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: task.question }];
    for (let step = 0; step < 8; step++) {
      const completion = await client.chat.completions.create(
        { model, messages, tools: tools.openai },
        { signal },
      );
      const message = completion.choices[0].message;
      const calls = message.tool_calls ?? [];
      if (calls.length === 0) return message.content;
      messages.push({ role: "assistant", content: message.content, tool_calls: calls });
      for (const call of calls) {
        if (call.type !== "function") continue;
        const text = await tools.call(call.function.name, JSON.parse(call.function.arguments));
        messages.push({ role: "tool", tool_call_id: call.id, content: `${text} (cached)` });
      }
    }
    return null;
  };
  const [trajectory] = await throughGateway(edited, tasks.slice(0, 1));
  const check = trajectory.info?.worldTools as { checked: number; matched: number };
  assert.ok(check.checked > 0 && check.matched === 0, JSON.stringify(check));
  const scored = withRewards(trajectory, tasks[0], "turn-credit");
  assert.equal(turnTotal(scored), 0);
});

test("a model turn with two tool calls: both are kept, checked and credited", async () => {
  const [task] = resolveEvalTasks({ type: "world", split: "test", count: 1, seed: 2, family: "arithmetic" });
  const search = task.gold!.find((step) => step.type === "search")!;
  const calc = task.gold!.find((step) => step.type === "calc")!;
  // A fake upstream whose first answer calls search and calc at once, then answers.
  let served = 0;
  const server = createServer((req, res) => {
    // The gateway's probes for the server's kind (GET) find nothing: a plain OpenAI-compatible server.
    if (req.method === "GET") {
      res.writeHead(404);
      return res.end();
    }
    req.resume();
    req.on("end", () => {
      const message =
        served++ === 0
          ? {
              role: "assistant",
              content: null,
              tool_calls: [
                {
                  id: "a",
                  type: "function",
                  function: { name: "search", arguments: JSON.stringify({ query: search.query }) },
                },
                {
                  id: "b",
                  type: "function",
                  function: { name: "calc", arguments: JSON.stringify({ expression: calc.expression }) },
                },
              ],
            }
          : { role: "assistant", content: task.answer };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: "c",
          object: "chat.completion",
          choices: [{ index: 0, message, finish_reason: "stop" }],
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const upstream = await resolveUpstream(
    `openai:http://127.0.0.1:${(server.address() as AddressInfo).port}/v1#fake`,
  );
  const gateway = await startGateway({ upstream, policyId: "fake", log: () => {} });
  try {
    const { trajectory } = await runAgentEpisode({
      gateway,
      agent: openaiAgent as unknown as AgentFunction,
      task,
      key: "two",
      seed: 1,
      verify: checkAnswer,
      apiKey: "none",
      timeoutMs: 30_000,
    });
    assert.ok(trajectory.correct);
    assert.deepEqual(
      trajectory.turns.map((turn) =>
        turn.action.type === "tool-call" ? turn.action.tool : turn.action.type,
      ),
      ["search", "calc", "answer"],
    );
    assert.deepEqual(trajectory.info?.worldTools, { checked: 2, matched: 2 });
    assert.ok(trajectory.turns[0].toolResult?.refs?.includes(search.entity));
    assert.equal(trajectory.turns[1].toolResult?.value, Number(calc.result));
    const scored = withRewards(trajectory, task, "turn-credit");
    assert.ok((scored.turns[0].rewards.evidence ?? 0) > 0, "evidence credit for the search");
    assert.ok((scored.turns[1].rewards["calc-correct"] ?? 0) > 0, "calc credit for the calc");
  } finally {
    await gateway.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
