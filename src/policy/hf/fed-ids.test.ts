import assert from "node:assert/strict";
import { test } from "node:test";
import { flattenTrajectory, type Trajectory, type Turn } from "../../types/trajectory.ts";
import { withFedIds } from "./fed-ids.ts";

const turn = (index: number, tokenIds: number[], observation?: string): Turn => ({
  index,
  text: `turn ${index}`,
  tokenIds,
  logprobs: tokenIds.map(() => -0.5),
  action: { type: "answer", answer: "x" },
  rewards: {},
  ...(observation !== undefined ? { observation: { text: observation, tokenIds: [99] } } : {}),
});

/** Stored as the episode loop stores a chat episode: the question and tool results encoded alone. */
const stored: Trajectory = {
  id: "e",
  taskId: "t",
  family: "f",
  policyId: "hf:x",
  seed: 1,
  prompt: { text: "<q> q </q>", tokenIds: [7] },
  turns: [turn(0, [20, 21, 2], "result"), turn(1, [30, 2])],
  finalAnswer: "x",
  correct: true,
  outcomeReward: 1,
  endReason: "answer",
};

test("the ids the model read: the first rendering, then what each rendering added after the sampled ids", () => {
  // Rendered before turn 0: [1 10 11]; before turn 1 the template kept turn 0 and added [12 13 99 14].
  const fed = withFedIds(stored, [
    [1, 10, 11],
    [1, 10, 11, 20, 21, 2, 12, 13, 99, 14],
  ]);
  assert.deepEqual(fed.prompt.tokenIds, [1, 10, 11]);
  assert.deepEqual(fed.turns[0].observation?.tokenIds, [12, 13, 99, 14]);
  assert.equal(fed.turns[0].observation?.text, "result");
  const flat = flattenTrajectory(fed);
  assert.deepEqual(flat.tokenIds, [1, 10, 11, 20, 21, 2, 12, 13, 99, 14, 30, 2]);
  assert.deepEqual(flat.lossMask, [0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1]);
  assert.equal(fed.info, undefined);
});

test("a rendering that rewrites an earlier turn stops the ids there (later turns keep their text only)", () => {
  // The template re-serialised turn 0 (21 became 22): turn 1 was sampled after ids the sequence lacks.
  const fed = withFedIds(stored, [
    [1, 10, 11],
    [1, 10, 11, 20, 22, 2, 12, 99, 14],
  ]);
  assert.deepEqual(fed.turns[0].observation?.tokenIds, []);
  assert.deepEqual(fed.turns[1].tokenIds, []);
  assert.equal(fed.turns[1].logprobs, null);
  assert.equal(fed.turns[1].text, "turn 1");
  assert.deepEqual(flattenTrajectory(fed).tokenIds, [1, 10, 11, 20, 21, 2]);
  assert.deepEqual(fed.info, { prefixBreaks: 1 });
});

test("without recorded renderings the trajectory is left as stored", () => {
  assert.equal(withFedIds(stored, []), stored);
});
