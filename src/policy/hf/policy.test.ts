/**
 * The hf policy's plumbing on a transformers fixture, with a stand-in text side (each token id is
 * one character, the template renders the conversation's user and tool messages): the sampled ids
 * at temperature 0 are transformers' greedy continuation of the same ids, up to the first
 * end-of-sequence id; a second turn that extends the held ids feeds only the new ones, one that
 * does not is counted as a prefix break. The real text side is tested in its own files.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { parseChatAction } from "../../env/parse-action.ts";
import type { PolicyContext } from "../../types/policy.ts";
import type { Turn } from "../../types/trajectory.ts";
import { HfEngineModel } from "./engine.ts";
import { HfPolicy, MALFORMED_CALL } from "./policy.ts";
import { chars, FIXTURES, readReference, standInTextSide as standIn } from "./testing-fixtures.ts";

function context(question: string, turns: Turn[] = []): PolicyContext {
  return {
    episodeId: "e1",
    task: { id: "t", question, answer: "", family: "chat" },
    prompt: { text: question, tokenIds: [] },
    turns,
    tools: [],
    seed: 1,
    maxTokens: 64,
    sampling: { temperature: 0, topP: 1 },
  };
}

test("greedy turns equal transformers' continuation; prefix breaks are counted", async () => {
  const reference = readReference("qwen2.5"); // its greedy continuation holds the eos id 2
  const model = HfEngineModel.load(join(FIXTURES, "qwen2.5"));
  const policy = new HfPolicy(model, standIn(), { capacity: 2 });
  try {
    const [step] = await policy.act([context(chars(reference.prompt))]);
    const stop = reference.greedy.indexOf(2);
    assert.ok(stop > 0, "the fixture's continuation reaches an end-of-sequence id");
    assert.deepEqual(step.tokenIds, reference.greedy.slice(0, stop + 1));
    assert.equal(step.finishReason, "stop");
    assert.equal(step.text, chars(reference.greedy.slice(0, stop)), "the eos id is not in the text");
    assert.equal(step.logprobs?.length, step.tokenIds.length);
    // Turn 2: the template drops the eos id the model sampled, so the rendering no longer extends
    // the held ids: the slot is rebuilt, and the break counted.
    const turn: Turn = {
      index: 0,
      text: step.text,
      tokenIds: step.tokenIds,
      logprobs: step.logprobs,
      action: { type: "format-error", error: "x" } as Turn["action"],
      rewards: {},
      observation: { text: chars([9, 9]), tokenIds: [] },
    };
    await policy.act([{ ...context(chars(reference.prompt), [turn]), maxTokens: 2 }]);
    assert.deepEqual([policy.prefixBreaks, policy.continuedTurns], [1, 1]);
  } finally {
    await policy.close();
    model.dispose();
  }
});

test("a tool call the format's parser cannot read is the policy's format failure, not a crash", async () => {
  const reference = readReference("smollm2");
  const model = HfEngineModel.load(join(FIXTURES, "smollm2"));
  const policy = new HfPolicy(model, standIn({ malformed: true }), { capacity: 1 });
  try {
    const [step] = await policy.act([{ ...context(chars(reference.prompt)), maxTokens: 4 }]);
    assert.equal(step.toolCalls?.[0].name, MALFORMED_CALL);
    assert.equal(step.toolCalls?.[0].arguments, chars(reference.greedy.slice(0, 4)));
    assert.equal(parseChatAction(step, []).type, "format-error");
    // The turn is kept as the text the model wrote, so the next rendering extends what it sampled.
    assert.equal(step.text, chars(reference.greedy.slice(0, 4)));
    const turn: Turn = {
      index: 0,
      text: step.text,
      tokenIds: step.tokenIds,
      logprobs: step.logprobs,
      action: { type: "format-error", error: "unknown tool" } as Turn["action"],
      rewards: {},
      observation: { text: chars([9]), tokenIds: [] },
    };
    await policy.act([{ ...context(chars(reference.prompt), [turn]), maxTokens: 1 }]);
    assert.deepEqual([policy.prefixBreaks, policy.continuedTurns], [0, 1]);
  } finally {
    await policy.close();
    model.dispose();
  }
});
