import assert from "node:assert/strict";
import { test } from "node:test";
import OpenAI, { AuthenticationError, BadRequestError } from "openai";
import { canonicalText, renderPrompt } from "../env/protocol.ts";
import { createWordTokenizer } from "../policy/embedded/tokenizer.ts";
import { createMockPolicy } from "../policy/mock.ts";
import { createOpenAiPolicy } from "../policy/openai/index.ts";
import type { PolicyContext } from "../types/policy.ts";
import { type ChatServerOptions, startChatServer } from "./server.ts";

const tokenizer = createWordTokenizer([
  "what",
  "is",
  "the",
  "population",
  "of",
  "zenda",
  "?",
  "city",
  ":",
  ".",
  "x",
  "blah",
]);
const searchTool = {
  type: "function",
  function: {
    name: "search",
    description: "search",
    parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
  },
};
const question = "What is the population of Zenda?";

/** A server over a mock text policy; `seen` collects every context the policy got. */
async function withServer(
  script: (context: PolicyContext) => ReturnType<Parameters<typeof createMockPolicy>[0]>,
  run: (server: Awaited<ReturnType<typeof startChatServer>>, seen: PolicyContext[]) => Promise<void>,
  options: Partial<ChatServerOptions> = {},
) {
  const seen: PolicyContext[] = [];
  const server = await startChatServer({
    loadPolicy: () =>
      createMockPolicy(
        (context) => {
          seen.push(context);
          return script(context);
        },
        { id: "mock", tokenizer },
      ),
    model: "m",
    port: 0,
    log: () => {},
    ...options,
  });
  try {
    await run(server, seen);
  } finally {
    await server.close();
  }
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the response JSON is checked field by field below
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

const ask = (extra: Record<string, unknown> = {}) => ({
  model: "m",
  messages: [{ role: "user", content: question }],
  tools: [searchTool],
  ...extra,
});

test("a stateless request rebuilds the episode context of the text protocol", async () => {
  await withServer(
    () => "<answer> 4213 </answer>",
    async (server, seen) => {
      const { status, body } = await post(
        server.url,
        ask({
          messages: [
            { role: "system", content: "be brief" },
            { role: "user", content: question },
            {
              role: "assistant",
              content: null,
              tool_calls: [
                { id: "c1", type: "function", function: { name: "search", arguments: '{"query": "Zenda"}' } },
              ],
            },
            { role: "tool", tool_call_id: "c1", content: "Zenda: city. Population 4213.5" },
          ],
          max_tokens: 7,
          seed: 99,
        }),
      );
      assert.equal(status, 200);
      assert.equal(body.choices[0].message.content, "4213");
      assert.equal(body.choices[0].finish_reason, "stop");
      const [context] = seen;
      assert.equal(context.prompt.text, "<q> what is the population of zenda ? </q>");
      assert.deepEqual(context.prompt.tokenIds, tokenizer.encode(context.prompt.text));
      assert.equal(context.turns.length, 1);
      assert.equal(context.turns[0].text, " <search> zenda </search>");
      assert.deepEqual(context.turns[0].action, {
        type: "tool-call",
        tool: "search",
        arguments: { query: "zenda" },
      });
      assert.equal(context.turns[0].observation?.text, " <obs> zenda : city . population 4213.5 </obs>");
      assert.deepEqual(
        context.turns[0].observation?.tokenIds,
        tokenizer.encode(context.turns[0].observation!.text),
      );
      assert.deepEqual(
        context.tools.map((tool) => [tool.name, tool.textArgument]),
        [["search", "query"]],
      );
      assert.equal(context.task.systemPrompt, "be brief");
      assert.equal(context.seed, 99);
      assert.equal(context.maxTokens, 7);
    },
  );
});

test("the policy's turn becomes tool_calls, an answer, or plain content", async () => {
  const outputs: Record<string, ReturnType<Parameters<typeof createMockPolicy>[0]>> = {
    tool: "<search> zenda </search>",
    thought: "blah <search> zenda </search>",
    answer: " <answer> 4213 </answer>",
    garbage: "blah <search> x",
    cut: { text: "blah blah", finishReason: "length" },
  };
  let next = "tool";
  await withServer(
    () => outputs[next],
    async (server) => {
      next = "tool";
      let { body } = await post(server.url, ask());
      assert.equal(body.object, "chat.completion");
      assert.equal(body.model, "m");
      let choice = body.choices[0];
      assert.equal(choice.finish_reason, "tool_calls");
      assert.equal(choice.message.content, null);
      assert.equal(choice.message.tool_calls.length, 1);
      assert.match(choice.message.tool_calls[0].id, /^call_/);
      assert.deepEqual(choice.message.tool_calls[0].function, {
        name: "search",
        arguments: '{"query":"zenda"}',
      });

      next = "thought";
      choice = (await post(server.url, ask())).body.choices[0];
      assert.equal(choice.message.content, "blah");
      assert.equal(choice.finish_reason, "tool_calls");

      next = "answer";
      ({ body } = await post(server.url, ask()));
      assert.deepEqual(body.choices[0].message, { role: "assistant", content: "4213", refusal: null });
      assert.equal(body.choices[0].finish_reason, "stop");

      next = "garbage";
      choice = (await post(server.url, ask())).body.choices[0];
      assert.equal(choice.message.content, "blah <search> x");
      assert.equal(choice.finish_reason, "stop");

      next = "cut";
      choice = (await post(server.url, ask())).body.choices[0];
      assert.equal(choice.message.content, "blah blah");
      assert.equal(choice.finish_reason, "length");

      next = "tool";
      choice = (await post(server.url, ask({ tool_choice: "none" }))).body.choices[0];
      assert.equal(
        choice.message.content,
        "<search> zenda </search>",
        "no tools offered: a tag is plain text",
      );

      choice = (await post(server.url, ask({ stop: ["</search>"] }))).body.choices[0];
      assert.equal(choice.message.content, "<search> zenda", "a stop sequence cuts the turn before it");
      assert.equal(choice.finish_reason, "stop");
    },
  );
});

test("n samples: one batch of n contexts with distinct seeds; sample 0 keeps the request seed", async () => {
  let calls = 0;
  await withServer(
    (context) => `<answer> ${context.seed} </answer>`,
    async (server, seen) => {
      const { body } = await post(server.url, ask({ n: 4, seed: 5 }));
      calls = seen.length;
      const answers = body.choices.map((choice: { message: { content: string } }) => choice.message.content);
      assert.equal(answers.length, 4);
      assert.equal(answers[0], "5");
      assert.equal(new Set(answers).size, 4);
      assert.deepEqual(
        body.choices.map((choice: { index: number }) => choice.index),
        [0, 1, 2, 3],
      );
      const again = await post(server.url, ask({ n: 4, seed: 5 }));
      assert.deepEqual(again.body.choices, body.choices, "the same seed gives the same samples");
      assert.equal(server.stats.actCalls, 2, "each request's n samples went through one act call");
    },
  );
  assert.equal(calls, 4);
});

test("log-probs and token ids of the generated tokens, through the OpenAI policy too", async () => {
  const text = "<answer> 42 </answer>";
  const ids = tokenizer.encode(text);
  const logprobs = ids.map((_, i) => -0.1 * (i + 1));
  await withServer(
    () => ({ text, tokenIds: ids, logprobs }),
    async (server) => {
      const { body } = await post(server.url, ask({ logprobs: true, top_logprobs: 2 }));
      const choice = body.choices[0];
      assert.deepEqual(choice.token_ids, ids);
      assert.deepEqual(
        choice.logprobs.content.map((entry: { token: string }) => entry.token),
        ["<answer>", "4", "2", "</answer>"],
      );
      assert.deepEqual(
        choice.logprobs.content.map((entry: { logprob: number }) => entry.logprob),
        logprobs,
      );
      assert.deepEqual(choice.logprobs.content[0].top_logprobs, []);
      assert.ok(body.usage.prompt_tokens > 0 && body.usage.completion_tokens === ids.length);

      const asIds = (await post(server.url, ask({ logprobs: true, return_tokens_as_token_ids: true }))).body;
      assert.deepEqual(
        asIds.choices[0].logprobs.content.map((entry: { token: string }) => entry.token),
        ids.map((id) => `token_id:${id}`),
      );
      const plainBody = (await post(server.url, ask())).body;
      const plain = plainBody.choices[0];
      assert.equal(plain.logprobs, null);
      assert.equal(plain.token_ids, undefined);
      assert.equal(plainBody.prompt_token_ids, undefined);
      // vLLM's return_token_ids: the exact context ids too (the recording gateway merges turns on them).
      const withIds = (await post(server.url, ask({ return_token_ids: true }))).body;
      assert.deepEqual(withIds.prompt_token_ids, tokenizer.encode(renderPrompt(canonicalText(question))));
      assert.equal(withIds.usage.prompt_tokens, withIds.prompt_token_ids.length);

      const policy = createOpenAiPolicy({ baseURL: server.url, model: "m", logprobs: true });
      const context: PolicyContext = {
        episodeId: "e",
        task: { id: "t", question, answer: "42", family: "x" },
        prompt: { text: "", tokenIds: [] },
        turns: [],
        tools: [],
        seed: 1,
        maxTokens: 8,
      };
      const [step] = await policy.act([context]);
      assert.equal(step.text, "42");
      assert.deepEqual(step.tokenIds, ids);
      assert.deepEqual(step.logprobs, logprobs);
    },
  );
});

test("bad requests: 400 with an OpenAI-style error naming the field", async () => {
  await withServer(
    () => "<answer> 1 </answer>",
    async (server) => {
      const cases: [unknown, number, string | null][] = [
        [{ messages: [{ role: "user", content: "q" }] }, 400, "model"],
        [{ model: "m" }, 400, "messages"],
        [ask({ temperature: 5 }), 400, "temperature"],
        [ask({ top_p: 0 }), 400, "top_p"],
        [ask({ n: 0 }), 400, "n"],
        [ask({ n: 1000 }), 400, "n"],
        [ask({ max_tokens: 10_000_000 }), 400, "max_tokens"],
        [ask({ stop: ["a", "b", "c", "d", "e"] }), 400, "stop"],
        [ask({ tool_choice: "required" }), 400, "tool_choice"],
        [
          ask({
            messages: [
              { role: "user", content: "q" },
              { role: "wizard", content: "x" },
            ],
          }),
          400,
          "messages[1].role",
        ],
        [ask({ messages: [{ role: "user", content: 7 }] }), 400, "messages[0].content"],
        [ask({ tools: [{ type: "function", function: { name: "answer" } }] }), 400, "tools[0].function.name"],
        [
          ask({ tools: [{ type: "function", function: { name: "bad name" } }] }),
          400,
          "tools[0].function.name",
        ],
        [ask({ messages: [{ role: "system", content: "s" }] }), 400, "messages"],
        [
          ask({
            messages: [
              { role: "user", content: "q" },
              {
                role: "assistant",
                content: null,
                tool_calls: [{ id: "c1", type: "function", function: { name: "search", arguments: "{}" } }],
              },
              { role: "tool", tool_call_id: "c2", content: "x" },
            ],
          }),
          400,
          "messages[2].tool_call_id",
        ],
        [
          ask({
            messages: [
              { role: "user", content: "q" },
              {
                role: "assistant",
                content: null,
                tool_calls: [{ id: "c1", type: "function", function: { name: "search", arguments: "{}" } }],
              },
            ],
          }),
          400,
          "messages[1].tool_calls",
        ],
        [
          ask({
            messages: [
              { role: "user", content: "q" },
              { role: "assistant", content: "a" },
            ],
          }),
          400,
          "messages[1]",
        ],
        [ask({ model: "other" }), 404, "model"],
        ["{not json", 400, null],
        [[1, 2], 400, null],
      ];
      for (const [body, status, param] of cases) {
        const response = await post(server.url, body);
        const label = JSON.stringify(body).slice(0, 120);
        assert.equal(response.status, status, label);
        assert.equal(response.body.error.param, param, label);
        assert.equal(typeof response.body.error.message, "string");
        assert.equal(response.body.error.type, "invalid_request_error");
        if (param)
          assert.ok(
            response.body.error.message.startsWith(param) || status === 404,
            response.body.error.message,
          );
      }
      // The official client surfaces the same error.
      const client = new OpenAI({ baseURL: server.url, apiKey: "none", maxRetries: 0 });
      await assert.rejects(
        client.chat.completions.create({
          model: "m",
          messages: [{ role: "user", content: "q" }],
          temperature: 9,
        }),
        (error: unknown) => error instanceof BadRequestError && error.param === "temperature",
      );
      const huge = await fetch(`${server.url}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "x".repeat(2 << 20),
      });
      assert.equal(huge.status, 413);
      assert.equal((await fetch(`${server.url}/chat/completions`)).status, 405);
      assert.equal((await fetch(`${server.url}/nope`)).status, 404);
    },
  );
});

test("bearer token: 401 without it or with a wrong one, 200 with it", async () => {
  await withServer(
    () => "<answer> 1 </answer>",
    async (server) => {
      assert.equal((await fetch(`${server.url}/models`)).status, 401);
      const wrong = await post(server.url, ask(), { authorization: "Bearer nope" });
      assert.equal(wrong.status, 401);
      assert.equal(wrong.body.error.type, "authentication_error");
      assert.equal((await post(server.url, ask(), { authorization: "Bearer s3cret" })).status, 200);
      assert.equal((await fetch(server.url.replace("/v1", "/health"))).status, 200, "health needs no token");

      const good = new OpenAI({ baseURL: server.url, apiKey: "s3cret", maxRetries: 0 });
      const models = await good.models.list();
      assert.deepEqual(
        models.data.map((model) => model.id),
        ["m"],
      );
      const bad = new OpenAI({ baseURL: server.url, apiKey: "s3cre", maxRetries: 0 });
      await assert.rejects(bad.models.list(), AuthenticationError);

      const [step] = await createOpenAiPolicy({ baseURL: server.url, model: "m", apiKey: "wrong" }).act([
        {
          episodeId: "e",
          task: { id: "t", question: "q", answer: "1", family: "x" },
          prompt: { text: "", tokenIds: [] },
          turns: [],
          tools: [],
          seed: 1,
          maxTokens: 4,
        },
      ]);
      assert.equal(step.finishReason, "error");
      assert.match(step.error!, /HTTP 401.*\(1 attempt\)/);
    },
    { token: "s3cret" },
  );
});

/** A mock whose act calls wait until `open()`: requests pile up in the server's queue meanwhile. */
function gatedPolicy() {
  const policy = createMockPolicy((context) =>
    context.task.question.includes("boom")
      ? new Error("cannot")
      : `<answer> ${context.task.question.split(" ")[0]} </answer>`,
  );
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const act = policy.act.bind(policy);
  const state = { calls: 0 };
  policy.act = async (contexts) => {
    state.calls++;
    await gate;
    return act(contexts);
  };
  return { policy, open, state };
}

async function waitFor(condition: () => boolean, what: string) {
  const deadline = Date.now() + 5000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Sends `first`, waits until the policy holds it, then sends `words` while it is blocked. */
async function queuedBehindFirst(words: string[]) {
  const { policy, open, state } = gatedPolicy();
  const server = await startChatServer({ loadPolicy: () => policy, model: "m", port: 0, log: () => {} });
  const send = (word: string) =>
    post(server.url, { model: "m", messages: [{ role: "user", content: `${word} ?` }] });
  try {
    const first = send("first");
    await waitFor(() => state.calls > 0, "the first act call");
    const rest = words.map(send);
    await waitFor(() => server.stats.requests === words.length + 1, "every request");
    await new Promise((resolve) => setTimeout(resolve, 50)); // let the last bodies be parsed and queued
    open();
    return { first: await first, responses: await Promise.all(rest), calls: state.calls };
  } finally {
    await server.close();
  }
}

test("concurrent requests are batched into shared act calls, each answered with its own turn", async () => {
  const words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"];
  const { first, responses, calls } = await queuedBehindFirst(words);
  assert.equal(first.body.choices[0].message.content, "first");
  assert.deepEqual(
    responses.map((response) => response.body.choices[0].message.content),
    words,
  );
  assert.equal(calls, 2, "the 8 queued requests shared one act call");
});

test("a request whose batch fails is retried alone: only it gets the 500", async () => {
  const words = ["alpha", "beta", "boom", "gamma"];
  const { first, responses, calls } = await queuedBehindFirst(words);
  assert.equal(first.status, 200);
  assert.equal(calls, 6, "1 (first) + 1 failed batch of 4 + 4 alone");
  responses.forEach((response, i) => {
    if (words[i] === "boom") {
      assert.equal(response.status, 500);
      assert.equal(response.body.error.type, "server_error");
      assert.match(response.body.error.message, /cannot/);
    } else {
      assert.equal(response.status, 200);
      assert.equal(response.body.choices[0].message.content, words[i]);
    }
  });
});

test("streaming: the whole turn in one chunk, read by the official client", async () => {
  await withServer(
    () => "<search> zenda </search>",
    async (server) => {
      const client = new OpenAI({ baseURL: server.url, apiKey: "none", maxRetries: 0 });
      const stream = await client.chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: question }],
        tools: [searchTool as never],
        stream: true,
        stream_options: { include_usage: true },
      });
      const calls: string[] = [];
      let finish: string | null = null;
      let usage = false;
      for await (const chunk of stream) {
        if (chunk.usage) usage = true;
        for (const choice of chunk.choices) {
          for (const call of choice.delta.tool_calls ?? [])
            calls.push(`${call.function?.name}:${call.function?.arguments}`);
          finish = choice.finish_reason ?? finish;
        }
      }
      assert.deepEqual(calls, ['search:{"query":"zenda"}']);
      assert.equal(finish, "tool_calls");
      assert.ok(usage);
    },
  );
});

test("startup: refuses a non-loopback address without a token, and a chat-protocol policy", async () => {
  await assert.rejects(
    startChatServer({ loadPolicy: () => createMockPolicy(() => ""), model: "m", host: "0.0.0.0", port: 0 }),
    /refusing to listen on 0\.0\.0\.0 without a token/,
  );
  await assert.rejects(
    startChatServer({
      loadPolicy: () => createMockPolicy(() => "", { protocol: "chat" }),
      model: "m",
      port: 0,
    }),
    /needs a text-protocol policy/,
  );
});
