import assert from "node:assert/strict";
import { test } from "node:test";
import { trackLiveBuffers } from "../../engine/diagnostics.ts";
import { keyFromSeed } from "../../engine/init.ts";
import { disposeTree } from "../../engine/tree.ts";
import { renderObservation, renderPrompt, STOP_TOKENS } from "../../env/protocol.ts";
import type { PolicyContext, PolicyStep } from "../../types/policy.ts";
import type { Task } from "../../types/task.ts";
import type { Turn } from "../../types/trajectory.ts";
import type { GptConfig } from "./config.ts";
import { EmbeddedPolicy } from "./embedded-policy.ts";
import { type GptParams, initGpt } from "./model.ts";
import { scoreTokens } from "./score.ts";
import { createWordTokenizer } from "./tokenizer.ts";

const tokenizer = createWordTokenizer([
  "zenda",
  "city",
  "population",
  "of",
  "what",
  "is",
  "the",
  "?",
  ":",
  ".",
]);
const config: GptConfig = {
  vocabSize: tokenizer.vocabSize,
  dModel: 16,
  nLayers: 2,
  nHeads: 2,
  dFF: 32,
  maxLen: 48,
};
const params: GptParams = initGpt(config, keyFromSeed(11));
const questions = [
  "what is the population of zenda ?",
  "population of zenda ?",
  "what is the city of the population of zenda ?",
];

function context(index: number, turns: Turn[] = [], maxTokens = 8): PolicyContext {
  const text = renderPrompt(questions[index]);
  return {
    episodeId: `episode-${index}`,
    task: { id: `t${index}`, question: questions[index], answer: "1", family: "lookup" } as Task,
    prompt: { text, tokenIds: tokenizer.encode(text) },
    turns,
    tools: [],
    seed: 100 + index,
    maxTokens,
  };
}

function turnOf(step: PolicyStep, index: number, observation: string): Turn {
  const text = renderObservation(observation);
  return {
    index,
    text: step.text,
    tokenIds: step.tokenIds,
    logprobs: step.logprobs,
    action: { type: "format-error", error: "test" },
    observation: { text, tokenIds: tokenizer.encode(text) },
    rewards: {},
  };
}

async function assertLogprobsMatchScoring(ctx: PolicyContext, step: PolicyStep, temperature: number) {
  const history = [...ctx.prompt.tokenIds];
  for (const turn of ctx.turns) history.push(...turn.tokenIds, ...(turn.observation?.tokenIds ?? []));
  const sequence = [...history, ...step.tokenIds];
  const scored = await scoreTokens(params, config, [sequence], { temperature });
  step.logprobs!.forEach((logprob, i) => {
    const expected = scored.logprobs[0][history.length + i];
    assert.ok(Math.abs(logprob - expected) < 1e-4, `token ${i}: sampled ${logprob}, scored ${expected}`);
  });
}

test("act: one turn per context in lock-step, stop tags end a turn, log-probs match scoring", async () => {
  // 3 recent slots: turns of up to 8 tokens cross several recent-cache flushes.
  const policy = new EmbeddedPolicy(
    { config, tokenizer, params },
    { temperature: 0.8, capacity: 4, recentSlots: 3 },
  );
  const stopIds = STOP_TOKENS.map((token) => tokenizer.requireId(token));
  let contexts = [context(0), context(1), context(2)];
  for (let turn = 0; turn < 3; turn++) {
    const steps = await policy.act(contexts);
    assert.equal(steps.length, 3);
    for (const [i, step] of steps.entries()) {
      const last = step.tokenIds[step.tokenIds.length - 1];
      assert.equal(step.finishReason === "stop", stopIds.includes(last));
      assert.ok(step.tokenIds.length <= contexts[i].maxTokens);
      if (step.finishReason === "length") assert.equal(step.tokenIds.length, contexts[i].maxTokens);
      assert.ok(step.tokenIds.slice(0, -1).every((id) => !stopIds.includes(id)));
      assert.equal(step.text, tokenizer.decode(step.tokenIds));
      await assertLogprobsMatchScoring(contexts[i], step, 0.8);
    }
    contexts = contexts.map((ctx, i) =>
      context(i, [...ctx.turns, turnOf(steps[i], turn, `zenda : city . population ${turn}`)]),
    );
  }
  await policy.close();
});

test("an episode's samples depend on its seeds only, not on its batch or on evictions", async () => {
  const run = async (capacity: number, indices: number[]) => {
    const policy = new EmbeddedPolicy({ config, tokenizer, params }, { capacity, seed: 5 });
    let contexts = indices.map((i) => context(i));
    const outputs: number[][] = [];
    for (let turn = 0; turn < 2; turn++) {
      const steps = await policy.act(contexts);
      outputs.push(...steps.map((s) => s.tokenIds));
      contexts = contexts.map((ctx, k) =>
        context(indices[k], [...ctx.turns, turnOf(steps[k], turn, "zenda")]),
      );
    }
    await policy.close();
    return outputs;
  };
  const together = await run(4, [0, 1, 2]);
  const alone = await run(4, [1]);
  assert.deepEqual(alone, [together[1], together[4]]);
  // Capacity 2 for 3 episodes: groups and LRU evictions, same tokens.
  assert.deepEqual(await run(2, [0, 1, 2]), together);
});

test("release frees slots; decoding does not leak device buffers", async () => {
  const tracker = await trackLiveBuffers();
  assert.ok(tracker);
  const policy = new EmbeddedPolicy({ config, tokenizer, params }, { capacity: 2 });
  const round = async (offset: number) => {
    const contexts = [context(0), context(1)].map((ctx) => ({
      ...ctx,
      episodeId: `${ctx.episodeId}-${offset}`,
    }));
    await policy.act(contexts);
    policy.release(contexts.map((ctx) => ctx.episodeId));
  };
  await round(0);
  const before = tracker.live();
  for (let i = 1; i <= 5; i++) await round(i); // 2 free slots reused each round, no eviction needed
  assert.equal(tracker.live(), before);
  await policy.close();
});

test("teardown", () => {
  disposeTree(params);
});
