import assert from "node:assert/strict";
import { test } from "node:test";
import { renderObservation } from "../../env/protocol.ts";
import type { PolicyContext } from "../../types/policy.ts";
import { TASK_FAMILIES, type Task } from "../../types/task.ts";
import type { Turn } from "../../types/trajectory.ts";
import { generateTasks, generateWorld, type World, worldSeeds } from "../../world/index.ts";
import { createExpertPolicy, expertAgent, nextAction, renderAction } from "./index.ts";
import { type MiniNoise, runMiniEpisode } from "./testing-mini-env.ts";

const NOISE: MiniNoise = { error: 0.1, empty: 0.05, timeout: 0.05, corrupted: 0.1 };

function suite(split: "train" | "test", worlds: number, perFamily: number): { world: World; task: Task }[] {
  return worldSeeds(split, worlds).flatMap((seed) => {
    const world = generateWorld(seed);
    return TASK_FAMILIES.flatMap((family) =>
      generateTasks(world, { family, count: perFamily, seed }).map((task) => ({ world, task })),
    );
  });
}

const goldTexts = (task: Task) =>
  (task.gold ?? []).map((step) =>
    renderAction(
      step.type === "search"
        ? { kind: "search", query: step.query }
        : step.type === "calc"
          ? { kind: "calc", expression: step.expression }
          : { kind: "answer", answer: step.answer },
    ),
  );

test("without noise the expert solves every task of every family with exactly the gold calls", async () => {
  const expert = createExpertPolicy();
  const cases = [...suite("train", 4, 25), ...suite("test", 2, 25)];
  assert.ok(cases.length > 500);
  for (const [i, { world, task }] of cases.entries()) {
    const episode = await runMiniEpisode(expert, world, task, { seed: i });
    assert.ok(episode.correct, `${task.id}: answered ${episode.answer}, gold ${task.answer}`);
    assert.deepEqual(
      episode.turns.map((turn) => turn.text),
      goldTexts(task),
    );
  }
});

test("with several documents per result the expert still finds the one it asked for", async () => {
  const expert = createExpertPolicy();
  for (const [i, { world, task }] of suite("train", 2, 15).entries()) {
    const episode = await runMiniEpisode(expert, world, task, { seed: i, topK: 3 });
    assert.ok(episode.correct, task.id);
  }
});

test("with tool noise the expert retries failed calls and still solves most tasks", async () => {
  const expert = createExpertPolicy();
  let correct = 0;
  let retried = 0;
  const cases = suite("train", 4, 20);
  for (const [i, { world, task }] of cases.entries()) {
    const episode = await runMiniEpisode(expert, world, task, { seed: 1000 + i, noise: NOISE, maxTurns: 40 });
    if (episode.correct) correct++;
    // Every failed call is followed by the same call again.
    episode.statuses.forEach((status, k) => {
      if (status !== "ok" && k + 1 < episode.turns.length && episode.turns[k + 1].action.type !== "answer") {
        assert.equal(episode.turns[k + 1].text, episode.turns[k].text, `${task.id}: retry after ${status}`);
        retried++;
      }
    });
  }
  assert.ok(retried > 50, `${retried} retries`);
  assert.ok(correct / cases.length >= 0.95, `noisy success ${correct}/${cases.length}`);
});

test("the expert judges by the observation text, never by the hidden tool status", () => {
  const world = generateWorld(worldSeeds("train", 1)[0]);
  const [task] = generateTasks(world, { template: "capital-pop", count: 1 });
  const gold = task.gold!;
  assert.ok(gold[0].type === "search" && gold[1].type === "search");
  const document = world.documents.find((d) => d.id === (gold[0] as { entity: string }).entity)!;
  const turn = (observation: string, status: "ok" | "error"): Turn => ({
    index: 0,
    text: goldTexts(task)[0],
    tokenIds: [],
    logprobs: null,
    action: {
      type: "tool-call",
      tool: "search",
      arguments: { query: gold[0].type === "search" ? gold[0].query : "" },
    },
    toolResult: { status, content: observation, injected: status !== "ok" },
    observation: { text: renderObservation(observation), tokenIds: [] },
    rewards: {},
  });
  const context = (turns: Turn[]): PolicyContext => ({
    episodeId: "e",
    task,
    prompt: { text: "", tokenIds: [] },
    turns,
    tools: [],
    seed: 1,
    maxTokens: 32,
  });
  const factory = (c: Parameters<typeof expertAgent>[0]) => expertAgent(c);
  // The document is there although the status claims an error: move on to the next step.
  assert.deepEqual(nextAction(factory, context([turn(document.text, "error")])), {
    kind: "search",
    query: gold[1].query,
  });
  // An error message with an `ok` status: retry the same search.
  assert.deepEqual(nextAction(factory, context([turn("error : service unavailable", "ok")])), {
    kind: "search",
    query: gold[0].query,
  });
  // The wrong document: retry.
  const other = world.documents.find((d) => d.id !== document.id)!;
  assert.deepEqual(nextAction(factory, context([turn(other.text, "ok")])), {
    kind: "search",
    query: gold[0].query,
  });
});

test("after maxRetries failures on one step the expert gives up with a guess of the right magnitude", async () => {
  const world = generateWorld(worldSeeds("train", 1)[0]);
  const expert = createExpertPolicy({ maxRetries: 2 });
  for (const [i, task] of generateTasks(world, { count: 20, seed: 5 }).entries()) {
    const episode = await runMiniEpisode(expert, world, task, { seed: i, noise: { error: 1 } });
    assert.equal(episode.turns.length, 4, "three attempts, then the answer");
    assert.equal(episode.answer?.length, task.answer.length);
    assert.notEqual(episode.answer, null);
  }
  assert.throws(() => createExpertPolicy({ maxRetries: -1 }), /maxRetries/);
});

test("the expert is a token-less text policy and refuses tasks without gold", async () => {
  const expert = createExpertPolicy();
  assert.equal(expert.protocol, "text");
  assert.equal(expert.tokenizer, undefined);
  const world = generateWorld(worldSeeds("train", 1)[0]);
  const [task] = generateTasks(world, { count: 1 });
  const context: PolicyContext = {
    episodeId: "e",
    task,
    prompt: { text: "", tokenIds: [] },
    turns: [],
    tools: [],
    seed: 0,
    maxTokens: 32,
  };
  const [step] = await expert.act([context]);
  assert.deepEqual(step, { text: goldTexts(task)[0], tokenIds: [], logprobs: null, finishReason: "stop" });
  assert.match(step.text, /^ <search> .+ <\/search>$/);
  await assert.rejects(
    expert.act([{ ...context, task: { id: "file/1", question: "q ?", answer: "1", family: "x" } }]),
    /no gold steps/,
  );
});

test("recovery adapt: after no results or a repeated error the expert rephrases; it still solves most noisy tasks", async () => {
  const expert = createExpertPolicy({ recovery: "adapt" });
  let correct = 0;
  let rephrased = 0;
  let repeatedAfterEmpty = 0;
  const cases = suite("train", 4, 20);
  for (const [i, { world, task }] of cases.entries()) {
    const episode = await runMiniEpisode(expert, world, task, { seed: 1000 + i, noise: NOISE, maxTurns: 40 });
    if (episode.correct) correct++;
    episode.turns.forEach((turn, k) => {
      const next = episode.turns[k + 1];
      if (next?.action.type !== "tool-call" || turn.action.type !== "tool-call") return;
      if (turn.action.tool !== "search" || episode.statuses[k] !== "empty") return;
      if (next.text === turn.text) repeatedAfterEmpty++;
      else rephrased++;
    });
  }
  assert.ok(rephrased > 10, `${rephrased} rephrasings after no results`);
  assert.equal(repeatedAfterEmpty, 0, "no query is repeated verbatim after no results");
  assert.ok(correct / cases.length >= 0.95, `noisy success ${correct}/${cases.length}`);
  assert.throws(
    () => createExpertPolicy({ recovery: "pray" as never }),
    /recovery must be one of repeat, adapt/,
  );
});
