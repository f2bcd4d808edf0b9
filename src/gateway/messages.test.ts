/**
 * The Anthropic Messages API through the gateway, driven by the unmodified `@anthropic-ai/sdk`:
 * a multi-turn tool_use → tool_result exchange with and without streaming (`create({stream})`,
 * `messages.stream().finalMessage()`), what the upstream is sent (system, tools, tool calls with the
 * exact sampled arguments, tool results), the stop reasons, Anthropic-shaped errors, and the
 * recorded trajectory: exactly the token ids and log-probs the upstream sampled. Last, an
 * Anthropic-SDK agent on world tasks against the scripted expert behind the gateway.
 */
import assert from "node:assert/strict";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import { runAgentEpisode } from "../agents/run-episode.ts";
import type { AgentFunction } from "../agents/types.ts";
import { agentWorldTools } from "../agents/world-tools.ts";
import { resolveEvalTasks } from "../eval/eval-tasks.ts";
import { checkAnswer } from "../world/index.ts";
import { resolveUpstream } from "./resolve-upstream.ts";
import { startGateway } from "./server.ts";
import type { BuiltEpisode } from "./trajectory.ts";
import type { GatewayCall } from "./types.ts";
import { httpUpstream, type Upstream } from "./upstream.ts";

type Message = {
  role: string;
  content?: string | null;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
};

/** A toy chat template: every character is a token, so a prompt extends the last one only if the history re-renders it exactly. */
const render = (message: Message) =>
  `[${message.role}${message.tool_call_id ? ` ${message.tool_call_id}` : ""}]${message.content ?? ""}${(
    message.tool_calls ?? []
  )
    .map((call) => `{${call.id} ${call.function.name} ${call.function.arguments}}`)
    .join("")}\n`;
const ids = (text: string) => [...text].map((char) => char.codePointAt(0) as number);
const logprobOf = (id: number, position: number) => -((id % 13) + position + 1) / 100;

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

/**
 * A scripted vLLM: the first call of a conversation (no tool message yet) calls `search` with
 * arguments spaced as Python's json.dumps writes them, a later call answers in text. `stop` is
 * honoured as vLLM does (its `stop_reason` names the string), a small `max_tokens` cuts the turn.
 */
async function scriptedUpstream() {
  const seen: Record<string, unknown>[] = [];
  const sampled: { tokenIds: number[]; logprobs: number[] }[] = [];
  const server = createServer(async (req, res) => {
    const request = await body(req);
    seen.push(request);
    const messages = request.messages as Message[];
    const prompt = ids(`${messages.map(render).join("")}[assistant]`);
    const answered = messages.some((message) => message.role === "tool");
    const stop = (request.stop as string[] | undefined)?.[0];
    let message: Message = { role: "assistant", content: answered ? "Zenda lives in Oslo." : null };
    let finish = answered ? "stop" : "tool_calls";
    if (!answered && request.tools) {
      message.tool_calls = [
        {
          id: `toolu_${seen.length}`,
          function: { name: "search", arguments: '{"query": "zenda", "limit": 2}' },
        },
      ];
    } else if (!answered) {
      message = { role: "assistant", content: "plain text" };
      finish = "stop";
    }
    if (stop) finish = "stop";
    if ((request.max_tokens as number) < 5) {
      message = { role: "assistant", content: "Zend" };
      finish = "length";
    }
    const tokenIds = ids(render({ ...message, role: "" }).slice(2));
    const logprobs = tokenIds.map(logprobOf);
    sampled.push({ tokenIds, logprobs });
    if (request.model === "fail") {
      res.writeHead(500, { "content-type": "application/json" });
      return res.end(JSON.stringify({ error: { message: "upstream broke" } }));
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id: "c",
        object: "chat.completion",
        model: request.model,
        prompt_token_ids: prompt,
        choices: [
          {
            index: 0,
            message: { ...message, role: "assistant" },
            finish_reason: finish,
            ...(stop ? { stop_reason: stop } : {}),
            token_ids: tokenIds,
            logprobs: { content: logprobs.map((logprob) => ({ logprob })) },
          },
        ],
        usage: { prompt_tokens: prompt.length, completion_tokens: tokenIds.length },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return { url, seen, sampled, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

async function setup(model = "served-model") {
  const upstream = await scriptedUpstream();
  const calls: GatewayCall[] = [];
  const episodes: BuiltEpisode[] = [];
  const gateway = await startGateway({
    upstream: httpUpstream({ baseURL: upstream.url, model }),
    token: "gate-token",
    onCall: (call) => calls.push(call),
    onEpisode: (episode) => episodes.push(episode),
    log: () => {},
  });
  return {
    upstream,
    gateway,
    calls,
    episodes,
    /** The Anthropic SDK's base URL of an episode (the SDK appends `/v1/messages`). */
    client: (episode: string, options: ConstructorParameters<typeof Anthropic>[0] = {}) =>
      new Anthropic({
        baseURL: `${gateway.url}/episodes/${episode}`,
        apiKey: "gate-token",
        maxRetries: 0,
        ...options,
      }),
    close: async () => {
      await gateway.close();
      await upstream.close();
    },
  };
}

const searchTool: Anthropic.Tool = {
  name: "search",
  description: "Search the documents.",
  input_schema: {
    type: "object",
    properties: { query: { type: "string" }, limit: { type: "integer" } },
    required: ["query"],
  },
};

/** The trajectory holds exactly what the upstream sampled, turn by turn, with no prefix break. */
function assertRecordedExactly(built: BuiltEpisode, sampled: { tokenIds: number[]; logprobs: number[] }[]) {
  assert.equal(built.prefixBreaks, 0, "the history re-rendered exactly as sampled");
  assert.deepEqual(
    built.trajectory.turns.map((turn) => turn.tokenIds),
    sampled.map((call) => call.tokenIds),
  );
  assert.deepEqual(
    built.trajectory.turns.map((turn) => turn.logprobs),
    sampled.map((call) => call.logprobs),
  );
}

test("Messages API: a tool_use → tool_result exchange is translated, answered and recorded with the sampled ids", async () => {
  const { gateway, upstream, calls, client, close } = await setup();
  try {
    const anthropic = client("ep-a");
    const question: Anthropic.MessageParam = { role: "user", content: "Where does Zenda live?" };
    const first = await anthropic.messages.create({
      model: "claude-any",
      max_tokens: 64,
      system: "Use the tools.",
      tools: [searchTool],
      messages: [question],
    });
    assert.equal(first.type, "message");
    assert.equal(first.role, "assistant");
    assert.equal(first.model, "claude-any");
    assert.equal(first.stop_reason, "tool_use");
    assert.deepEqual(first.content, [
      { type: "tool_use", id: "toolu_1", name: "search", input: { query: "zenda", limit: 2 } },
    ]);
    assert.equal(first.usage.output_tokens, upstream.sampled[0].tokenIds.length);
    assert.equal(first.usage.input_tokens, (calls[0].promptTokenIds as number[]).length);
    assert.deepEqual(upstream.seen[0].messages, [
      { role: "system", content: "Use the tools." },
      { role: "user", content: "Where does Zenda live?" },
    ]);
    assert.deepEqual(upstream.seen[0].tools, [
      {
        type: "function",
        function: {
          name: "search",
          description: "Search the documents.",
          parameters: searchTool.input_schema,
        },
      },
    ]);
    assert.equal(upstream.seen[0].max_tokens, 64);
    assert.equal(upstream.seen[0].model, "served-model");

    const toolUse = first.content[0] as Anthropic.ToolUseBlock;
    const second = await anthropic.messages.create({
      model: "claude-any",
      max_tokens: 64,
      system: [{ type: "text", text: "Use the tools." }],
      tools: [searchTool],
      messages: [
        question,
        { role: "assistant", content: first.content },
        {
          role: "user",
          content: [
            {
              type: "tool_result",
              tool_use_id: toolUse.id,
              content: [{ type: "text", text: "Zenda: Oslo" }],
            },
          ],
        },
      ],
    });
    assert.equal(second.stop_reason, "end_turn");
    assert.equal(second.stop_sequence, null);
    assert.deepEqual(second.content, [{ type: "text", text: "Zenda lives in Oslo." }]);
    assert.deepEqual((upstream.seen[1].messages as Message[]).slice(2), [
      {
        role: "assistant",
        content: null,
        // The sampled string, spaces and all, not JSON.stringify of the input.
        tool_calls: [
          {
            id: "toolu_1",
            type: "function",
            function: { name: "search", arguments: '{"query": "zenda", "limit": 2}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "toolu_1", content: "Zenda: Oslo" },
    ]);
    assert.deepEqual(
      calls.map((call) => call.api),
      ["messages", "messages"],
    );
    const built = gateway.finishEpisode("ep-a", { finalAnswer: "Oslo" });
    assertRecordedExactly(built, upstream.sampled);
    const [searchTurn, answerTurn] = built.trajectory.turns;
    assert.deepEqual(searchTurn.action, {
      type: "tool-call",
      tool: "search",
      arguments: { query: "zenda", limit: 2 },
      callId: "toolu_1",
    });
    assert.equal(searchTurn.toolResult?.content, "Zenda: Oslo");
    assert.equal(answerTurn.text, "Zenda lives in Oslo.");
  } finally {
    await close();
  }
});

test("Messages API streaming: create({stream: true}) events and messages.stream().finalMessage() over two turns", async () => {
  const { gateway, upstream, client, close } = await setup();
  try {
    const anthropic = client("ep-s");
    const question: Anthropic.MessageParam = { role: "user", content: "Where does Zenda live?" };
    const events = await anthropic.messages.create({
      model: "m",
      max_tokens: 64,
      tools: [searchTool],
      messages: [question],
      stream: true,
    });
    const seen: string[] = [];
    let json = "";
    for await (const event of events) {
      seen.push(event.type === "content_block_delta" ? `${event.type}:${event.delta.type}` : event.type);
      if (event.type === "content_block_delta" && event.delta.type === "input_json_delta")
        json += event.delta.partial_json;
      if (event.type === "message_delta") assert.equal(event.delta.stop_reason, "tool_use");
    }
    // (The SDK drops `ping` events; the raw stream's are checked in the errors test.)
    assert.deepEqual(seen, [
      "message_start",
      "content_block_start",
      "content_block_delta:input_json_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    assert.deepEqual(JSON.parse(json), { query: "zenda", limit: 2 });

    // The same first turn again, through the SDK's stream helper, then the tool result.
    gateway.finishEpisode("ep-s", { finalAnswer: null });
    const helper = client("ep-s2");
    const first = await helper.messages
      .stream({ model: "m", max_tokens: 64, tools: [searchTool], messages: [question] })
      .finalMessage();
    assert.equal(first.stop_reason, "tool_use");
    assert.deepEqual(first.content, [
      { type: "tool_use", id: "toolu_2", name: "search", input: { query: "zenda", limit: 2 } },
    ]);
    const stream = helper.messages.stream({
      model: "m",
      max_tokens: 64,
      tools: [searchTool],
      messages: [
        question,
        { role: "assistant", content: first.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_2", content: "Zenda: Oslo" }] },
      ],
    });
    let text = "";
    stream.on("text", (delta) => {
      text += delta;
    });
    const second = await stream.finalMessage();
    assert.equal(text, "Zenda lives in Oslo.");
    assert.equal(second.stop_reason, "end_turn");
    assert.equal(second.usage.output_tokens, upstream.sampled[2].tokenIds.length);
    assert.ok(second.usage.input_tokens > 0);
    const built = gateway.finishEpisode("ep-s2", { finalAnswer: text });
    assertRecordedExactly(built, upstream.sampled.slice(1));
  } finally {
    await close();
  }
});

test("Messages API stop reasons (max_tokens, a stop sequence vLLM names), sampling fields and tool_choice", async () => {
  const { client, upstream, close } = await setup();
  try {
    const anthropic = client("ep-stop");
    const cut = await anthropic.messages.create({
      model: "m",
      max_tokens: 2,
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(cut.stop_reason, "max_tokens");
    const stopped = await anthropic.messages.create({
      model: "m",
      max_tokens: 64,
      stop_sequences: ["###"],
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(stopped.stop_reason, "stop_sequence");
    assert.equal(stopped.stop_sequence, "###");
    assert.deepEqual(upstream.seen[1].stop, ["###"]);
    // Sampling fields and tool_choice, as chat completions spell them. (Agents on earlier SDK
    // versions send temperature, top_p and top_k; this version's types no longer list them.)
    const sampling = { temperature: 0.5, top_p: 0.9, top_k: 20 };
    await anthropic.messages.create({
      model: "m",
      max_tokens: 64,
      ...sampling,
      tools: [searchTool],
      tool_choice: { type: "tool", name: "search", disable_parallel_tool_use: true },
      messages: [{ role: "user", content: "hi" }],
    });
    const sent = upstream.seen[2];
    assert.deepEqual(
      [sent.temperature, sent.top_p, sent.top_k, sent.tool_choice, sent.parallel_tool_calls],
      [0.5, 0.9, 20, { type: "function", function: { name: "search" } }, false],
    );
    await anthropic.messages.create({
      model: "m",
      max_tokens: 64,
      tools: [searchTool],
      tool_choice: { type: "any" },
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(upstream.seen[3].tool_choice, "required");
  } finally {
    await close();
  }
});

test("Messages API auth and errors: x-api-key or bearer, the agent's /v1 base URL, Anthropic-shaped errors", async () => {
  const { gateway, client, close } = await setup();
  try {
    const ask = { model: "m", max_tokens: 8, messages: [{ role: "user" as const, content: "hi" }] };
    // The SDK's bearer form (authToken) and the `…/v1` base URL an `--agent` is handed.
    const bearer = new Anthropic({
      baseURL: gateway.episodeURL("ep-b"),
      authToken: "gate-token",
      maxRetries: 0,
    });
    assert.equal((await bearer.messages.create(ask)).stop_reason, "end_turn");

    await assert.rejects(client("ep-e", { apiKey: "wrong" }).messages.create(ask), (error: unknown) => {
      assert.ok(error instanceof Anthropic.AuthenticationError);
      assert.deepEqual(error.error, {
        type: "error",
        error: { type: "authentication_error", message: "missing or invalid bearer token" },
      });
      return true;
    });
    const post = async (payload: unknown, path = "/episodes/ep-e/v1/messages") => {
      const response = await fetch(`${gateway.url}${path}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-api-key": "gate-token",
          "anthropic-version": "2023-06-01",
        },
        body: JSON.stringify(payload),
      });
      return {
        status: response.status,
        body: (await response.json()) as { type: string; error: { type: string; message: string } },
      };
    };
    const noMax = await post({ model: "m", messages: ask.messages });
    assert.equal(noMax.status, 400);
    assert.equal(noMax.body.type, "error");
    assert.equal(noMax.body.error.type, "invalid_request_error");
    assert.match(noMax.body.error.message, /^max_tokens: /);
    const image = await post({
      ...ask,
      messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", data: "" } }] }],
    });
    assert.equal(image.status, 400);
    assert.match(image.body.error.message, /^messages\[0\]\.content\[0\]\.type: "image" is not supported/);
    const serverTool = await post({ ...ask, tools: [{ type: "web_search_20250305", name: "web_search" }] });
    assert.match(serverTool.body.error.message, /^tools\[0\]\.type: /);
    const orphan = await post({ ...ask, messages: [{ role: "user", content: [{ type: "tool_result" }] }] });
    assert.match(orphan.body.error.message, /^messages\[0\]\.content\[0\]\.tool_use_id: /);
    const raw = await fetch(`${gateway.url}/episodes/ep-e/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "gate-token" },
      body: JSON.stringify({ ...ask, stream: true }),
    });
    assert.equal(raw.headers.get("content-type"), "text/event-stream");
    assert.deepEqual(
      [...(await raw.text()).matchAll(/^event: (\w+)$/gm)].map((match) => match[1]),
      [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
      ],
    );
    const missing = await post(ask, "/episodes/ep-e/v1/messages/count_tokens");
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.type, "not_found_error");
  } finally {
    await close();
  }
});

test("Messages API: an upstream failure is an Anthropic api_error and a recorded failed call", async () => {
  const { gateway, calls, client, close } = await setup("fail");
  try {
    await assert.rejects(
      client("ep-f").messages.create({
        model: "m",
        max_tokens: 8,
        messages: [{ role: "user", content: "hi" }],
      }),
      (error: unknown) => {
        assert.ok(error instanceof Anthropic.InternalServerError);
        assert.equal((error.error as { error: { type: string } }).error.type, "api_error");
        return true;
      },
    );
    assert.match(calls[0].error ?? "", /500/);
    assert.equal(gateway.stats.failedCalls, 1);
  } finally {
    await close();
  }
});

/** An agent on the Anthropic SDK: the world's tools as client tools, up to 8 steps. */
const anthropicAgent: AgentFunction = async (task, { baseURL, apiKey, model, signal }) => {
  const client = new Anthropic({ baseURL, apiKey, maxRetries: 0 });
  const world = agentWorldTools(task);
  const tools = world.openai.map((tool) => ({
    name: tool.function.name,
    description: tool.function.description ?? "",
    input_schema: tool.function.parameters as Anthropic.Tool.InputSchema,
  }));
  const messages: Anthropic.MessageParam[] = [{ role: "user", content: task.question }];
  for (let step = 0; step < 8; step++) {
    const message = await client.messages
      .stream({ model, max_tokens: 32, tools, messages }, { signal })
      .finalMessage();
    if (message.stop_reason !== "tool_use") {
      return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
    }
    messages.push({ role: "assistant", content: message.content });
    const results: Anthropic.ToolResultBlockParam[] = [];
    for (const block of message.content) {
      if (block.type === "tool_use")
        results.push({
          type: "tool_result",
          tool_use_id: block.id,
          content: await world.call(block.name, block.input),
        });
    }
    messages.push({ role: "user", content: results });
  }
  return null;
};

test("an Anthropic-SDK agent against the embedded base: every turn stored with the ids and log-probs it sampled", async () => {
  const base = await resolveUpstream("models/base-strong", { temperature: 1, topP: 1 });
  const answers: { token_ids: number[]; logprobs: { content: { logprob: number }[] } }[] = [];
  // The upstream's answers as it sent them, to compare with what the gateway stored.
  const teed: Upstream = {
    ...base,
    async post(request, signal, headers) {
      const response = await base.post(request, signal, headers);
      const text = await response.text();
      answers.push(JSON.parse(text).choices[0]);
      return new Response(text, { status: response.status, headers: response.headers });
    },
  };
  const gateway = await startGateway({ upstream: teed, token: "t", policyId: "agent", log: () => {} });
  try {
    // Task seed 3: the model searches before it answers (multi-turn), as in evaluate-agent.test.ts.
    const tasks = resolveEvalTasks({ type: "world", split: "test", count: 2, seed: 3, family: "lookup" });
    let multiTurn = 0;
    for (const [i, task] of tasks.entries()) {
      answers.length = 0;
      const { trajectory, prefixBreaks } = await runAgentEpisode({
        gateway,
        agent: anthropicAgent,
        task,
        key: `k${i}`,
        seed: i,
        verify: checkAnswer,
        apiKey: "t",
        timeoutMs: 60_000,
      });
      assert.equal(trajectory.endReason === "policy-error", false, JSON.stringify(trajectory.info));
      assert.equal(prefixBreaks, 0, "the Anthropic history re-renders to the sampled ids");
      assert.ok(answers.length >= 1);
      if (answers.length > 1) multiTurn++;
      const sampledTurns = trajectory.turns.filter((turn) => turn.tokenIds.length > 0);
      assert.deepEqual(
        sampledTurns.map((turn) => turn.tokenIds),
        answers.map((choice) => choice.token_ids),
      );
      assert.deepEqual(
        sampledTurns.map((turn) => turn.logprobs),
        answers.map((choice) => choice.logprobs.content.map((entry) => entry.logprob)),
      );
      assert.ok(answers.every((choice) => choice.token_ids.length > 0));
    }
    assert.ok(multiTurn > 0, "at least one tool_use → tool_result exchange");
  } finally {
    await gateway.close();
  }
});
