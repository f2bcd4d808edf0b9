import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import fc from "fast-check";
import { type HfChatMessage, loadChatTemplate } from "./chat-template.ts";
import { readTestdata, templateFolder } from "./testing-hf.ts";
import {
  assistantMessageOf,
  parseToolCalls,
  splitJsonObjects,
  TOOL_CALL_FORMATS,
  toolCallFormatOf,
  toolCallFormatOfTemplate,
} from "./tool-calls.ts";

const ids = { callId: (i: number) => `call_${i}` };
const tools = (await readTestdata<{ tools: unknown[] }>("chat-cases.json")).tools;

test("hermes: content, two calls, arguments as compact JSON strings", () => {
  const text =
    'Let me look.\n<tool_call>\n{"name": "search", "arguments": {"query": "Zürich café"}}\n</tool_call>\n<tool_call>\n{"name": "calc", "arguments": {"expression": "1+1"}}\n</tool_call>';
  assert.deepEqual(parseToolCalls(text, "hermes", ids), {
    content: "Let me look.",
    toolCalls: [
      { id: "call_0", type: "function", function: { name: "search", arguments: '{"query":"Zürich café"}' } },
      { id: "call_1", type: "function", function: { name: "calc", arguments: '{"expression":"1+1"}' } },
    ],
    malformed: [],
  });
});

test("hermes: thinking is split off; text without calls is content as written", () => {
  const parsed = parseToolCalls("<think>\nHmm.\nYes.\n</think>\n\nParis.", "hermes", ids);
  assert.deepEqual(parsed, { content: "Paris.", reasoning: "Hmm.\nYes.", toolCalls: [], malformed: [] });
  assert.deepEqual(parseToolCalls("  plain  ", "hermes"), {
    content: "  plain  ",
    toolCalls: [],
    malformed: [],
  });
});

test("hermes: bad JSON, a missing name, array arguments and an open tag are malformed, kept in content", () => {
  const bad = '<tool_call>\n{"name": "search", "arguments": {"query": }\n</tool_call>';
  const noName = '<tool_call>{"arguments": {}}</tool_call>';
  const arrayArgs = '<tool_call>{"name": "f", "arguments": [1]}</tool_call>';
  const good = '<tool_call>{"name": "f", "arguments": {}}</tool_call>';
  const open = '<tool_call>\n{"name": "f", "argu';
  const parsed = parseToolCalls(`${bad}${noName}${arrayArgs}${good}${open}`, "hermes", ids);
  assert.deepEqual(parsed.malformed, [bad, noName, arrayArgs, open]);
  assert.deepEqual(
    parsed.toolCalls.map((c) => c.function),
    [{ name: "f", arguments: "{}" }],
  );
  assert.equal(parsed.content, `${bad}${noName}${arrayArgs}${open}`);
});

test("llama3-json: one call, `;`-joined calls, python_tag, an answer in JSON, broken JSON", () => {
  assert.deepEqual(parseToolCalls('{"name": "search", "parameters": {"query": "x"}}', "llama3-json", ids), {
    content: "",
    toolCalls: [{ id: "call_0", type: "function", function: { name: "search", arguments: '{"query":"x"}' } }],
    malformed: [],
  });
  const two = parseToolCalls(
    '<|python_tag|>{"name": "a", "parameters": {}}; {"name": "b", "arguments": {"k": "}"}}',
    "llama3-json",
    ids,
  );
  assert.deepEqual(
    two.toolCalls.map((c) => [c.id, c.function.name, c.function.arguments]),
    [
      ["call_0", "a", "{}"],
      ["call_1", "b", '{"k":"}"}'],
    ],
  );
  assert.deepEqual(parseToolCalls('{"answer": 42}', "llama3-json"), {
    content: '{"answer": 42}',
    toolCalls: [],
    malformed: [],
  });
  assert.deepEqual(parseToolCalls("The answer is 42.", "llama3-json"), {
    content: "The answer is 42.",
    toolCalls: [],
    malformed: [],
  });
  const broken = '{"name": "search", "parameters": {"query": "x"}';
  assert.deepEqual(parseToolCalls(broken, "llama3-json"), {
    content: broken,
    toolCalls: [],
    malformed: [broken],
  });
  const noArgs = '{"name": "search"}';
  assert.deepEqual(parseToolCalls(noArgs, "llama3-json").malformed, [noArgs]);
});

test("none: everything is content", () => {
  const text = '<tool_call>{"name": "f", "arguments": {}}</tool_call>';
  assert.deepEqual(parseToolCalls(text, "none"), { content: text, toolCalls: [], malformed: [] });
});

test("splitJsonObjects: braces inside strings and escaped quotes do not count", () => {
  assert.deepEqual(splitJsonObjects('{"a": "}\\""} ; {"b": [1, {"c": 2}]}'), [
    '{"a": "}\\""}',
    '{"b": [1, {"c": 2}]}',
  ]);
  assert.equal(splitJsonObjects('{"a": 1} {"b": 2}'), undefined);
  assert.equal(splitJsonObjects('{"a": 1'), undefined);
  assert.equal(splitJsonObjects("[1]"), undefined);
});

test("parsing never throws, whatever the text, in every format", () => {
  const pieces = fc.constantFrom(
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    "{",
    "}",
    '"',
    ";",
    '"name": "f"',
    "\n",
    "x",
    "<|python_tag|>",
    '"arguments": {}',
    "\\",
  );
  fc.assert(
    fc.property(
      fc.array(pieces, { maxLength: 30 }),
      fc.constantFrom(...TOOL_CALL_FORMATS),
      (parts, format) => {
        const parsed = parseToolCalls(parts.join(""), format);
        return typeof parsed.content === "string" && Array.isArray(parsed.malformed);
      },
    ),
    { numRuns: 500 },
  );
});

test("format detection: the templates decide, model_type settles a template with both markers", async () => {
  assert.equal(await toolCallFormatOf(await templateFolder("qwen3"), "qwen3"), "hermes");
  assert.equal(await toolCallFormatOf(await templateFolder("qwen3-jinja"), "qwen3"), "hermes");
  assert.equal(await toolCallFormatOf(await templateFolder("llama3.1"), "llama"), "llama3-json");
  assert.equal(toolCallFormatOfTemplate("{{ messages[0].content }}"), "none");
  assert.equal(await toolCallFormatOf(await mkdtemp(join(tmpdir(), "agentrl-hf-none-")), "llama"), "none");
  const both = '<tool_call> "parameters" ipython';
  assert.equal(toolCallFormatOfTemplate(both, "llama"), "llama3-json");
  assert.equal(toolCallFormatOfTemplate(both, "qwen3"), "hermes");
});

/** The prompt of `history`, then the sample as the assistant turn, rendered back. */
async function roundTrip(
  folder: string,
  history: HfChatMessage[],
  sample: string,
  end: string,
  format: "hermes" | "llama3-json",
) {
  const template = await loadChatTemplate(folder);
  const prompt = template.render(history, { tools, addGenerationPrompt: true });
  const parsed = parseToolCalls(sample, format, ids);
  assert.deepEqual(parsed.malformed, []);
  const rendered = template.render([...history, assistantMessageOf(parsed)], {
    tools,
    addGenerationPrompt: false,
  });
  return { prompt, rendered, expected: prompt + sample + end, parsed };
}

test("round trip, Qwen3: thinking + a call, parsed and rendered back, is the prompt + the sample", async () => {
  const folder = await templateFolder("qwen3");
  const history: HfChatMessage[] = [{ role: "user", content: "Find the capital." }];
  const sample =
    '<think>\nI should search.\n</think>\n\nSearching.\n<tool_call>\n{"name": "search", "arguments": {"query": "capital"}}\n</tool_call>';
  const { rendered, expected, parsed } = await roundTrip(folder, history, sample, "<|im_end|>\n", "hermes");
  assert.equal(parsed.reasoning, "I should search.");
  assert.equal(rendered, expected);
});

test("round trip, Llama 3.1: a JSON call, parsed and rendered back, is the prompt + the sample", async () => {
  const folder = await templateFolder("llama3.1");
  const history: HfChatMessage[] = [{ role: "user", content: "Find the capital." }];
  const sample = '{"name": "search", "parameters": {"query": "capital"}}';
  const { rendered, expected } = await roundTrip(folder, history, sample, "<|eot_id|>", "llama3-json");
  assert.equal(rendered, expected);
});

test("round trip breaks where the template is not faithful: compact JSON comes back spaced", async () => {
  const folder = await templateFolder("qwen3");
  const sample = '<tool_call>\n{"name":"search","arguments":{"query":"capital"}}\n</tool_call>';
  const { rendered, expected } = await roundTrip(
    folder,
    [{ role: "user", content: "q" }],
    sample,
    "<|im_end|>\n",
    "hermes",
  );
  assert.notEqual(rendered, expected);
  assert.ok(rendered.includes('{"name": "search", "arguments": {"query": "capital"}}'));
});
