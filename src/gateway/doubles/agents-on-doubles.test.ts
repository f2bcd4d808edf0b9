/**
 * Agents measured through the gateway in front of a real server's double (testing-double.ts):
 * the plain `openai` example agent, unstreamed, and the same loop streaming (the SDK's
 * `chat.completions.stream`), with tools, on lookup tasks where the model searches before it
 * answers. In front of SGLang and the llama.cpp server every stored turn holds its prompt and
 * completion ids (those the model was fed and sampled), with no failed call, no failure and no
 * prefix break; before the gateway knew these servers, SGLang's turns were stored text-only and its
 * streamed calls were 400s, and llama.cpp's streamed calls with tools were 400s. In front of
 * Ollama (no ids) the turns are text-only: labelled with the server, counted, refused by training.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import openaiAgent from "../../../examples/agents/openai.ts";
import { evaluateAgent } from "../../agents/evaluate-agent.ts";
import { worldTools } from "../../agents/public.ts";
import type { AgentFunction } from "../../agents/types.ts";
import { openRunDirectory } from "../../store/index.ts";
import { resolveUpstream } from "../resolve-upstream.ts";
import { refuseTextOnly } from "../text-only.ts";
import type { Upstream } from "../upstream.ts";
import { startServerDouble } from "./testing-double.ts";
import type { DoubleKind } from "./testing-kinds.ts";

const TASKS = 4;

/** The example agent's loop, streaming each call. */
const streamingAgent: AgentFunction = async (task, { baseURL, apiKey, model, signal }) => {
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
  const tools = worldTools(task as never);
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: task.question }];
  for (let step = 0; step < 8; step++) {
    const completion = await client.chat.completions
      .stream({ model, messages, tools: tools.openai, stream_options: { include_usage: true } }, { signal })
      .finalChatCompletion();
    const message = completion.choices[0]?.message;
    if (!message) return null;
    const calls = message.tool_calls ?? [];
    if (calls.length === 0) return message.content;
    messages.push({ role: "assistant", content: message.content, tool_calls: calls });
    for (const call of calls) {
      if (call.type !== "function") continue;
      let args: unknown;
      try {
        args = JSON.parse(call.function.arguments);
      } catch {
        args = {};
      }
      messages.push({
        role: "tool",
        tool_call_id: call.id,
        content: await tools.call(call.function.name, args),
      });
    }
  }
  return null;
};

let inner: Upstream;
before(async () => {
  inner = await resolveUpstream("models/base-strong");
});
after(() => inner.close?.());

async function measure(kind: DoubleKind, name: string, agent: AgentFunction) {
  const double = await startServerDouble(kind, inner);
  const root = mkdtempSync(join(tmpdir(), "agentrl-doubles-"));
  try {
    const result = await evaluateAgent({
      agentPath: name,
      agent,
      policy: `openai:${double.url}#${double.model}`,
      tasks: { type: "world", split: "test", count: TASKS, seed: 3, family: "lookup" },
      n: 1,
      temperature: 1,
      topP: 1,
      concurrency: 2,
      runsRoot: root,
      runId: "doubles",
    });
    assert.equal(result.metrics["gateway/failed_calls"], 0, `${kind} ${name}: no failed call`);
    assert.equal(result.metrics["gateway/prefix_breaks"], 0, `${kind} ${name}: no prefix break`);
    const store = openRunDirectory(join(root, "doubles"));
    try {
      const trajectories = store.trajectories(store.listRuns()[0].id);
      assert.equal(trajectories.length, TASKS);
      let turns = 0;
      for (const trajectory of trajectories) {
        assert.equal(
          trajectory.failure,
          undefined,
          `${kind} ${name}: ${trajectory.id}: ${trajectory.info?.error}`,
        );
        assert.ok(
          trajectory.prompt.tokenIds.length > 0,
          `${kind} ${name}: ${trajectory.id} has its prompt ids`,
        );
        for (const turn of trajectory.turns) {
          if (turn.text === "" && turn.tokenIds.length === 0 && turn.action.type === "tool-call") continue;
          assert.ok(
            turn.tokenIds.length > 0,
            `${kind} ${name}: ${trajectory.id} turn ${turn.index} has its ids`,
          );
          turns++;
        }
      }
      // The model searches before it answers on these tasks: several calls per episode.
      assert.ok(turns > TASKS, `${kind} ${name}: ${turns} turns over ${TASKS} episodes`);
      // Every stored completion is one the model sampled.
      const sampled = new Set(double.calls.map((call) => call.completionIds.join(",")));
      for (const trajectory of trajectories)
        for (const turn of trajectory.turns)
          if (turn.tokenIds.length > 0)
            assert.ok(sampled.has(turn.tokenIds.join(",")), `${kind}: ids sampled`);
    } finally {
      store.close();
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
    await double.close();
  }
}

for (const kind of ["sglang", "llamacpp"] as const) {
  test(`${kind}: an agent through the gateway stores every turn with its ids, unstreamed and streamed`, async () => {
    await measure(kind, "openai.ts", openaiAgent as unknown as AgentFunction);
    await measure(kind, "streaming", streamingAgent);
  });
}

test("ollama: an agent's turns are stored text-only, labelled with the server, counted, and refused for training by name", async () => {
  const double = await startServerDouble("ollama", inner);
  const root = mkdtempSync(join(tmpdir(), "agentrl-doubles-"));
  try {
    const result = await evaluateAgent({
      agentPath: "openai.ts",
      agent: openaiAgent as unknown as AgentFunction,
      policy: `openai:${double.url}#${double.model}`,
      tasks: { type: "world", split: "test", count: 2, seed: 3, family: "lookup" },
      n: 1,
      concurrency: 2,
      runsRoot: root,
      runId: "ollama",
    });
    assert.equal(result.metrics["gateway/failed_calls"], 0);
    assert.equal(result.metrics["gateway/text_only_calls"], result.metrics["gateway/calls"]);
    assert.ok((result.metrics["gateway/calls"] ?? 0) >= 2);
    const store = openRunDirectory(join(root, "ollama"));
    try {
      const trajectories = store.trajectories(store.listRuns()[0].id);
      for (const trajectory of trajectories) {
        const info = trajectory.info?.gateway as { textOnlyCalls: number; server?: { kind: string } };
        assert.equal(trajectory.failure, undefined);
        assert.equal(info.server?.kind, "ollama");
        assert.ok(info.textOnlyCalls > 0);
        assert.ok(trajectory.turns.every((turn) => turn.tokenIds.length === 0));
      }
      assert.throws(() => refuseTextOnly(trajectories, "training"), /answered by Ollama without token ids/);
    } finally {
      store.close();
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
    await double.close();
  }
});
