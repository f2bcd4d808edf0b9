import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { createWordTokenizer } from "../policy/embedded/tokenizer.ts";
import { truncateAtStop } from "./completion.ts";
import { canonicalContent, episodeFromMessages, inferTextArgument, toolSpecsFromRequest } from "./context.ts";
import { type ChatRequest, chatRequestSchema, formatPath, RequestError } from "./request.ts";

test("canonicalContent: canonical protocol text, decimal numbers kept whole", () => {
  assert.equal(
    canonicalContent("Zenda: City in Ruritania. Population 4213."),
    "zenda : city in ruritania . population 4213 .",
  );
  assert.equal(canonicalContent("ratio 2.5, then .5 and 3."), "ratio 2.5 , then . 5 and 3 .");
  assert.equal(canonicalContent("  (1 + 2)  "), "( 1 + 2 )");
  // Idempotent on what it produces.
  const once = canonicalContent("What's up? A.B 1.2.3");
  assert.equal(canonicalContent(once), once);
});

test("inferTextArgument: the argument a tag carries", () => {
  assert.equal(inferTextArgument({ type: "object", properties: { query: { type: "string" } } }), "query");
  assert.equal(
    inferTextArgument({
      type: "object",
      properties: { limit: { type: "integer" }, where: { type: "string" }, text: { type: "string" } },
      required: ["limit", "text"],
    }),
    "text",
  );
  assert.equal(
    inferTextArgument({ type: "object", properties: { n: { type: "integer" }, s: { type: "string" } } }),
    "s",
  );
  assert.equal(inferTextArgument({ type: "object" }), "input");
  assert.equal(inferTextArgument(undefined), "input");
});

test("episodeFromMessages: history with extra calls, user follow-ups and a format error returned as content", () => {
  const tools = toolSpecsFromRequest([
    {
      type: "function",
      function: { name: "search", parameters: { type: "object", properties: { query: { type: "string" } } } },
    },
    {
      type: "function",
      function: {
        name: "calc",
        parameters: { type: "object", properties: { expression: { type: "string" } } },
      },
    },
  ]);
  const episode = episodeFromMessages(
    [
      { role: "developer", content: "use tools" },
      { role: "user", content: [{ type: "text", text: "Sum of A" }] },
      { role: "user", content: "and B?" },
      {
        role: "assistant",
        content: "Looking",
        tool_calls: [
          { id: "1", type: "function", function: { name: "search", arguments: '{"query":"A"}' } },
          { id: "2", type: "function", function: { name: "search", arguments: '{"query":"B"}' } },
        ],
      },
      { role: "tool", tool_call_id: "2", content: "ignored" },
      { role: "tool", tool_call_id: "1", content: "A: 2.5" },
      { role: "assistant", content: "<calc> 2.5 + 1" },
      { role: "user", content: "error : unclosed tag" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "3", type: "function", function: { name: "calc", arguments: "not json" } }],
      },
      { role: "tool", tool_call_id: "3", content: "error : invalid expression" },
      { role: "assistant", content: "7" },
      { role: "user", content: "are you sure?" },
    ],
    tools,
  );
  assert.deepEqual(episode, {
    question: "sum of a and b ?",
    systemPrompt: "use tools",
    turns: [
      { text: " looking <search> a </search>", observation: "a : 2.5" },
      { text: " <calc> 2.5 + 1", observation: "error : unclosed tag" },
      { text: " <calc> not json </calc>", observation: "error : invalid expression" },
      { text: " <answer> 7 </answer>", observation: "are you sure ?" },
    ],
  });
});

test("episodeFromMessages: any schema-valid conversation maps or fails with a 400 RequestError, never anything else", () => {
  const text = fc.oneof(
    fc.string({ maxLength: 12 }),
    fc.constantFrom("<search> x </search>", "<answer>", "{}", '{"query":"q"}'),
  );
  const id = fc.constantFrom("a", "b", "c");
  const message = fc.oneof(
    fc.record({ role: fc.constant("user" as const), content: text }),
    fc.record({ role: fc.constant("system" as const), content: text }),
    fc.record({ role: fc.constant("tool" as const), content: text, tool_call_id: id }),
    fc.record({
      role: fc.constant("assistant" as const),
      content: fc.option(text),
      tool_calls: fc.option(
        fc.array(
          fc.record({
            id,
            type: fc.constant("function" as const),
            function: fc.record({ name: fc.constantFrom("search", "calc", "other"), arguments: text }),
          }),
          { maxLength: 2 },
        ),
      ),
    }),
  );
  const tools = toolSpecsFromRequest([
    {
      type: "function",
      function: { name: "search", parameters: { type: "object", properties: { query: { type: "string" } } } },
    },
  ]);
  fc.assert(
    fc.property(fc.array(message, { minLength: 1, maxLength: 8 }), (messages) => {
      const parsed = chatRequestSchema.safeParse({ model: "m", messages });
      if (!parsed.success) return;
      try {
        const episode = episodeFromMessages(parsed.data.messages as ChatRequest["messages"], tools);
        assert.equal(typeof episode.question, "string");
      } catch (error) {
        assert.ok(error instanceof RequestError, String(error));
        assert.equal(error.status, 400);
        assert.match(error.param ?? "", /^messages/);
      }
    }),
    { numRuns: 300, seed: 7 },
  );
});

test("truncateAtStop: text cut before the stop, tokens cut to those decoded before it", () => {
  const tokenizer = createWordTokenizer(["zenda", "hello"]);
  const text = "<search> zenda </search> hello";
  const ids = tokenizer.encode(text);
  const cut = truncateAtStop(
    { text, tokenIds: ids, logprobs: [-1, -2, -3, -4], finishReason: "stop" },
    ["</search>", "zzz"],
    tokenizer,
  );
  assert.equal(cut.stopped, true);
  assert.equal(cut.text, "<search> zenda ");
  assert.deepEqual(cut.tokenIds, ids.slice(0, 2));
  assert.deepEqual(cut.logprobs, [-1, -2]);
  const untouched = truncateAtStop(
    { text, tokenIds: ids, logprobs: null, finishReason: "length" },
    ["nope"],
    tokenizer,
  );
  assert.equal(untouched.stopped, false);
  assert.equal(untouched.finishReason, "length");
  assert.deepEqual(untouched.tokenIds, ids);
});

test("formatPath", () => {
  assert.equal(formatPath(["messages", 2, "tool_call_id"]), "messages[2].tool_call_id");
  assert.equal(formatPath(["tools", 0, "function", "name"]), "tools[0].function.name");
  assert.equal(formatPath([]), "");
});
