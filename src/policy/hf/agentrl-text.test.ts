import assert from "node:assert/strict";
import { test } from "node:test";
import { AGENTRL_TEXT_TEMPLATE, labSpacing, parseAgentrlText } from "./agentrl-text.ts";
import { chatTemplateFrom } from "./chat-template.ts";
import { MALFORMED_CALL } from "./policy.ts";
import { parseToolCalls, stopIsText, toolCallFormatOfTemplate } from "./tool-calls.ts";

const TOOLS = [
  { name: "search", textArgument: "query" },
  { name: "calc", parameters: { type: "object", properties: { expression: {} }, required: ["expression"] } },
];
const id = (i: number) => `call_${i}`;

test("the lab's digit runs are glued back: transformers decodes `1 8 5 0` token by token", () => {
  assert.equal(labSpacing("<calc> 2 0 2 4 - 1 8 5 0 </calc>"), "<calc> 2024 - 1850 </calc>");
  assert.equal(labSpacing("  zenda\n: 7 x </obs>"), "zenda : 7 x </obs>");
});

test("a tool tag is one call with the tool's text argument; text before it is content", () => {
  assert.deepEqual(parseAgentrlText("<search> zenda </search>", TOOLS, id), {
    content: "",
    toolCalls: [
      { id: "call_0", type: "function", function: { name: "search", arguments: '{"query":"zenda"}' } },
    ],
    malformed: [],
  });
  // The argument comes from the schema when the tool has no text argument (a client's tool).
  const calc = parseAgentrlText("hmm <calc> 2 0 2 4 - 1 8 5 0 </calc>", TOOLS, id);
  assert.equal(calc.content, "hmm");
  assert.equal(calc.toolCalls[0]!.function.arguments, '{"expression":"2024 - 1850"}');
});

test("an answer pair is content (the chat loop reads the <answer> payload)", () => {
  assert.deepEqual(parseAgentrlText("<answer> 1 7 4 </answer>", TOOLS, id), {
    content: "<answer> 174 </answer>",
    toolCalls: [],
    malformed: [],
  });
});

test("what the lab rejects is malformed, with the lab's reason, whatever the text", () => {
  const reason = (text: string) => {
    const parsed = parseAgentrlText(text, TOOLS, id);
    assert.deepEqual([parsed.content, parsed.toolCalls], ["", []], text);
    return JSON.parse(parsed.malformed[0]!) as { text: string; error: string };
  };
  assert.deepEqual(reason("zenda"), { text: "zenda", error: "no action tag" });
  assert.equal(reason("<search> zenda </calc>").error, "mismatched tag");
  assert.equal(reason("<lookup> zenda </lookup>").error, "unknown tag");
  assert.equal(reason("<search> zenda").error, "unclosed tag");
  assert.equal(reason("<answer> </answer>").error, "empty action");
  for (const text of ["", "<", "</search>", "<think> x </think>", '{"name": 1}']) reason(text);
});

test("the template writes the lab's prompt text; the marker selects the format, whose stop tag is text", () => {
  assert.equal(toolCallFormatOfTemplate(AGENTRL_TEXT_TEMPLATE), "agentrl-text");
  assert.ok(stopIsText("agentrl-text") && !stopIsText("hermes"));
  const template = chatTemplateFrom({ default: AGENTRL_TEXT_TEMPLATE });
  const call = (name: string, args: string) => ({
    role: "assistant" as const,
    content: null,
    tool_calls: [{ id: "c", type: "function" as const, function: { name, arguments: args } }],
  });
  const rendered = template.render(
    [
      { role: "system", content: "ignored" },
      { role: "user", content: "how old is zenda ?" },
      call("search", '{"query":"zenda"}'),
      { role: "tool", tool_call_id: "c", content: "zenda : founded 1850 ." },
      call("malformed_tool_call", JSON.stringify({ text: "<calc> 1 </search>", error: "mismatched tag" })),
      { role: "tool", tool_call_id: "c", content: 'error : unknown tool "malformed_tool_call"' },
      { role: "assistant", content: "<answer> 174 </answer>" },
    ],
    { addGenerationPrompt: true, tools: [{ type: "function", function: { name: "search" } }] },
  );
  assert.equal(
    rendered,
    "<q> how old is zenda ? </q> <search> zenda </search> <obs> zenda : founded 1850 . </obs>" +
      " <calc> 1 </search> <obs> error : mismatched tag </obs> <answer> 174 </answer>",
  );
  // The name the policy records an unreadable call under is the one the template renders raw.
  assert.ok(AGENTRL_TEXT_TEMPLATE.includes(`call.name == "${MALFORMED_CALL}"`));
  // Through parseToolCalls, as the policy calls it.
  const parsed = parseToolCalls("<search> x </search>", "agentrl-text", { tools: TOOLS, callId: id });
  assert.equal(parsed.toolCalls[0]!.function.name, "search");
});
