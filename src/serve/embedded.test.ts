/**
 * The embedded transformer served through `agentrl serve` samples exactly what it samples in
 * process (a small randomly initialised model: the sampler, not the weights, is under test). The
 * OpenAI policy sends the episode seed and the history; the server rebuilds the context token by
 * token, and the embedded policy draws turn k of an episode from (seed, k) alone. So the sampled
 * ids and their log-probs must be identical, on a first turn and after a tool call.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { keyFromSeed } from "../engine/init.ts";
import { renderObservation, renderPrompt, renderToolCall } from "../env/protocol.ts";
import { rolloutTasks, worldToolsFor } from "../env/task-set.ts";
import { EmbeddedPolicy, initGpt } from "../policy/embedded/index.ts";
import { createWordTokenizer } from "../policy/embedded/tokenizer.ts";
import { createOpenAiPolicy } from "../policy/openai/index.ts";
import { callTool, TOOL_MESSAGE_WORDS, toolSpec } from "../tools/index.ts";
import type { PolicyContext } from "../types/policy.ts";
import type { Turn } from "../types/trajectory.ts";
import { worldVocabulary } from "../world/index.ts";
import { startChatServer } from "./server.ts";

test("served embedded model: the same token ids and log-probs as in process", async () => {
  const tokenizer = createWordTokenizer([...worldVocabulary(), ...TOOL_MESSAGE_WORDS]);
  const config = { vocabSize: tokenizer.vocabSize, dModel: 32, nLayers: 2, nHeads: 2, dFF: 64, maxLen: 256 };
  const params = initGpt(config, keyFromSeed(3));
  const make = (sampling: { temperature: number; topP: number }) =>
    new EmbeddedPolicy({ config, tokenizer, params }, { ...sampling, capacity: 16 });

  const tasks = rolloutTasks({ split: "test", count: 8, seed: 2 });
  const contexts: PolicyContext[] = [];
  /** The same contexts as the chat episode loop builds them (observations are the raw tool content). */
  const chatContexts: PolicyContext[] = [];
  for (const [i, task] of tasks.entries()) {
    const tools = worldToolsFor()(task, i);
    const prompt = renderPrompt(task.question);
    const base = {
      task,
      prompt: { text: prompt, tokenIds: tokenizer.encode(prompt) },
      tools: tools.map(toolSpec),
      seed: 100 + i,
      maxTokens: 12,
    };
    contexts.push({ ...base, episodeId: `first-${i}`, turns: [] });
    chatContexts.push({ ...base, episodeId: `first-${i}`, turns: [] });
    // After one gold search: the history the server must rebuild from tool_calls + a tool message.
    const step = task.gold!.find((gold) => gold.type === "search")!;
    if (step.type !== "search") continue;
    const search = tools.find((tool) => tool.name === "search")!;
    const result = await callTool(search, { query: step.query });
    const text = renderToolCall("search", step.query);
    const observation = renderObservation(result.content);
    const turn: Turn = {
      index: 0,
      text,
      tokenIds: tokenizer.encode(text),
      logprobs: null,
      action: { type: "tool-call", tool: "search", arguments: { query: step.query } },
      toolResult: result,
      observation: { text: observation, tokenIds: tokenizer.encode(observation) },
      rewards: {},
    };
    contexts.push({ ...base, episodeId: `second-${i}`, turns: [turn] });
    const chatTurn: Turn = {
      ...turn,
      text: "",
      tokenIds: [],
      observation: { text: result.content, tokenIds: [] },
    };
    chatContexts.push({
      ...base,
      prompt: { text: prompt, tokenIds: [] },
      episodeId: `second-${i}`,
      turns: [chatTurn],
    });
  }

  const local = await make({ temperature: 1, topP: 0.95 }).act(contexts);
  // The server holds one model, loaded with its defaults (top_p 1): the request's top_p 0.95 is
  // applied per context, and must sample exactly what a model built with 0.95 samples.
  let loads = 0;
  const server = await startChatServer({
    loadPolicy: (sampling) => {
      loads++;
      return make(sampling);
    },
    model: "tiny",
    port: 0,
    log: () => {},
  });
  try {
    const remote = createOpenAiPolicy({ baseURL: server.url, model: "tiny", topP: 0.95, logprobs: true });
    const served = await remote.act(chatContexts);
    assert.equal(served.length, local.length);
    served.forEach((step, i) => {
      assert.deepEqual(step.tokenIds, local[i].tokenIds, `context ${contexts[i].episodeId}: token ids`);
      assert.equal(step.logprobs?.length, local[i].logprobs?.length);
      step.logprobs!.forEach((logprob, t) => {
        assert.ok(Math.abs(logprob - local[i].logprobs![t]) < 1e-9, `${contexts[i].episodeId} token ${t}`);
      });
    });
    assert.ok(
      local.some((step) => step.tokenIds.length > 3),
      "non-trivial turns were sampled",
    );
    const greedy = createOpenAiPolicy({ baseURL: server.url, model: "tiny", temperature: 0, logprobs: true });
    const [first, second] = await greedy.act(chatContexts.slice(0, 2));
    const [localFirst, localSecond] = await make({ temperature: 0, topP: 1 }).act(contexts.slice(0, 2));
    assert.deepEqual([first.tokenIds, second.tokenIds], [localFirst.tokenIds, localSecond.tokenIds]);
    assert.equal(loads, 1, "two sampling settings, one checkpoint load");
  } finally {
    await server.close();
  }
});
