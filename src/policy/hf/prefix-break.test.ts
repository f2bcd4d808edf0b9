import assert from "node:assert/strict";
import { test } from "node:test";
import type { HfChatMessage } from "./chat-template.ts";
import { loadChatTemplate } from "./chat-template.ts";
import { comparePrefix, conversationPrefixBreaks } from "./prefix-break.ts";
import { cachedTokenizer, readTestdata, type TemplateFolderName, templateFolder } from "./testing-hf.ts";
import { assistantMessageOf, parseToolCalls, type ToolCallFormat } from "./tool-calls.ts";

test("comparePrefix: extends, breaks in the prompt, in the sampled ids, or stops short", () => {
  // prompt [1 2 3], sampled [4 5]: expected context [1 2 3 4 5].
  assert.deepEqual(comparePrefix([1, 2, 3], [4, 5], [1, 2, 3, 4, 5, 6]), {
    extends: true,
    breakAt: null,
    site: null,
    lostTokens: 0,
  });
  assert.deepEqual(comparePrefix([1, 2, 3], [4, 5], [1, 9, 3, 4, 5, 6]), {
    extends: false,
    breakAt: 1,
    site: "prompt",
    lostTokens: 4,
  });
  assert.deepEqual(comparePrefix([1, 2, 3], [4, 5], [1, 2, 3, 4, 7]), {
    extends: false,
    breakAt: 4,
    site: "sampled",
    lostTokens: 1,
  });
  assert.deepEqual(comparePrefix([1, 2, 3], [4, 5], [1, 2, 3]), {
    extends: false,
    breakAt: 3,
    site: "short",
    lostTokens: 2,
  });
  assert.deepEqual(comparePrefix([], [], [7]), { extends: true, breakAt: null, site: null, lostTokens: 0 });
});

// Read on first use, not by a top-level await: a test registered after one is unknown to the runner
// when the tests before it finish, and `--test-force-exit` would end the file without running it.
let tools: Promise<unknown[]> | undefined;
const chatTools = () => {
  tools ??= readTestdata<{ tools: unknown[] }>("chat-cases.json").then((cases) => cases.tools);
  return tools;
};

/** Messages and sampled texts of an episode: each sample (stop token included) parsed into its message. */
function episode(steps: (HfChatMessage | string)[], stop: string, format: ToolCallFormat) {
  const messages: HfChatMessage[] = [];
  const sampled: string[] = [];
  for (const step of steps) {
    if (typeof step !== "string") {
      messages.push(step);
      continue;
    }
    sampled.push(step + stop);
    const parsed = parseToolCalls(step, format, { callId: (i) => `call_${sampled.length}_${i}` });
    messages.push(assistantMessageOf(parsed));
  }
  return { messages, sampled };
}

async function replay(
  name: TemplateFolderName,
  steps: (HfChatMessage | string)[],
  stop: string,
  format: ToolCallFormat,
  extra?: Record<string, unknown>,
) {
  const folder = await templateFolder(name);
  const { messages, sampled } = episode(steps, stop, format);
  return conversationPrefixBreaks(
    await loadChatTemplate(folder),
    await cachedTokenizer(folder),
    messages,
    sampled,
    { tools: await chatTools(), extra },
  );
}

test("Qwen3: thinking kept through tool steps, dropped once a new user message comes: the prefix breaks there", async () => {
  const result = await replay(
    "qwen3",
    [
      { role: "user", content: "Capital of Vushiland?" },
      '<think>\nSearch first.\n</think>\n\n<tool_call>\n{"name": "search", "arguments": {"query": "Vushiland capital"}}\n</tool_call>',
      { role: "tool", tool_call_id: "call_1_0", content: "Its capital is Ordo." },
      "<think>\nThe document says Ordo.\n</think>\n\nOrdo.",
      { role: "user", content: "Thanks!" },
      "<think>\nNothing to do.\n</think>\n\nYou're welcome.",
    ],
    "<|im_end|>",
    "hermes",
  );
  assert.equal(result.transitions, 2);
  assert.equal(result.breaks, 1);
  assert.equal(result.checks[0]!.extends, true);
  // The first assistant turn's <think> block, in the earlier prompt, is gone from the next one.
  assert.equal(result.checks[1]!.site, "prompt");
  assert.ok(result.checks[1]!.lostTokens > 20);
});

test("Qwen3 with enable_thinking false: each generation prompt's empty think block is dropped on re-render", async () => {
  const steps: (HfChatMessage | string)[] = [
    { role: "user", content: "Capital of Vushiland?" },
    '<tool_call>\n{"name": "search", "arguments": {"query": "Vushiland capital"}}\n</tool_call>',
    { role: "tool", tool_call_id: "call_1_0", content: "Its capital is Ordo." },
    "Ordo.",
    { role: "user", content: "Thanks!" },
    "You're welcome.",
  ];
  const off = await replay("qwen3", steps, "<|im_end|>", "hermes", { enable_thinking: false });
  assert.deepEqual(
    off.checks.map((check) => check.site),
    ["prompt", "prompt"],
  );
  // The same samples with thinking on (no think written at all): nothing to drop, every turn extends.
  const on = await replay("qwen3", steps, "<|im_end|>", "hermes");
  assert.equal(on.breaks, 0);
});

test("Qwen3: a compact tool call is re-rendered spaced, a break inside the sampled ids", async () => {
  const result = await replay(
    "qwen3-jinja",
    [
      { role: "user", content: "Find it." },
      '<tool_call>\n{"name":"search","arguments":{"query":"it"}}\n</tool_call>',
      { role: "tool", tool_call_id: "call_1_0", content: "found" },
      "Found.",
    ],
    "<|im_end|>",
    "hermes",
  );
  assert.deepEqual(
    result.checks.map((check) => check.site),
    ["sampled"],
  );
});

test("Llama 3.1: a JSON tool call as the template writes it extends the prefix", async () => {
  const result = await replay(
    "llama3.1",
    [
      { role: "user", content: "Capital of Vushiland?" },
      '{"name": "search", "parameters": {"query": "Vushiland capital"}}',
      { role: "tool", tool_call_id: "call_1_0", content: "Its capital is Ordo." },
      "Ordo.",
      { role: "user", content: "Thanks!" },
    ],
    "<|eot_id|>",
    "llama3-json",
  );
  assert.deepEqual(result, { transitions: 2, breaks: 0, checks: result.checks });
  assert.ok(result.checks.every((check) => check.extends));
});

test("the count of sampled texts must match the assistant messages", async () => {
  const folder = await templateFolder("qwen3");
  const template = await loadChatTemplate(folder);
  const tokenizer = await cachedTokenizer(folder);
  assert.throws(
    () => conversationPrefixBreaks(template, tokenizer, [{ role: "assistant", content: "x" }], []),
    /1 assistant messages but 0 sampled texts/,
  );
});
