import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { createRng } from "../../core/random.ts";
import { runEpisodes } from "../../env/run-episodes.ts";
import { createSearchTool } from "../../tools/index.ts";
import type { PolicyContext } from "../../types/policy.ts";
import type { Task } from "../../types/task.ts";
import type { Turn } from "../../types/trajectory.ts";
import { resolvePolicy } from "../resolve.ts";
import {
  backoffDelay,
  buildChatMessages,
  createOpenAiPolicy,
  createSemaphore,
  DEFAULT_SYSTEM_PROMPT,
  NOT_EXECUTED,
  parseOpenAiSpec,
  stepFromCompletion,
} from "./index.ts";

// ---- a scripted test server ----

interface Reply {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  delayMs?: number;
  /** Never answer (the client must time out). */
  hang?: boolean;
}

interface FakeServer {
  url: string;
  requests: Record<string, unknown>[];
  headers: IncomingMessage["headers"][];
  maxInFlight: number;
  close(): Promise<void>;
}

async function fakeServer(
  reply: (body: Record<string, unknown>, index: number) => Reply,
): Promise<FakeServer> {
  const state = {
    requests: [] as Record<string, unknown>[],
    headers: [] as IncomingMessage["headers"][],
    inFlight: 0,
    maxInFlight: 0,
  };
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    state.inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    const index = state.requests.push(body) - 1;
    state.headers.push(req.headers);
    const out = reply(body, index);
    if (out.hang) {
      res.on("close", () => state.inFlight--);
      return;
    }
    if (out.delayMs) await new Promise((resolve) => setTimeout(resolve, out.delayMs));
    state.inFlight--;
    res.writeHead(out.status ?? 200, { "content-type": "application/json", ...out.headers });
    res.end(JSON.stringify(out.body ?? completion("ok")));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests: state.requests,
    headers: state.headers,
    get maxInFlight() {
      return state.maxInFlight;
    },
    async close() {
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
      await closed;
    },
  };
}

function completion(
  content: string | null,
  extra: Record<string, unknown> = {},
  message: Record<string, unknown> = {},
) {
  return {
    id: "chatcmpl-test",
    object: "chat.completion",
    created: 0,
    model: "m",
    choices: [
      {
        index: 0,
        message: { role: "assistant", content, ...message },
        finish_reason: "stop",
        logprobs: null,
        ...extra,
      },
    ],
  };
}

const task: Task = {
  id: "t/1",
  question: "what is the population of zenda ?",
  answer: "4213",
  family: "lookup",
};

function context(turns: Turn[] = [], overrides: Partial<PolicyContext> = {}): PolicyContext {
  return {
    episodeId: "e1",
    task,
    prompt: { text: "", tokenIds: [] },
    turns,
    tools: [
      {
        name: "search",
        description: "search the documents",
        parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
        textArgument: "query",
      },
    ],
    seed: 42,
    maxTokens: 64,
    ...overrides,
  };
}

const fast = { maxRetries: 3, retryBaseDelayMs: 1, retryMaxDelayMs: 5, timeoutMs: 2000 };

// ---- tests ----

test("the request: system, question, tools, sampling settings, seed and max_tokens", async () => {
  const server = await fakeServer(() => ({ body: completion("4213") }));
  try {
    const policy = createOpenAiPolicy({
      baseURL: server.url,
      model: "m",
      temperature: 0.7,
      topP: 0.9,
      apiKey: "k1",
      logprobs: true,
      extraBody: { top_k: 5 },
    });
    const [step] = await policy.act([context()]);
    assert.equal(step.text, "4213");
    assert.equal(step.finishReason, "stop");
    const body = server.requests[0];
    assert.equal(body.model, "m");
    assert.equal(body.temperature, 0.7);
    assert.equal(body.top_p, 0.9);
    assert.equal(body.max_tokens, 64);
    assert.equal(body.seed, 42);
    assert.equal(body.logprobs, true);
    assert.equal(body.top_k, 5);
    assert.equal(body.n, undefined, "one sample per request");
    assert.equal(
      server.headers[0]["x-agentrl-task-id"],
      "t/1",
      "the task id travels in a header, not the body",
    );
    assert.equal(server.headers[0].authorization, "Bearer k1");
    const quiet = createOpenAiPolicy({ baseURL: server.url, model: "m", sendTaskId: false, sendSeed: false });
    await quiet.act([context()]);
    assert.equal(server.headers[1]["x-agentrl-task-id"], undefined);
    assert.equal(server.requests[1].seed, undefined);
    assert.deepEqual(body.messages, [
      { role: "system", content: DEFAULT_SYSTEM_PROMPT },
      { role: "user", content: task.question },
    ]);
    assert.deepEqual(body.tools, [
      {
        type: "function",
        function: {
          name: "search",
          description: "search the documents",
          parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
        },
      },
    ]);
  } finally {
    await server.close();
  }
});

test("buildChatMessages: tool-call turns, their observations, and a rejected blank answer", () => {
  const turns: Turn[] = [
    {
      index: 0,
      text: "",
      tokenIds: [],
      logprobs: null,
      action: { type: "tool-call", tool: "search", arguments: { query: "zenda" }, callId: "call_abc" },
      observation: { text: "zenda : city in ruritania .", tokenIds: [] },
      rewards: {},
    },
    {
      index: 1,
      text: "let me look",
      tokenIds: [],
      logprobs: null,
      action: { type: "tool-call", tool: "search", arguments: { query: "ruritania" } },
      observation: { text: "no results", tokenIds: [] },
      rewards: {},
    },
    {
      index: 2,
      text: " ",
      tokenIds: [],
      logprobs: null,
      action: { type: "format-error", error: "no tool call and no answer" },
      observation: { text: "error : no tool call and no answer", tokenIds: [] },
      rewards: {},
    },
  ];
  const messages = buildChatMessages(context(turns, { task: { ...task, systemPrompt: "be brief" } }));
  assert.deepEqual(messages, [
    { role: "system", content: "be brief" },
    { role: "user", content: task.question },
    {
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "call_abc", type: "function", function: { name: "search", arguments: '{"query":"zenda"}' } },
      ],
    },
    { role: "tool", tool_call_id: "call_abc", content: "zenda : city in ruritania ." },
    {
      role: "assistant",
      content: "let me look",
      tool_calls: [
        { id: "call_1", type: "function", function: { name: "search", arguments: '{"query":"ruritania"}' } },
      ],
    },
    { role: "tool", tool_call_id: "call_1", content: "no results" },
    { role: "assistant", content: " " },
    { role: "user", content: "error : no tool call and no answer" },
  ]);
});

test("later turns replay the model's exact tool calls, and answer every call id", async () => {
  const raw = '{ "query" : "Zenda" }';
  const server = await fakeServer((_, i) =>
    i === 0
      ? {
          body: completion(
            null,
            { finish_reason: "tool_calls" },
            {
              tool_calls: [
                { id: "call_x", type: "function", function: { name: "search", arguments: raw } },
                { id: "call_y", type: "function", function: { name: "search", arguments: '{"query":"b"}' } },
              ],
            },
          ),
        }
      : { body: completion("4213") },
  );
  try {
    const policy = createOpenAiPolicy({ baseURL: server.url, model: "m", ...fast });
    const tools = [
      createSearchTool([{ id: "city:zenda", title: "zenda", text: "zenda : city . population 4213 ." }]),
    ];
    const [trajectory] = await runEpisodes({
      policy,
      episodes: [{ task, seed: 3 }],
      tools: () => tools,
      verify: (t, answer) => answer === t.answer,
    });
    assert.equal(trajectory.endReason, "answer");
    assert.equal(trajectory.correct, true);
    const second = server.requests[1].messages as Record<string, unknown>[];
    assert.deepEqual(second[2], {
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "call_x", type: "function", function: { name: "search", arguments: raw } },
        { id: "call_y", type: "function", function: { name: "search", arguments: '{"query":"b"}' } },
      ],
    });
    assert.equal(second[3].tool_call_id, "call_x");
    assert.match(String(second[3].content), /population 4213/);
    assert.deepEqual(second[4], { role: "tool", tool_call_id: "call_y", content: NOT_EXECUTED });
    assert.equal(second.length, 5);
  } finally {
    await server.close();
  }
});

test("a 500 then a 200: retried, and the episode goes on", async () => {
  const server = await fakeServer((_, i) =>
    i === 0 ? { status: 500, body: { error: { message: "boom" } } } : { body: completion("4213") },
  );
  try {
    const retries: string[] = [];
    const policy = createOpenAiPolicy({
      baseURL: server.url,
      model: "m",
      ...fast,
      onRetry: (info) => retries.push(info.error),
    });
    const [trajectory] = await runEpisodes({
      policy,
      episodes: [{ task, seed: 1 }],
      tools: () => [],
      verify: (t, answer) => answer === t.answer,
    });
    assert.equal(server.requests.length, 2);
    assert.equal(retries.length, 1);
    assert.match(retries[0], /HTTP 500/);
    assert.equal(trajectory.endReason, "answer");
    assert.equal(trajectory.correct, true);
  } finally {
    await server.close();
  }
});

test("a server that always fails: every retry made, then a recorded policy-error, never a throw", async () => {
  const server = await fakeServer(() => ({ status: 503, body: { error: { message: "overloaded" } } }));
  try {
    const policy = createOpenAiPolicy({ baseURL: server.url, model: "m", ...fast, maxRetries: 2 });
    const trajectories = await runEpisodes({
      policy,
      episodes: [
        { task, seed: 1 },
        { task, seed: 2 },
      ],
      tools: () => [],
      verify: (t, answer) => answer === t.answer,
    });
    assert.equal(server.requests.length, 6, "3 attempts for each of the 2 episodes");
    assert.equal(trajectories.length, 2, "failed episodes stay in the results (the pass@k denominator)");
    for (const trajectory of trajectories) {
      assert.equal(trajectory.endReason, "policy-error");
      assert.equal(trajectory.correct, false);
      assert.match(String(trajectory.info?.error), /HTTP 503.*3 attempts/);
    }
  } finally {
    await server.close();
  }
});

test("429 is retried; 400 is not (repeating a bad request cannot fix it)", async () => {
  const limited = await fakeServer((_, i) =>
    i < 2
      ? { status: 429, headers: { "retry-after": "0" }, body: { error: { message: "slow down" } } }
      : { body: completion("1") },
  );
  const bad = await fakeServer(() => ({
    status: 400,
    body: { error: { message: "bad field", param: "x" } },
  }));
  try {
    const [ok] = await createOpenAiPolicy({ baseURL: limited.url, model: "m", ...fast }).act([context()]);
    assert.equal(ok.text, "1");
    assert.equal(limited.requests.length, 3);
    const [failed] = await createOpenAiPolicy({ baseURL: bad.url, model: "m", ...fast }).act([context()]);
    assert.equal(failed.finishReason, "error");
    assert.match(failed.error!, /HTTP 400.*\(1 attempt\)/);
    assert.equal(bad.requests.length, 1);
  } finally {
    await limited.close();
    await bad.close();
  }
});

test("timeouts and refused connections are errors after retries, not throws", async () => {
  const hanging = await fakeServer(() => ({ hang: true }));
  try {
    const policy = createOpenAiPolicy({
      baseURL: hanging.url,
      model: "m",
      ...fast,
      maxRetries: 1,
      timeoutMs: 150,
    });
    const [step] = await policy.act([context()]);
    assert.equal(step.finishReason, "error");
    assert.match(step.error!, /timed out after 150 ms \(2 attempts\)/);
    assert.equal(hanging.requests.length, 2);
  } finally {
    await hanging.close();
  }
  const closed = await fakeServer(() => ({}));
  const url = closed.url;
  await closed.close();
  const [step] = await createOpenAiPolicy({ baseURL: url, model: "m", ...fast, maxRetries: 1 }).act([
    context(),
  ]);
  assert.equal(step.finishReason, "error");
  assert.match(step.error!, /connection error.*\(2 attempts\)/i);
});

test("concurrency: never more requests in flight than the limit, across act calls", async () => {
  const server = await fakeServer(() => ({ delayMs: 40, body: completion("1") }));
  try {
    const policy = createOpenAiPolicy({ baseURL: server.url, model: "m", ...fast, concurrency: 3 });
    const batch = (prefix: string) =>
      Array.from({ length: 6 }, (_, i) => context([], { episodeId: `${prefix}${i}`, seed: i }));
    const [first, second] = await Promise.all([policy.act(batch("a")), policy.act(batch("b"))]);
    assert.equal(first.length + second.length, 12);
    assert.ok([...first, ...second].every((step) => step.text === "1"));
    assert.equal(server.requests.length, 12);
    assert.equal(server.maxInFlight, 3);
  } finally {
    await server.close();
  }
});

test("log-probs and token ids: kept when the server returns them, never re-tokenised", () => {
  const entries = [
    { token: "token_id:7", logprob: -0.5, bytes: null, top_logprobs: [] },
    { token: "token_id:9", logprob: -1.5, bytes: null, top_logprobs: [] },
  ];
  const step = stepFromCompletion(
    completion("42", { logprobs: { content: entries, refusal: null } }) as never,
  );
  assert.deepEqual(step.tokenIds, [7, 9]);
  assert.deepEqual(step.logprobs, [-0.5, -1.5]);

  const direct = stepFromCompletion(
    completion("42", {
      token_ids: [3, 4],
      logprobs: { content: entries.map((e) => ({ ...e, token: "x" })), refusal: null },
    }) as never,
  );
  assert.deepEqual(direct.tokenIds, [3, 4]);
  assert.deepEqual(direct.logprobs, [-0.5, -1.5]);

  const textOnly = stepFromCompletion(
    completion("42", {
      logprobs: { content: entries.map((e) => ({ ...e, token: "4" })), refusal: null },
    }) as never,
  );
  assert.deepEqual(textOnly.tokenIds, [], "token strings are not looked up in any vocabulary");
  assert.deepEqual(textOnly.logprobs, [-0.5, -1.5]);

  const mismatched = stepFromCompletion(
    completion("42", { token_ids: [1, 2, 3], logprobs: { content: entries } }) as never,
  );
  assert.deepEqual(mismatched.tokenIds, [1, 2, 3]);
  assert.equal(mismatched.logprobs, null, "log-probs that cannot be paired with the ids are dropped");

  assert.equal(stepFromCompletion({ choices: [] } as never).finishReason, "error");
  assert.equal(stepFromCompletion({} as never).finishReason, "error");
  const cut = stepFromCompletion(completion("the answer is", { finish_reason: "length" }) as never);
  assert.equal(cut.finishReason, "length");
});

test("resolvePolicy: openai:<base-url>#<model>", async () => {
  const policy = await resolvePolicy("openai:http://127.0.0.1:8000/v1#my-model", {
    temperature: 0.5,
    topP: 0.9,
  });
  assert.equal(policy.protocol, "chat");
  assert.equal(policy.id, "openai:http://127.0.0.1:8000/v1#my-model");
  assert.deepEqual(parseOpenAiSpec("openai:https://host/v1/#org/model"), {
    baseURL: "https://host/v1",
    model: "org/model",
  });
  assert.equal(parseOpenAiSpec("expert"), null);
  assert.throws(
    () => parseOpenAiSpec("openai:http://127.0.0.1:8000/v1"),
    /expected openai:<base-url>#<model>/,
  );
  assert.throws(() => parseOpenAiSpec("openai:nota url#m"), /not a URL/);
  await assert.rejects(
    resolvePolicy("openai:http://127.0.0.1:1/v1#m", { temperature: 3 }),
    /temperature must be in \[0, 2\]/,
  );
});

test("semaphore and backoff", async () => {
  const semaphore = createSemaphore(2);
  let active = 0;
  let peak = 0;
  await Promise.all(
    Array.from({ length: 7 }, () =>
      semaphore.run(async () => {
        peak = Math.max(peak, ++active);
        await new Promise((resolve) => setTimeout(resolve, 5));
        active--;
      }),
    ),
  );
  assert.equal(peak, 2);
  assert.equal(semaphore.active, 0);
  const rng = createRng(1);
  for (let attempt = 0; attempt < 12; attempt++) {
    const delay = backoffDelay(attempt, { baseDelayMs: 100, maxDelayMs: 1000, rng });
    assert.ok(delay >= 0 && delay < Math.min(1000, 100 * 2 ** attempt), `attempt ${attempt}: ${delay}`);
  }
});
