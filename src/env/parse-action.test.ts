import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { createCalcTool } from "../tools/calc.ts";
import { FORMAT_ERRORS, TOOL_MESSAGE_WORDS } from "../tools/messages.ts";
import { createSearchTool } from "../tools/search.ts";
import type { ChatToolCall } from "../types/policy.ts";
import type { Action } from "../types/trajectory.ts";
import { extractChatAnswer, MAX_PAYLOAD_LENGTH, parseChatAction, parseTextAction } from "./parse-action.ts";
import { PROTOCOL_TOKENS, renderAnswer, renderToolCall } from "./protocol.ts";

const TOOLS = [createSearchTool([{ id: "c1", title: "zenda", text: "zenda : city ." }]), createCalcTool()];
const NAMES = TOOLS.map((tool) => tool.name);
const parse = (text: string) => parseTextAction(text, TOOLS);

/** The invariants every parsed action must satisfy. */
function assertValidAction(action: Action) {
  switch (action.type) {
    case "tool-call": {
      const tool = TOOLS.find((candidate) => candidate.name === action.tool);
      assert.ok(tool, `unknown tool ${action.tool}`);
      assert.equal(typeof action.arguments, "object");
      assert.notEqual(action.arguments, null);
      break;
    }
    case "answer":
      assert.equal(typeof action.answer, "string");
      assert.ok(action.answer.trim().length > 0);
      break;
    case "format-error":
      assert.equal(typeof action.error, "string");
      assert.ok(action.error.length > 0 && action.error.length <= 300);
      break;
    default:
      assert.fail(`not an action: ${JSON.stringify(action)}`);
  }
}

const textErrors = new Set<string>(Object.values(FORMAT_ERRORS));

test("text: tool calls and answers", () => {
  assert.deepEqual(parse(" <search> zenda </search>"), {
    type: "tool-call",
    tool: "search",
    arguments: { query: "zenda" },
  });
  assert.deepEqual(parse("<calc>1991 - 1850</calc>"), {
    type: "tool-call",
    tool: "calc",
    arguments: { expression: "1991 - 1850" },
  });
  assert.deepEqual(parse(" <answer> 4213 </answer>"), { type: "answer", answer: "4213" });
  // Free text before the first tag; anything after the first pair is ignored.
  assert.deepEqual(parse("i need the capital first <search> ruritania </search> <answer> 1 </answer>"), {
    type: "tool-call",
    tool: "search",
    arguments: { query: "ruritania" },
  });
  assert.deepEqual(parse("<calc> 3 < 4 </calc>"), {
    type: "tool-call",
    tool: "calc",
    arguments: { expression: "3 < 4" },
  });
  assert.deepEqual(parse("<answer>\n multi\nline </answer>"), { type: "answer", answer: "multi\nline" });
});

test("text: format errors with canonical reasons", () => {
  const cases: [string, string][] = [
    ["", FORMAT_ERRORS.missingAction],
    ["the answer is 4213", FORMAT_ERRORS.missingAction],
    ["search zenda", FORMAT_ERRORS.missingAction],
    ["< search > zenda </ search >", FORMAT_ERRORS.missingAction],
    [" <search> zenda", FORMAT_ERRORS.unclosedTag],
    [" <search> zenda </calc>", FORMAT_ERRORS.mismatchedTag],
    [" </search> zenda", FORMAT_ERRORS.mismatchedTag],
    [" <lookup> zenda </lookup>", FORMAT_ERRORS.unknownTag],
    [" <obs> zenda </obs>", FORMAT_ERRORS.unknownTag],
    [" <Search> zenda </Search>", FORMAT_ERRORS.unknownTag],
    [" <search> <calc> 1 </calc> </search>", FORMAT_ERRORS.nestedTag],
    [" <search> <search> zenda </search>", FORMAT_ERRORS.nestedTag],
    [" <search>   </search>", FORMAT_ERRORS.emptyAction],
    [" <answer></answer>", FORMAT_ERRORS.emptyAction],
    [` <search> ${"zenda ".repeat(200)}</search>`, FORMAT_ERRORS.actionTooLong],
  ];
  for (const [text, error] of cases) assert.deepEqual(parse(text), { type: "format-error", error }, text);
  assert.deepEqual(parseTextAction(" <search> zenda zenda </search>", TOOLS, { maxPayloadLength: 5 }), {
    type: "format-error",
    error: FORMAT_ERRORS.actionTooLong,
  });
  // Reasons are canonical words the embedded tokenizer knows.
  for (const reason of textErrors)
    for (const word of reason.split(" ")) assert.ok(TOOL_MESSAGE_WORDS.includes(word));
});

test("text: a tool named in the list but absent from the protocol tags still parses", () => {
  const tools = [{ name: "web_search", textArgument: "q" }];
  assert.deepEqual(parseTextAction("<web_search> x </web_search>", tools), {
    type: "tool-call",
    tool: "web_search",
    arguments: { q: "x" },
  });
});

// Fragments that make protocol-shaped noise: tags, partial tags, payload words, unicode, blanks.
const fragment = fc.oneof(
  fc.constantFrom(
    ...PROTOCOL_TOKENS,
    "<search",
    "search>",
    "</",
    "<",
    ">",
    "/",
    "<answer >",
    "<think>",
    "</think>",
  ),
  fc.constantFrom(" ", "  ", "\n", "\t", "zenda", "1991", "-", ":", ".", "é", "💥", "\u0000", "\u202e"),
  fc.string({ unit: "binary", maxLength: 8 }),
);
const protocolSoup = fc.array(fragment, { maxLength: 40 }).map((parts) => parts.join(""));

test("property: the text parser never throws and always returns a valid action", () => {
  fc.assert(
    fc.property(fc.oneof(fc.string({ unit: "binary", maxLength: 300 }), protocolSoup), (text) => {
      const action = parse(text);
      assertValidAction(action);
      if (action.type === "format-error") assert.ok(textErrors.has(action.error), action.error);
    }),
    { numRuns: 3000, seed: 1 },
  );
});

test("huge and hostile inputs stay fast", () => {
  const inputs = [
    "x".repeat(2_000_000),
    "<search>".repeat(200_000),
    "<".repeat(1_000_000),
    `<search> ${"a".repeat(1_000_000)} </search>`,
    `<a${"b".repeat(1_000_000)}`,
  ];
  const start = performance.now();
  for (const text of inputs) assertValidAction(parse(text));
  for (const text of inputs) assertValidAction(parseChatAction({ text }, TOOLS));
  assertValidAction(parseChatAction({ text: `\\boxed{${"{".repeat(500_000)}` }, TOOLS));
  assertValidAction(parseChatAction({ text: "<think>".repeat(200_000) }, TOOLS));
  assertValidAction(parseChatAction({ text: "\n**".repeat(200_000) }, TOOLS));
  const elapsed = performance.now() - start;
  assert.ok(elapsed < 3000, `${elapsed} ms`);
});

// A payload as a policy writes it: no tag inside, not blank, within the length limit.
const payload = fc
  .string({ unit: "grapheme", minLength: 1, maxLength: 80 })
  .map((text) => text.trim())
  .filter(
    (text) => text.length > 0 && text.length <= MAX_PAYLOAD_LENGTH && !/<\/?[A-Za-z_][\w.-]*>/.test(text),
  );
const thinking = fc.string({ maxLength: 40 }).filter((text) => !/<\/?[A-Za-z_][\w.-]*>/.test(text));

test("property: rendered tool calls and answers round-trip", () => {
  fc.assert(
    fc.property(fc.constantFrom(...TOOLS), payload, thinking, (tool, text, prefix) => {
      assert.deepEqual(parse(prefix + renderToolCall(tool.name, text)), {
        type: "tool-call",
        tool: tool.name,
        arguments: { [tool.textArgument]: text },
      });
      assert.deepEqual(parse(prefix + renderAnswer(text)), { type: "answer", answer: text });
    }),
    { numRuns: 1000, seed: 2 },
  );
});

test("chat: tool calls validated against the tool's schema", () => {
  const call = (name: string, args: string, id = "call_1"): ChatToolCall => ({ id, name, arguments: args });
  assert.deepEqual(parseChatAction({ text: "", toolCalls: [call("search", '{"query":"zenda"}')] }, TOOLS), {
    type: "tool-call",
    tool: "search",
    arguments: { query: "zenda" },
    callId: "call_1",
  });
  // Unknown keys are stripped; only the first call is taken.
  assert.deepEqual(
    parseChatAction(
      {
        text: "",
        toolCalls: [call("calc", '{"expression":"1+1","why":"x"}', "a"), call("search", '{"query":"b"}')],
      },
      TOOLS,
    ),
    { type: "tool-call", tool: "calc", arguments: { expression: "1+1" }, callId: "a" },
  );
  const errors: [ChatToolCall, RegExp][] = [
    [call("lookup", "{}"), /unknown tool "lookup" \(available: search, calc\)/],
    [call("search", "{query: zenda}"), /arguments of search are not valid JSON/],
    [call("search", '["zenda"]'), /must be a JSON object/],
    [call("search", "null"), /must be a JSON object/],
    [call("search", '"zenda"'), /must be a JSON object/],
    [call("search", ""), /invalid arguments for search: query: /],
    [call("search", '{"query": 3}'), /invalid arguments for search: query: /],
  ];
  for (const [toolCall, pattern] of errors) {
    const action = parseChatAction({ text: "", toolCalls: [toolCall] }, TOOLS);
    assert.equal(action.type, "format-error");
    assert.match((action as { error: string }).error, pattern);
  }
});

test("chat: the message text is the answer", () => {
  const answer = (text: string) => parseChatAction({ text, toolCalls: [] }, TOOLS);
  assert.deepEqual(answer(" 4213 "), { type: "answer", answer: "4213" });
  assert.deepEqual(answer("so the result is \\boxed{4213}."), { type: "answer", answer: "4213" });
  assert.deepEqual(answer("\\boxed{1} then \\boxed{\\frac{1}{2}}"), {
    type: "answer",
    answer: "\\frac{1}{2}",
  });
  assert.deepEqual(answer("Answer: 4213"), { type: "answer", answer: "4213" });
  assert.deepEqual(answer("The city is old.\nFinal answer: zenda"), { type: "answer", answer: "zenda" });
  assert.deepEqual(answer("Reasoning...\n**Answer:** 52"), { type: "answer", answer: "52" });
  assert.deepEqual(answer("<think>answer: 1</think>\n<answer> 2 </answer>"), { type: "answer", answer: "2" });
  assert.deepEqual(answer("the answer: is a phrase mid-line"), {
    type: "answer",
    answer: "the answer: is a phrase mid-line",
  });
  assert.deepEqual(answer("hmm, thinking </think> 7"), { type: "answer", answer: "7" });
  assert.equal(answer("   ").type, "format-error");
  assert.equal(answer("<think> still thinking").type, "format-error");
  assert.equal(extractChatAnswer("\\boxed{unbalanced"), "\\boxed{unbalanced");
});

const chatCall: fc.Arbitrary<ChatToolCall> = fc.record({
  id: fc.string({ maxLength: 5 }),
  name: fc.oneof(fc.constantFrom(...NAMES), fc.string({ maxLength: 8 })),
  arguments: fc.oneof(
    fc.string({ unit: "binary", maxLength: 40 }),
    fc.json(),
    fc.record({ query: fc.anything() }).map((value) => JSON.stringify(value) ?? ""),
    fc.record({ expression: fc.string() }).map((value) => JSON.stringify(value)),
  ),
});

test("property: the chat parser never throws and always returns a valid action", () => {
  fc.assert(
    fc.property(
      fc.oneof(fc.string({ unit: "binary", maxLength: 200 }), protocolSoup),
      fc.option(fc.array(chatCall, { maxLength: 3 }), { nil: undefined }),
      (text, toolCalls) => {
        const action = parseChatAction({ text, toolCalls }, TOOLS);
        assertValidAction(action);
        if (action.type === "tool-call") {
          const tool = TOOLS.find((candidate) => candidate.name === action.tool)!;
          assert.equal(tool.schema.safeParse(action.arguments).success, true);
        }
      },
    ),
    { numRuns: 2000, seed: 3 },
  );
});
