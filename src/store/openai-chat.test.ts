import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { decodeJson, encodeJson } from "./json-codec.ts";
import {
  type ChatLine,
  chatLineTools,
  chatToTrajectory,
  questionOfPrompt,
  trajectoryMessages,
  trajectoryToChat,
} from "./openai-chat.ts";
import {
  chatTrajectory,
  formatErrorTrajectory,
  richTrajectory,
  TEST_TOOL_SPECS,
} from "./test-trajectories.ts";
import { arbitraryText, arbitraryTrajectory } from "./trajectory-arbitrary.ts";
import { assertTrajectory } from "./trajectory-schema.ts";

/** Through the text a JSONL file holds, and back. */
function throughText(line: ChatLine): unknown {
  return decodeJson(encodeJson(line));
}

test("a text-protocol episode maps onto OpenAI messages turn by turn", () => {
  const line = trajectoryToChat(richTrajectory(), TEST_TOOL_SPECS, { systemPrompt: "Use the tools." });
  const messages = line.messages;
  assert.deepStrictEqual(messages.slice(0, 4), [
    { role: "system", content: "Use the tools." },
    { role: "user", content: "how many years between the founding of zenda and of orvik ?" },
    {
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "call_0", type: "function", function: { name: "search", arguments: '{"query":"zenda"}' } },
      ],
    },
    { role: "tool", tool_call_id: "call_0", content: "zenda : city in ruritania . founded 1850 ." },
  ]);
  // 7 turns: six tool calls (assistant + tool) and the answer, after system and user.
  assert.equal(messages.length, 2 + 6 * 2 + 1);
  assert.deepStrictEqual(messages.at(-3), {
    role: "assistant",
    content: null,
    tool_calls: [
      {
        id: "call_5",
        type: "function",
        function: { name: "calc", arguments: '{"expression":"1910 - 1850"}' },
      },
    ],
  });
  assert.deepStrictEqual(messages.at(-1), { role: "assistant", content: "60" });
  assert.deepStrictEqual(line.tools[0], {
    type: "function",
    function: {
      name: "search",
      description: "Search the documents; returns the top matches.",
      parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
    },
  });
  assert.deepStrictEqual(line.agentrl?.textArguments, { search: "query", calc: "expression" });
});

test("format errors: the raw text, then the error observation as a user message", () => {
  const { messages } = trajectoryToChat(formatErrorTrajectory(), TEST_TOOL_SPECS);
  assert.deepStrictEqual(messages, [
    { role: "user", content: "what is the population of zenda ?" },
    { role: "assistant", content: " <search> zenda" },
    { role: "user", content: "format error : unclosed <search> tag" },
    { role: "assistant", content: " the answer is 4213" },
  ]);
});

test("chat episodes keep the assistant's text beside the call and the call's own id", () => {
  const { messages } = trajectoryToChat(chatTrajectory(), TEST_TOOL_SPECS);
  assert.deepStrictEqual(messages[1], {
    role: "assistant",
    content: "Let me look that up.",
    tool_calls: [
      {
        id: "call_abc123",
        type: "function",
        function: { name: "search", arguments: '{"query":"Zenda founder"}' },
      },
    ],
  });
  assert.deepStrictEqual(messages[2], {
    role: "tool",
    tool_call_id: "call_abc123",
    content: "zenda : founded by ilse vorn .",
  });
  assert.equal(questionOfPrompt("no tags here "), "no tags here");
});

test("lossless lines reproduce the trajectory exactly (every action, status, noise, null log-probs)", () => {
  for (const trajectory of [richTrajectory(), formatErrorTrajectory(), chatTrajectory()]) {
    for (const systemPrompt of [undefined, "sys"]) {
      const line = throughText(trajectoryToChat(trajectory, TEST_TOOL_SPECS, { systemPrompt }));
      assert.deepStrictEqual(chatToTrajectory(line), trajectory);
    }
  }
  const statuses = richTrajectory().turns.map((turn) => turn.toolResult?.status);
  assert.deepStrictEqual(statuses, ["ok", "timeout", "empty", "corrupted", "error", "ok", undefined]);
});

test("{ lossless: false } omits the agentrl key", () => {
  const line = trajectoryToChat(richTrajectory(), TEST_TOOL_SPECS, { lossless: false });
  assert.deepStrictEqual(Object.keys(line), ["messages", "tools"]);
});

test("an edited lossless line is refused instead of silently replaced by its record", () => {
  const line = throughText(trajectoryToChat(richTrajectory(), TEST_TOOL_SPECS)) as ChatLine;
  line.messages.at(-1)!.content = "61";
  assert.throws(() => chatToTrajectory(line), /do not match the agentrl record/);
  const { agentrl: _, ...plain } = line;
  assert.equal(chatToTrajectory(plain).finalAnswer, "61");
});

test("a broken agentrl record is rejected with the path of the problem", () => {
  const line = throughText(trajectoryToChat(richTrajectory(), TEST_TOOL_SPECS)) as ChatLine;
  (line.agentrl!.trajectory.turns[1].toolResult as { status: string }).status = "flaky";
  assert.throws(
    () => chatToTrajectory(line),
    /invalid agentrl\.trajectory[\s\S]*turns\[1\]\.toolResult\.status/,
  );
  line.agentrl!.version = 99;
  assert.throws(() => chatToTrajectory(line), /version 99 is newer/);
});

test("a plain OpenAI line from another tool imports as a valid unscored trajectory", () => {
  const plain = {
    messages: [
      { role: "system", content: "You are helpful." },
      { role: "user", content: [{ type: "text", text: "Population of Zenda?" }] },
      {
        role: "assistant",
        content: "Searching both.",
        tool_calls: [
          { id: "a", type: "function", function: { name: "search", arguments: '{"query":"zenda"}' } },
          { id: "b", type: "function", function: { name: "search", arguments: "{not json" } },
        ],
      },
      { role: "tool", tool_call_id: "a", content: "zenda : population 4213 ." },
      { role: "tool", tool_call_id: "b", content: "error" },
      { role: "assistant", content: "<answer>4213" },
      { role: "user", content: "Please answer plainly." },
      { role: "assistant", content: "4213", weight: 1 },
    ],
    tools: [
      {
        type: "function",
        function: {
          name: "search",
          parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
        },
      },
    ],
    parallel_tool_calls: false,
  };
  const trajectory = chatToTrajectory(plain);
  assertTrajectory(trajectory);
  assert.match(trajectory.id, /^openai-[0-9a-f]{16}$/);
  assert.equal(chatToTrajectory(plain).id, trajectory.id, "ids are stable across imports");
  assert.equal(trajectory.prompt.text, "<q> Population of Zenda? </q>");
  assert.deepStrictEqual(trajectory.prompt.tokenIds, []);
  assert.deepStrictEqual(
    trajectory.turns.map((turn) => [
      turn.text,
      turn.action.type,
      turn.toolResult?.status,
      turn.observation?.text,
    ]),
    [
      ["Searching both.", "tool-call", "ok", "zenda : population 4213 ."],
      ["", "format-error", undefined, "error"],
      ["<answer>4213", "format-error", undefined, "Please answer plainly."],
      ["4213", "answer", undefined, undefined],
    ],
  );
  assert.deepStrictEqual(trajectory.turns[0].action, {
    type: "tool-call",
    tool: "search",
    arguments: { query: "zenda" },
    callId: "a",
  });
  assert.match((trajectory.turns[1].action as { error: string }).error, /arguments of search are not JSON/);
  assert.ok(trajectory.turns.every((turn) => turn.tokenIds.length === 0 && turn.logprobs === null));
  assert.ok(trajectory.turns.every((turn) => Object.keys(turn.rewards).length === 0));
  assert.equal(trajectory.finalAnswer, "4213");
  assert.equal(trajectory.endReason, "answer");
  assert.equal(trajectory.correct, false);
  assert.equal(trajectory.outcomeReward, null);
  assert.deepStrictEqual(trajectory.info, { source: "openai-chat", systemPrompt: "You are helpful." });
  assert.deepStrictEqual(chatLineTools(plain), [
    {
      name: "search",
      description: "",
      parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
      textArgument: "query",
    },
  ]);
  const named = chatToTrajectory(plain, { id: "x", taskId: "t", family: "f", policyId: "p", seed: 5 });
  assert.deepStrictEqual(
    [named.id, named.taskId, named.family, named.policyId, named.seed],
    ["x", "t", "f", "p", 5],
  );
});

test("plain lines that are not one-question conversations are rejected with a reason", () => {
  assert.throws(() => chatToTrajectory({ messages: [{ role: "assistant", content: "hi" }] }), /user message/);
  assert.throws(() => chatToTrajectory({ messages: "nope" }), /not an OpenAI chat record/);
  assert.throws(
    () =>
      chatToTrajectory({
        messages: [
          { role: "user", content: "q" },
          { role: "tool", tool_call_id: "zz", content: "x" },
        ],
      }),
    /unknown tool_call_id "zz"/,
  );
  assert.throws(
    () =>
      chatToTrajectory({
        messages: [
          { role: "user", content: "q" },
          { role: "user", content: "again" },
        ],
      }),
    /unexpected user message/,
  );
});

test("property: lossless export then import is the identity", () => {
  fc.assert(
    fc.property(
      arbitraryTrajectory,
      fc.option(arbitraryText, { nil: undefined }),
      (original, systemPrompt) => {
        const line = throughText(trajectoryToChat(original, TEST_TOOL_SPECS, { systemPrompt }));
        assert.deepStrictEqual(chatToTrajectory(line), original);
      },
    ),
    { numRuns: 300, seed: 42 },
  );
});

test("property: a plain line imports to a valid trajectory with the same messages", () => {
  fc.assert(
    fc.property(
      arbitraryTrajectory,
      fc.option(arbitraryText, { nil: undefined }),
      (original, systemPrompt) => {
        const line = throughText(
          trajectoryToChat(original, TEST_TOOL_SPECS, { systemPrompt, lossless: false }),
        );
        const imported = assertTrajectory(chatToTrajectory(line));
        assert.deepStrictEqual(trajectoryMessages(imported, systemPrompt), (line as ChatLine).messages);
      },
    ),
    { numRuns: 300, seed: 43 },
  );
});
