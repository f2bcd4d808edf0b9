/**
 * `agentrl serve --policy hf:<folder>` end to end on a complete checkpoint folder (fixtures/qwen3-chat,
 * scripts/hf-chat-fixture.py): a trained tiny Qwen3 with its own byte-level BPE tokenizer and the real
 * Qwen3 chat template. Driven by the `openai` client as a user would, over two turns (a Hermes tool
 * call, then the answer after the tool's result), each checked against what transformers computed on
 * the same folder: the templated prompt ids, the greedy ids at temperature 0 and their text. The
 * same conversation through the episode loop (`eval`'s path) with a `search` tool gives the same ids.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import OpenAI from "openai";
import type { ChatCompletion, ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources";
import { runEpisodes } from "../../env/run-episodes.ts";
import { startChatServer } from "../../serve/server.ts";
import type { Policy } from "../../types/policy.ts";
import { EPISODE_ID_HEADER } from "../openai/spec.ts";
import { resolvePolicy } from "../resolve.ts";
import { loadHfPolicy, loadHfTextSide } from "./load.ts";
import type { HfPolicy } from "./policy.ts";
import { chatFixtureTask } from "./testing-chat-task.ts";
import { FIXTURES } from "./testing-fixtures.ts";

const FOLDER = join(FIXTURES, "qwen3-chat");

interface ChatReference {
  tools: ChatCompletionTool[];
  turns: {
    messages: ChatCompletionMessageParam[];
    text: string;
    prompt_ids: number[];
    greedy_ids: number[];
    greedy_text: string;
  }[];
}

const reference: ChatReference = JSON.parse(readFileSync(join(FOLDER, "reference.json"), "utf8"));
const END = "<|im_end|>";

/** vLLM's token-id fields, which `agentrl serve` returns when asked (`return_token_ids`). */
type WithIds = ChatCompletion & {
  prompt_token_ids: number[];
  choices: (ChatCompletion.Choice & { token_ids: number[] })[];
};

test("the folder's tokenizer and template give transformers' text and ids for both turns", async () => {
  const text = await loadHfTextSide(FOLDER, "qwen3");
  assert.equal(text.toolFormat, "hermes");
  for (const turn of reference.turns) {
    const rendered = text.template.render(turn.messages, {
      tools: reference.tools,
      addGenerationPrompt: true,
    });
    assert.equal(rendered, turn.text);
    assert.deepEqual(text.tokenizer.encode(rendered), turn.prompt_ids);
    assert.equal(text.tokenizer.decode(turn.greedy_ids), turn.greedy_text);
  }
});

test("serve --policy hf:<folder>: the openai client's two-turn tool call equals transformers", async () => {
  let policy: Policy | undefined;
  const server = await startChatServer({
    // What `agentrl serve --policy hf:<folder>` does (src/cli/commands/serve.ts).
    loadPolicy: async (sampling) => {
      policy = await resolvePolicy(`hf:${FOLDER}`, sampling);
      return policy;
    },
    model: "qwen3-chat",
    port: 0,
    log: () => {},
  });
  try {
    const client = new OpenAI({ baseURL: server.url, apiKey: "none", maxRetries: 0 });
    /** `episode`: the conversation's name, so the server keeps its KV slot between the two calls. */
    const ask = async (messages: ChatCompletionMessageParam[], episode?: string) =>
      (await client.chat.completions.create(
        {
          model: "qwen3-chat",
          messages,
          tools: reference.tools,
          temperature: 0,
          max_tokens: 64,
          // vLLM's extension: the prompt and completion ids, to compare with transformers'
          return_token_ids: true,
        } as OpenAI.ChatCompletionCreateParamsNonStreaming,
        episode === undefined ? {} : { headers: { [EPISODE_ID_HEADER]: episode } },
      )) as WithIds;

    // Turn 1: the question; the model calls `search`.
    const [first, second] = reference.turns;
    const messages = first.messages;
    const call = await ask(messages, "e2e");
    assert.deepEqual(call.prompt_token_ids, first.prompt_ids, "turn 1: the templated prompt ids");
    const [callChoice] = call.choices;
    assert.deepEqual(callChoice.token_ids, first.greedy_ids, "turn 1: transformers' greedy ids");
    assert.equal(callChoice.finish_reason, "tool_calls");
    assert.equal(callChoice.message.content, null);
    const toolCalls = callChoice.message.tool_calls ?? [];
    assert.equal(toolCalls.length, 1);
    const [toolCall] = toolCalls;
    assert.ok(toolCall.type === "function");
    assert.equal(toolCall.function.name, "search");
    const expected = second.messages[2];
    assert.ok(expected.role === "assistant" && expected.tool_calls?.[0]?.type === "function");
    assert.deepEqual(
      JSON.parse(toolCall.function.arguments),
      JSON.parse(expected.tool_calls[0].function.arguments),
    );
    assert.match(first.greedy_text, /^<tool_call>\n\{"name": "search", "arguments": /);

    // Turn 2: the assistant message as the client returned it, and the tool's result.
    const result = second.messages[3];
    assert.ok(result.role === "tool");
    const conversation: ChatCompletionMessageParam[] = [
      ...messages,
      callChoice.message,
      { role: "tool", tool_call_id: toolCall.id, content: result.content },
    ];
    // Twice: in the named episode (its slot holds turn 1's ids; only the new ids are fed), and as
    // a stateless request rendered and fed from scratch.
    for (const episode of ["e2e", undefined]) {
      const answer = await ask(conversation, episode);
      assert.deepEqual(answer.prompt_token_ids, second.prompt_ids, "turn 2: the templated prompt ids");
      const [answerChoice] = answer.choices;
      assert.deepEqual(answerChoice.token_ids, second.greedy_ids, "turn 2: transformers' greedy ids");
      assert.equal(answerChoice.finish_reason, "stop");
      assert.ok(second.greedy_text.endsWith(END));
      assert.equal(answerChoice.message.content, second.greedy_text.slice(0, -END.length));
      assert.equal(answerChoice.message.tool_calls, undefined);
    }
    const hf = policy as HfPolicy;
    assert.deepEqual(
      [hf.prefixBreaks, hf.continuedTurns],
      [0, 1],
      "the named episode's turn 2 extended its slot",
    );
    // A tool sent without a description is rendered as sent (as transformers and vLLM render the
    // request's tools), not rebuilt with an empty description.
    const bare = reference.tools.map((tool) => {
      assert.ok(tool.type === "function");
      const { description: _, ...fn } = tool.function;
      return { type: "function" as const, function: fn };
    });
    const bareCall = (await client.chat.completions.create({
      model: "qwen3-chat",
      messages,
      tools: bare,
      temperature: 0,
      max_tokens: 1,
      return_token_ids: true,
    } as OpenAI.ChatCompletionCreateParamsNonStreaming)) as WithIds;
    const text = await loadHfTextSide(FOLDER, "qwen3");
    const bareText = text.template.render(messages, { tools: bare, addGenerationPrompt: true });
    assert.ok(!bareText.includes('"description": ""') && !bareText.includes("Search the encyclopedia"));
    assert.deepEqual(bareCall.prompt_token_ids, text.tokenizer.encode(bareText));
  } finally {
    await server.close();
    (policy as HfPolicy | undefined)?.model.dispose();
  }
});

test("the episode loop over hf:<folder> calls the tool and answers with transformers' ids", async () => {
  const [first, second] = reference.turns;
  const calls: unknown[] = [];
  const { task, search } = chatFixtureTask((args) => calls.push(args));
  const policy = await loadHfPolicy(FOLDER, { temperature: 0, capacity: 1 });
  // The ids each turn was prompted with, as the policy rendered them just before acting.
  const prompts: number[][] = [];
  const recording: Policy = {
    id: policy.id,
    protocol: policy.protocol,
    tokenizer: policy.tokenizer,
    act: (contexts, options) => {
      prompts.push(...contexts.map((context) => policy.promptIds(context)));
      return policy.act(contexts, options);
    },
    release: (ids) => policy.release(ids),
  };
  try {
    const [trajectory] = await runEpisodes({
      policy: recording,
      episodes: [{ task, seed: 1 }],
      tools: () => [search],
      verify: (_task, answer) => answer?.includes("1200") ?? false,
      budgets: { maxTurnTokens: 64 },
    });
    assert.deepEqual(prompts, [first.prompt_ids, second.prompt_ids]);
    assert.deepEqual(
      trajectory.turns.map((turn) => turn.tokenIds),
      [first.greedy_ids, second.greedy_ids],
    );
    const call = second.messages[2];
    assert.ok(call.role === "assistant" && call.tool_calls?.[0]?.type === "function");
    assert.deepEqual(calls, [JSON.parse(call.tool_calls[0].function.arguments)]);
    assert.equal(trajectory.endReason, "answer");
    assert.equal(trajectory.finalAnswer, second.greedy_text.slice(0, -END.length));
    assert.ok(trajectory.correct);
    // The second turn's rendering extended what the first fed and sampled: only the new ids were fed.
    assert.deepEqual([policy.prefixBreaks, policy.continuedTurns], [0, 1]);
  } finally {
    await policy.close();
    policy.model.dispose();
  }
});
