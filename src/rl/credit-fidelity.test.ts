import assert from "node:assert/strict";
import { test } from "node:test";
import type { Task } from "../types/task.ts";
import type { ToolResult } from "../types/tool.ts";
import type { Trajectory, Turn } from "../types/trajectory.ts";
import { sketchBatch } from "./advantages/testing.ts";
import { blameOnFaultyTurns, faultyTurn, gradientWeights } from "./credit-fidelity.ts";

const task: Task = {
  id: "w1/chain/t/0",
  question: "q",
  answer: "42",
  family: "chain",
  hops: 2,
  gold: [
    { type: "search", query: "Ada", entity: "e-ada" },
    { type: "search", query: "Paris", entity: "e-paris" },
    { type: "answer", answer: "42" },
  ],
};

const search = (query: string, result: Partial<ToolResult>): Turn => ({
  index: 0,
  text: "",
  tokenIds: [],
  logprobs: null,
  action: { type: "tool-call", tool: "search", arguments: { query } },
  toolResult: { status: "ok", content: "", injected: false, ...result },
  rewards: {},
});
const answer = (text: string): Turn => ({
  index: 0,
  text: "",
  tokenIds: [],
  logprobs: null,
  action: { type: "answer", answer: text },
  rewards: {},
});
const episode = (turns: Turn[], correct = false): Trajectory => ({
  id: "e",
  taskId: task.id,
  family: "chain",
  policyId: "p",
  seed: 0,
  prompt: { text: "", tokenIds: [] },
  turns: turns.map((turn, index) => ({ ...turn, index })),
  finalAnswer: null,
  correct,
  outcomeReward: correct ? 1 : 0,
  endReason: "answer",
});

test("the faulty turn is the first that departs from every gold plan", () => {
  const ada = search("Ada", { refs: ["e-ada"] });
  const paris = search("Paris", { refs: ["e-paris"] });
  // on the plan until the wrong answer
  assert.equal(faultyTurn(episode([ada, paris, answer("7")]), task), 2);
  // a search for something else departs at once
  assert.equal(faultyTurn(episode([ada, search("Rome", { refs: ["e-rome"] }), answer("7")]), task), 1);
  // repeating a step already taken departs too
  assert.equal(faultyTurn(episode([ada, ada, answer("7")]), task), 1);
  // an injected failure is the environment's: the retry stays on the plan
  const dropped = search("Ada", { status: "error", injected: true });
  assert.equal(faultyTurn(episode([dropped, ada, paris, answer("7")]), task), 3);
  // a search that found nothing (the policy's own query) departs
  assert.equal(faultyTurn(episode([search("Adda", { status: "empty" }), ada]), task), 0);
  // correct episodes, tasks without a gold plan, and episodes that ran out on the plan: none
  assert.equal(faultyTurn(episode([ada, paris, answer("42")], true), task), null);
  assert.equal(faultyTurn(episode([ada, answer("7")]), { ...task, gold: undefined }), null);
  assert.equal(faultyTurn(episode([ada, paris]), task), null);
});

test("turn-level estimators blame the known faulty turn most; GRPO gives every turn the same advantage", () => {
  // one group of a 3-turn task (2 policy tokens a turn). Turn rewards pay the gold facts (0.5 each).
  //   E0, E3 correct: [0.5, 0.5, 0], outcome 1
  //   E1 fails at turn 1 (its second search found nothing): [0.5, 0, 0], outcome 0
  //   E2 fails at turn 0: [0, 0, 0], outcome 0
  const batch = sketchBatch([
    { group: "g", outcome: 1, turns: [0.5, 0.5, 0], anchors: ["s0", "s1", "s2"], values: Array(10).fill(0) },
    { group: "g", outcome: 0, turns: [0.5, 0, 0], anchors: ["s0", "s1", "s2x"], values: Array(10).fill(0) },
    { group: "g", outcome: 0, turns: [0, 0, 0], anchors: ["s0", "s1y", "s2y"], values: Array(10).fill(0) },
    { group: "g", outcome: 1, turns: [0.5, 0.5, 0], anchors: ["s0", "s1", "s2"], values: Array(10).fill(0) },
  ]);
  const blame = blameOnFaultyTurns(
    batch,
    [null, 1, 0, null],
    [3, 3, 3, 3],
    ["grpo", "mt-grpo", "gigpo", "gae"],
  );
  // GRPO: E1's turns all get the group-normalised outcome (0 − ½)/std: no turn stands out
  for (const record of blame.grpo) {
    assert.ok(Math.abs(record.blame) < 1e-6, `grpo blame ${record.blame}`);
    assert.equal(record.lowest, false);
  }
  // MT-GRPO: E1's turn 1 (reward-to-go 0 where the group's mean is ¼) sits below its turn 0
  // (½ against a mean of ⅝) and its turn 2 (0 for everyone: turn term 0): the lowest of the episode
  const mt = blame["mt-grpo"].find((record) => record.episode === 1)!;
  assert.equal(mt.faulty, 1);
  assert.ok(mt.blame > 0, `mt-grpo blame ${mt.blame}`);
  assert.equal(mt.lowest, true);
  // every turn-level estimator blames E1's faulty turn more than the rest of its episode
  for (const name of ["mt-grpo", "gigpo", "gae"]) {
    const record = blame[name].find((r) => r.episode === 1)!;
    assert.ok(record.blame > 0, `${name} blame ${record.blame}`);
  }
  // E2 (faulty at turn 0): GRPO again spreads one value over all its turns
  assert.ok(Math.abs(blame.grpo.find((r) => r.episode === 2)!.blame) < 1e-6);
});

test("the gradient weight Σ A² grows with the number of policy tokens at the same outcome advantage", () => {
  const batch = sketchBatch([
    { group: "g", outcome: 1, turnTokens: [2] },
    { group: "g", outcome: 0, turnTokens: [2] },
    { group: "h", outcome: 1, turnTokens: [2, 2, 2] },
    { group: "h", outcome: 0, turnTokens: [2, 2, 2] },
  ]);
  // Dr.GRPO-style centring only: every token of an episode gets ±½
  const weights = gradientWeights(batch, "grpo", { normalization: "none" });
  assert.deepEqual(weights, [0.5, 0.5, 1.5, 1.5]); // 2 · ¼ and 6 · ¼
});
