/** Server-sent chunks, cut at arbitrary byte boundaries, assemble into the completion they stream. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseCompletion } from "./completion.ts";
import { StreamAssembler } from "./stream.ts";

const events = [
  {
    id: "x",
    model: "m",
    prompt_token_ids: [1, 2],
    choices: [
      {
        index: 0,
        delta: { role: "assistant", content: "the " },
        logprobs: { content: [{ logprob: -0.5 }] },
        token_ids: [7],
      },
    ],
  },
  {
    id: "x",
    choices: [
      {
        index: 0,
        delta: {
          tool_calls: [
            { index: 0, id: "c1", type: "function", function: { name: "search", arguments: '{"qu' } },
          ],
        },
        logprobs: { content: [{ logprob: -0.25 }] },
        token_ids: [8],
      },
    ],
  },
  {
    id: "x",
    choices: [
      {
        index: 0,
        delta: { tool_calls: [{ index: 0, function: { arguments: 'ery":"zenda"}' } }] },
        finish_reason: "tool_calls",
      },
    ],
  },
  { id: "x", choices: [], usage: { prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 } },
];
const text = `${events.map((event) => `data: ${JSON.stringify(event)}\n\n`).join("")}data: [DONE]\n\n`;

test("chunks split anywhere give the same completion, with ids and log-probs in order", () => {
  for (const size of [1, 7, 64, text.length]) {
    const assembler = new StreamAssembler();
    for (let i = 0; i < text.length; i += size) assembler.push(text.slice(i, i + size));
    assert.ok(assembler.done);
    assert.equal(assembler.error, null);
    const parsed = parseCompletion(assembler.completion());
    assert.ok(!("error" in parsed), JSON.stringify(parsed));
    assert.deepEqual(parsed.promptTokenIds, [1, 2]);
    assert.deepEqual(parsed.choices[0].tokenIds, [7, 8]);
    assert.deepEqual(parsed.choices[0].logprobs, [-0.5, -0.25]);
    assert.equal(parsed.choices[0].content, "the ");
    assert.deepEqual(parsed.choices[0].toolCalls, [
      { id: "c1", name: "search", arguments: '{"query":"zenda"}' },
    ]);
    assert.equal(parsed.usage?.total_tokens, 4);
  }
});

test("a chunk that is not JSON marks the stream malformed", () => {
  const assembler = new StreamAssembler();
  assembler.push("data: {oops\n\ndata: [DONE]\n\n");
  assert.match(assembler.error ?? "", /not JSON/);
});

test("parseCompletion rejects answers it cannot trust", () => {
  assert.ok("error" in parseCompletion({ choices: [] }));
  assert.ok("error" in parseCompletion("nope"));
  assert.ok("error" in parseCompletion({ choices: [{ message: { content: 3 } }] }));
  const mismatch = parseCompletion({
    choices: [{ message: { content: "a" }, token_ids: [1, 2], logprobs: { content: [{ logprob: -1 }] } }],
  });
  assert.ok("error" in mismatch && /2 token ids but 1 log-probs/.test(mismatch.error));
});
