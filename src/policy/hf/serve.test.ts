/**
 * `agentrl serve` over an hf: policy (a transformers fixture with the stand-in text side): at
 * temperature 0 a chat completion returns transformers' greedy ids for the rendered prompt, with
 * vLLM's `prompt_token_ids`, `token_ids` and log-probs, and the policy's parsed tool calls as
 * OpenAI `tool_calls`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { startChatServer } from "../../serve/server.ts";
import { HfEngineModel } from "./engine.ts";
import { HfPolicy } from "./policy.ts";
import { chars, FIXTURES, readReference, standInTextSide } from "./testing-fixtures.ts";

test("serve --policy hf: greedy ids, prompt ids, log-probs and tool calls", async () => {
  const reference = readReference("qwen2.5");
  const model = HfEngineModel.load(join(FIXTURES, "qwen2.5"));
  const server = await startChatServer({
    loadPolicy: (sampling) => new HfPolicy(model, standInTextSide({ callTools: true }), sampling),
    model: "tiny",
    port: 0,
    log: () => {},
  });
  try {
    const response = await fetch(`${server.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "tiny",
        messages: [{ role: "user", content: chars(reference.prompt) }],
        tools: [{ type: "function", function: { name: "echo", parameters: { type: "object" } } }],
        temperature: 0,
        max_tokens: 64,
        logprobs: true,
        return_token_ids: true,
      }),
    });
    assert.equal(response.status, 200, await response.clone().text());
    const body = await response.json();
    const stop = reference.greedy.indexOf(2);
    const [choice] = body.choices;
    assert.deepEqual(body.prompt_token_ids, reference.prompt);
    assert.deepEqual(choice.token_ids, reference.greedy.slice(0, stop + 1));
    assert.equal(choice.logprobs.content.length, stop + 1);
    assert.ok(choice.logprobs.content.every((entry: { logprob: number }) => entry.logprob <= 0));
    assert.equal(choice.finish_reason, "tool_calls");
    assert.deepEqual(choice.message.tool_calls[0].function, {
      name: "echo",
      arguments: JSON.stringify({ text: chars(reference.greedy.slice(0, stop)) }),
    });
  } finally {
    await server.close();
    model.dispose();
  }
});
