/**
 * The gateway against a fake upstream: what it sends upstream (model, seed, token-id fields, the
 * key in a header only), what the agent gets back (extension fields only when asked), what it
 * records (exact ids, streamed calls assembled), and its guards (token, body limit, a malformed
 * upstream answer recorded as a policy-error episode).
 */
import assert from "node:assert/strict";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import OpenAI from "openai";
import { startGateway } from "./server.ts";
import type { BuiltEpisode } from "./trajectory.ts";
import type { GatewayCall } from "./types.ts";
import { httpUpstream } from "./upstream.ts";

const KEY = "sk-upstream-secret-123";

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

/** A fake vLLM: prompt ids = one id per message; completion ids [100 + call]; `malformed` mode answers junk. */
async function fakeUpstream(mode: { malformed?: boolean }) {
  const seen: { body: Record<string, unknown>; authorization: string | undefined }[] = [];
  const server = createServer(async (req, res) => {
    const request = await body(req);
    seen.push({ body: request, authorization: req.headers.authorization });
    if (mode.malformed) {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(JSON.stringify({ choices: "not a list" }));
    }
    const messages = request.messages as unknown[];
    const prompt = messages.map((_, i) => i + 1);
    const id = 100 + seen.length;
    const message = { role: "assistant", content: `answer ${id}` };
    if (request.stream) {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
      send({
        id: "s",
        prompt_token_ids: prompt,
        choices: [
          {
            index: 0,
            delta: { role: "assistant", content: "answer " },
            logprobs: { content: [{ logprob: -1 }] },
            token_ids: [id],
          },
        ],
      });
      send({
        id: "s",
        choices: [
          {
            index: 0,
            delta: { content: `${id}` },
            logprobs: { content: [{ logprob: -2 }] },
            token_ids: [id + 1],
          },
        ],
      });
      send({ id: "s", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] });
      return res.end("data: [DONE]\n\n");
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
            message,
            finish_reason: "stop",
            token_ids: [id],
            logprobs: { content: [{ logprob: -0.5 }] },
          },
        ],
        usage: { prompt_tokens: prompt.length, completion_tokens: 1, total_tokens: prompt.length + 1 },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return { url, seen, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

async function setup(mode: { malformed?: boolean } = {}, token?: string) {
  const upstream = await fakeUpstream(mode);
  const calls: GatewayCall[] = [];
  const episodes: BuiltEpisode[] = [];
  const gateway = await startGateway({
    upstream: httpUpstream({ baseURL: upstream.url, model: "served-model", apiKey: KEY }),
    ...(token ? { token } : {}),
    maxBodyBytes: 64 * 1024,
    onCall: (call) => calls.push(call),
    onEpisode: (episode) => episodes.push(episode),
    log: () => {},
  });
  return {
    upstream,
    gateway,
    calls,
    episodes,
    close: async () => {
      await gateway.close();
      await upstream.close();
    },
  };
}

test("calls are forwarded with the upstream model, a seed and token-id fields; the agent gets a plain answer", async () => {
  const { gateway, upstream, calls, close } = await setup();
  try {
    const client = new OpenAI({ baseURL: gateway.episodeURL("ep-1"), apiKey: "unused", maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: "anything",
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(completion.choices[0].message.content, "answer 101");
    const raw = completion as unknown as Record<string, unknown>;
    assert.equal(raw.prompt_token_ids, undefined, "not asked: no prompt ids");
    assert.equal((completion.choices[0] as unknown as Record<string, unknown>).token_ids, undefined);
    assert.equal(completion.choices[0].logprobs, null);
    const sent = upstream.seen[0];
    assert.equal(sent.body.model, "served-model");
    assert.equal(sent.body.return_token_ids, true);
    assert.equal(sent.body.logprobs, true);
    assert.equal(typeof sent.body.seed, "number");
    assert.equal(sent.authorization, `Bearer ${KEY}`);
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].promptTokenIds, [1]);
    assert.deepEqual(calls[0].choices[0].tokenIds, [101]);
    assert.deepEqual(calls[0].choices[0].logprobs, [-0.5]);
    assert.ok(!JSON.stringify(calls).includes(KEY), "the upstream key is never recorded");

    const asked = (await client.chat.completions.create({
      model: "x",
      messages: [{ role: "user", content: "hi" }],
      logprobs: true,
      // @ts-expect-error vLLM's extension field
      return_token_ids: true,
    })) as unknown as { prompt_token_ids: number[]; choices: { token_ids: number[] }[] };
    assert.deepEqual(asked.prompt_token_ids, [1]);
    assert.deepEqual(asked.choices[0].token_ids, [102]);
  } finally {
    await close();
  }
});

test("a streamed call is passed through and recorded once complete", async () => {
  const { gateway, calls, close } = await setup();
  try {
    const client = new OpenAI({
      baseURL: `${gateway.url}/v1`,
      apiKey: "x",
      maxRetries: 0,
      defaultHeaders: { "x-agentrl-episode-id": "ep-s" },
    });
    const stream = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
    });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
    assert.equal(text, "answer 101");
    assert.equal(calls.length, 1);
    assert.equal(calls[0].episodeId, "ep-s");
    assert.equal(calls[0].stream, true);
    assert.deepEqual(calls[0].promptTokenIds, [1]);
    assert.deepEqual(calls[0].choices[0].tokenIds, [101, 102]);
    assert.deepEqual(calls[0].choices[0].logprobs, [-1, -2]);
    assert.equal(calls[0].choices[0].content, "answer 101");
    const built = gateway.finishEpisode("ep-s", { finalAnswer: text });
    assert.deepEqual(built.trajectory.turns[0].tokenIds, [101, 102]);
  } finally {
    await close();
  }
});

test("a malformed upstream answer is a 502, a recorded error, and a policy-error episode", async () => {
  const { gateway, calls, close } = await setup({ malformed: true });
  try {
    const client = new OpenAI({ baseURL: gateway.episodeURL("ep-m"), apiKey: "x", maxRetries: 0 });
    await assert.rejects(
      client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] }),
      (error: { status?: number }) => error.status === 502,
    );
    assert.match(calls[0].error ?? "", /malformed/);
    const built = gateway.finishEpisode("ep-m", { finalAnswer: "42" });
    assert.equal(built.trajectory.endReason, "policy-error");
  } finally {
    await close();
  }
});

test("token, body limit, rewards and end over HTTP", async () => {
  const { gateway, episodes, close } = await setup({}, "gate-token");
  try {
    const post = (path: string, payload: unknown, token = "gate-token") =>
      fetch(`${gateway.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify(payload),
      });
    const chat = { model: "m", messages: [{ role: "user", content: "hi" }] };
    assert.equal((await post("/episodes/ep-t/v1/chat/completions", chat, "wrong")).status, 401);
    assert.equal((await post("/episodes/ep-t/v1/chat/completions", chat)).status, 200);
    const big = { ...chat, messages: [{ role: "user", content: "x".repeat(70 * 1024) }] };
    assert.equal((await post("/episodes/ep-t/v1/chat/completions", big)).status, 413);
    assert.equal((await post("/episodes/bad%20id/v1/chat/completions", chat)).status, 400);
    assert.equal((await post("/episodes/ep-t/reward", { reward: "high" })).status, 400);
    assert.equal((await post("/episodes/ep-t/reward", { reward: 1, turnRewards: { 0: 0.5 } })).status, 200);
    const end = await post("/episodes/ep-t/end", { answer: "answer 101" });
    assert.equal(end.status, 200);
    assert.deepEqual(await end.json(), { id: "ep-t", turns: 1, endReason: "answer", prefixBreaks: 0 });
    assert.equal(episodes[0].trajectory.outcomeReward, 1);
    assert.equal(
      (await post("/episodes/ep-t/v1/chat/completions", chat)).status,
      409,
      "a late call of an ended episode",
    );
    assert.equal(episodes[0].trajectory.turns[0].rewards.posted, 0.5);
  } finally {
    await close();
  }
});

test("a non-loopback address needs a token", async () => {
  await assert.rejects(
    startGateway({
      upstream: httpUpstream({ baseURL: "http://127.0.0.1:9/v1", model: "m" }),
      host: "0.0.0.0",
      log: () => {},
    }),
    /without a token/,
  );
});

test("Responses API: function tools, input items and previous_response_id become chat messages", async () => {
  const { gateway, upstream, calls, close } = await setup();
  try {
    const client = new OpenAI({ baseURL: gateway.episodeURL("ep-r"), apiKey: "x", maxRetries: 0 });
    const tools = [
      {
        type: "function" as const,
        name: "search",
        description: "search",
        parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
        strict: false,
      },
    ];
    const first = await client.responses.create({ model: "m", instructions: "be brief", input: "hi", tools });
    assert.equal(first.output_text, "answer 101");
    assert.deepEqual(upstream.seen[0].body.messages, [
      { role: "system", content: "be brief" },
      { role: "user", content: "hi" },
    ]);
    assert.equal(
      (upstream.seen[0].body.tools as { function: { name: string } }[])[0].function.name,
      "search",
    );
    const second = await client.responses.create({
      model: "m",
      previous_response_id: first.id,
      input: [
        { type: "function_call", call_id: "c9", name: "search", arguments: '{"query":"q"}' },
        { type: "function_call_output", call_id: "c9", output: "found" },
      ],
    });
    assert.equal(second.output_text, "answer 102");
    assert.deepEqual(upstream.seen[1].body.messages, [
      { role: "user", content: "hi" },
      { role: "assistant", content: "answer 101" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "c9", type: "function", function: { name: "search", arguments: '{"query":"q"}' } },
        ],
      },
      { role: "tool", tool_call_id: "c9", content: "found" },
    ]);
    assert.deepEqual(
      calls.map((call) => call.api),
      ["responses", "responses"],
    );
    assert.deepEqual(calls[1].choices[0].tokenIds, [102]);
    const stream = await client.responses.create({ model: "m", input: "again", stream: true });
    let text = "";
    let completed = false;
    for await (const event of stream) {
      if (event.type === "response.output_text.delta") text += event.delta;
      if (event.type === "response.completed") completed = true;
    }
    assert.equal(text, "answer 103");
    assert.ok(completed);
    await assert.rejects(
      client.responses.create({ model: "m", previous_response_id: "resp_missing", input: "x" }),
      (error: { status?: number }) => error.status === 404,
    );
    await assert.rejects(
      client.responses.create({ model: "m", input: "x", tools: [{ type: "web_search" }] }),
      (error: { status?: number }) => error.status === 400,
    );
  } finally {
    await close();
  }
});

test("an upstream whose next prompt does not extend the last one: the break is counted, not merged", async () => {
  // The fake's prompt ids are 1..(number of messages): call 2's [1 2 3] does not start with
  // call 1's prompt + completion [1 101].
  const { gateway, close } = await setup();
  try {
    const client = new OpenAI({ baseURL: gateway.episodeURL("ep-b"), apiKey: "x", maxRetries: 0 });
    const question = { role: "user" as const, content: "hi" };
    const first = await client.chat.completions.create({ model: "m", messages: [question] });
    const reply = { role: "assistant" as const, content: first.choices[0].message.content };
    await client.chat.completions.create({
      model: "m",
      messages: [question, reply, { role: "user", content: "more" }],
    });
    const built = gateway.finishEpisode("ep-b", { finalAnswer: "answer 102" });
    assert.equal(built.prefixBreaks, 1);
    assert.equal(gateway.stats.prefixBreaks, 1);
    assert.equal(built.trajectory.turns.length, 2);
    const info = built.trajectory.info?.gateway as
      | { segments: { prompt: { tokenIds: number[] } }[] }
      | undefined;
    assert.deepEqual(info?.segments[0].prompt.tokenIds, [1, 2, 3]);
  } finally {
    await close();
  }
});
