import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { createMockPolicy } from "../policy/mock.ts";
import { scriptedPolicy } from "../policy/scripted/index.ts";
import { uniformNoise } from "../tools/index.ts";
import type { Tokenizer } from "../types/policy.ts";
import { flattenTrajectory, type Trajectory } from "../types/trajectory.ts";
import { checkAnswer } from "../world/index.ts";
import { renderAnswer, renderToolCall } from "./protocol.ts";
import { runEpisodes } from "./run-episodes.ts";
import { rolloutTasks, worldToolsFor } from "./task-set.ts";

const tasks = rolloutTasks({ split: "train", count: 40, seed: 3 });
const episodes = tasks.map((task, i) => ({ task, seed: i }));

/** A toy tokenizer: one id per word, so masks and ids can be checked by counting words. */
const words: Tokenizer = {
  vocabSize: 1 << 16,
  encode: (text) =>
    text
      .split(/\s+/)
      .filter(Boolean)
      .map((word) => word.length),
  decode: (ids) => ids.join(" "),
};

test("the expert solves every family through the loop with noise off", async () => {
  const trajectories = await runEpisodes({
    policy: scriptedPolicy("expert"),
    episodes,
    tools: worldToolsFor(),
    verify: checkAnswer,
  });
  assert.equal(trajectories.length, tasks.length);
  for (const t of trajectories) assert.ok(t.correct, `${t.taskId}: ${t.finalAnswer} (${t.endReason})`);
  assert.equal(new Set(trajectories.map((t) => t.family)).size, 5);
});

test("same seeds, same trajectories; noise is labelled and reproducible", async () => {
  const run = () =>
    runEpisodes({
      policy: scriptedPolicy("expert"),
      episodes,
      tools: worldToolsFor({ noise: uniformNoise(0.3) }),
      verify: checkAnswer,
      batchSize: 7,
    });
  const withoutLatency = (list: Trajectory[]) =>
    JSON.parse(JSON.stringify(list, (key, value) => (key === "latencyMs" ? undefined : value)));
  const [a, b] = [await run(), await run()];
  assert.deepEqual(withoutLatency(a), withoutLatency(b));
  const results = a.flatMap((t) => t.turns.flatMap((turn) => (turn.toolResult ? [turn.toolResult] : [])));
  const injected = results.filter((r) => r.injected);
  assert.ok(injected.length > 0, "noise 0.3 injected nothing");
  for (const r of injected)
    assert.notEqual(r.status === "ok", true, "an injected failure is never labelled ok");
  for (const r of results.filter((r) => !r.injected)) assert.equal(r.status, "ok");
});

test("the batch refills as episodes end and every episode is released once", async () => {
  const policy = createMockPolicy((context) =>
    context.turns.length < (context.seed % 3) + 1 ? renderToolCall("search", "zenda") : renderAnswer("1"),
  );
  const seen: string[] = [];
  const trajectories = await runEpisodes({
    policy,
    episodes,
    tools: worldToolsFor(),
    verify: checkAnswer,
    batchSize: 4,
    onEpisode: (t) => {
      seen.push(t.id);
    },
  });
  assert.deepEqual([...seen].sort(), trajectories.map((t) => t.id).sort());
  assert.deepEqual([...policy.released].sort(), [...seen].sort());
  trajectories.forEach((t, i) => {
    assert.equal(t.taskId, tasks[i].id, "results keep the order of the episodes");
    assert.equal(t.turns.length, (i % 3) + 2);
  });
});

test("format errors are recorded, observed and end the episode after the limit", async () => {
  const policy = createMockPolicy(() => "i think the answer is <search> unclosed");
  const [t] = await runEpisodes({
    policy,
    episodes: episodes.slice(0, 1),
    tools: worldToolsFor(),
    verify: checkAnswer,
    budgets: { maxFormatErrors: 3 },
  });
  assert.equal(t.endReason, "format-error");
  assert.equal(t.turns.length, 3);
  for (const turn of t.turns) assert.equal(turn.action.type, "format-error");
  assert.match(t.turns[0].observation!.text, /<obs> error : /);
  assert.equal(t.correct, false);
});

test("budgets: max turns and max tokens end episodes with their reason", async () => {
  const searcher = createMockPolicy(() => renderToolCall("search", "zenda"), { tokenizer: words });
  const [turns] = await runEpisodes({
    policy: searcher,
    episodes: episodes.slice(0, 1),
    tools: worldToolsFor(),
    verify: checkAnswer,
    budgets: { maxTurns: 4 },
  });
  assert.equal(turns.endReason, "max-turns");
  assert.equal(turns.turns.length, 4);
  const [tokens] = await runEpisodes({
    policy: searcher,
    episodes: episodes.slice(0, 1),
    tools: worldToolsFor(),
    verify: checkAnswer,
    budgets: { maxTokens: 7, maxTurns: 50 },
  });
  assert.equal(tokens.endReason, "max-tokens");
  assert.equal(tokens.turns.length, 3, "3 tokens a turn: the third turn crosses 7");
});

test("a policy that throws is recorded on each live episode, never lost", async () => {
  const policy = createMockPolicy(() => new Error("endpoint down"));
  const trajectories = await runEpisodes({
    policy,
    episodes: episodes.slice(0, 5),
    tools: worldToolsFor(),
    verify: checkAnswer,
  });
  assert.equal(trajectories.length, 5);
  for (const t of trajectories) {
    assert.equal(t.endReason, "policy-error");
    assert.equal(t.info?.error, "endpoint down");
  }
});

test("the flattened trajectory masks exactly the policy's tokens", async () => {
  const policy = createMockPolicy(
    (context) => (context.turns.length === 0 ? renderToolCall("search", "zenda") : renderAnswer("12")),
    { tokenizer: words },
  );
  const [t] = await runEpisodes({
    policy,
    episodes: episodes.slice(0, 1),
    tools: worldToolsFor(),
    verify: checkAnswer,
  });
  const flat = flattenTrajectory(t);
  const policyTokens = t.turns.reduce((n, turn) => n + turn.tokenIds.length, 0);
  assert.equal(
    flat.lossMask.reduce((a, b) => a + b, 0),
    policyTokens,
  );
  assert.equal(
    flat.tokenIds.length,
    t.prompt.tokenIds.length + policyTokens + t.turns[0].observation!.tokenIds.length,
  );
  assert.deepEqual(
    flat.lossMask.slice(0, t.prompt.tokenIds.length),
    t.prompt.tokenIds.map(() => 0),
  );
});

test("arbitrary model text never crashes the loop (fuzz)", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.oneof(
          fc.string(),
          fc.constantFrom(
            "<search>",
            "</search>",
            "<calc>",
            "</calc>",
            "<answer>",
            "</answer>",
            "<obs>",
            "1 / 0",
            "constructor.constructor('return process')()",
          ),
        ),
        {
          maxLength: 8,
        },
      ),
      async (pieces) => {
        const policy = createMockPolicy((context) => pieces.slice(0, context.turns.length + 2).join(" "));
        const [t]: Trajectory[] = await runEpisodes({
          policy,
          episodes: episodes.slice(0, 1),
          tools: worldToolsFor({ noise: uniformNoise(0.2) }),
          verify: checkAnswer,
        });
        assert.ok(t.turns.length >= 1);
        assert.ok(["answer", "max-turns", "max-tokens", "format-error"].includes(t.endReason));
      },
    ),
    { numRuns: 150, seed: 42 },
  );
});
