import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { chatTemplateFrom, type HfChatMessage, loadChatTemplate, templateMessage } from "./chat-template.ts";
import { readTestdata, type TemplateFolderName, templateFolder } from "./testing-hf.ts";
import { loadHfTokenizer } from "./tokenizer.ts";

interface ChatCase {
  name: string;
  templates?: TemplateFolderName[];
  tools?: boolean;
  messages: HfChatMessage[];
  addGenerationPrompt: boolean;
  extra?: Record<string, unknown>;
}

const spec = await readTestdata<{ tools: unknown[]; cases: ChatCase[] }>("chat-cases.json");
const renders = await readTestdata<{
  renders: Record<TemplateFolderName, Record<string, { text: string; ids: number[] }>>;
}>("chat-renders.json");

for (const name of ["qwen3", "qwen3-jinja", "llama3.1"] as const) {
  test(`${name}: every case renders equal to transformers' apply_chat_template, text and ids`, async () => {
    const folder = await templateFolder(name);
    const template = await loadChatTemplate(folder);
    const tokenizer = await loadHfTokenizer(folder);
    const expected = renders.renders[name];
    const cases = spec.cases.filter((c) => c.templates === undefined || c.templates.includes(name));
    assert.deepEqual(cases.map((c) => c.name).sort(), Object.keys(expected).sort());
    for (const chatCase of cases) {
      const text = template.render(chatCase.messages, {
        tools: chatCase.tools ? spec.tools : undefined,
        addGenerationPrompt: chatCase.addGenerationPrompt,
        extra: chatCase.extra,
      });
      assert.equal(text, expected[chatCase.name]!.text, `${name} / ${chatCase.name}`);
      assert.deepEqual(
        tokenizer.encode(text),
        expected[chatCase.name]!.ids,
        `${name} / ${chatCase.name} ids`,
      );
    }
  });
}

test("chat_template.jinja wins over the tokenizer_config.json field, as in transformers 5", async () => {
  const folder = await templateFolder("llama3.1");
  const template = await loadChatTemplate(folder);
  assert.match(template.sources.join(), /Environment: ipython/);
});

test("Llama 3.1's raise_exception surfaces as an error with the template's message", async () => {
  const template = await loadChatTemplate(await templateFolder("llama3.1"));
  const call = (id: string) => ({ id, type: "function" as const, function: { name: "f", arguments: "{}" } });
  assert.throws(
    () =>
      template.render(
        [
          { role: "user", content: "x" },
          { role: "assistant", content: "", tool_calls: [call("a"), call("b")] },
        ],
        { addGenerationPrompt: false },
      ),
    /only supports single tool-calls/,
  );
});

test("a list of named templates: tool_use with tools, default without; no template is refused", async () => {
  const folder = await mkdtemp(join(tmpdir(), "agentrl-hf-tpl-"));
  await writeFile(
    join(folder, "tokenizer_config.json"),
    JSON.stringify({
      bos_token: { content: "<s>", lstrip: false },
      chat_template: [
        { name: "default", template: "{{ bos_token }}D{{ messages | length }}" },
        { name: "tool_use", template: "T{{ tools | length }}" },
      ],
    }),
  );
  const template = await loadChatTemplate(folder);
  const messages: HfChatMessage[] = [{ role: "user", content: "hi" }];
  assert.equal(template.render(messages, { addGenerationPrompt: true }), "<s>D1");
  assert.equal(template.render(messages, { addGenerationPrompt: true, tools: [{}, {}] }), "T2");
  const empty = await mkdtemp(join(tmpdir(), "agentrl-hf-tpl-"));
  await assert.rejects(loadChatTemplate(empty), /neither chat_template\.jinja nor a chat_template field/);
});

test("templateMessage parses JSON-object arguments and leaves any other string as it is", () => {
  const call = (args: string) => ({
    id: "c",
    type: "function" as const,
    function: { name: "f", arguments: args },
  });
  const message = templateMessage({
    role: "assistant",
    content: null,
    tool_calls: [call('{"a": 1}'), call("[1]"), call("{bad")],
  });
  const calls = message.tool_calls as { function: { arguments: unknown } }[];
  assert.deepEqual(
    calls.map((c) => c.function.arguments),
    [{ a: 1 }, "[1]", "{bad"],
  );
  assert.equal(message.content, null);
  assert.equal("name" in templateMessage({ role: "user", content: "x", name: undefined }), false);
  assert.equal(
    chatTemplateFrom({ default: "{{ extra_var }}" }).render([], {
      addGenerationPrompt: false,
      extra: { extra_var: 7 },
    }),
    "7",
  );
});

test("content parts: text parts joined with newlines, any other part refused by its type", () => {
  const parts = [
    { type: "text", text: "a" },
    { type: "text", text: "b" },
  ];
  assert.equal(templateMessage({ role: "user", content: parts }).content, "a\nb");
  assert.throws(
    () => templateMessage({ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }),
    /part of type "image_url"/,
  );
});
