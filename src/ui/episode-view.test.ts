import assert from "node:assert/strict";
import { test } from "node:test";
import { formatErrorTrajectory, richTrajectory } from "../store/test-trajectories.ts";
import { flattenTrajectory, type Trajectory } from "../types/trajectory.ts";
import { episodeView, type TokenCell } from "./episode-view.ts";

const cellsOf = (view: ReturnType<typeof episodeView>): TokenCell[] => [
  ...view.prompt.tokens,
  ...view.turns.flatMap((turn) => [...turn.tokens, ...(turn.observation?.tokens ?? [])]),
];

const stored = (trajectory: Trajectory) => ({ seq: 1, key: trajectory.id, step: null, trajectory });

test("one cell per flattened token, with its id and mask; log-probs on mask-1 tokens only", () => {
  for (const trajectory of [richTrajectory(), formatErrorTrajectory()]) {
    const flat = flattenTrajectory(trajectory);
    const cells = cellsOf(episodeView(stored(trajectory), { values: null, note: "none" }));
    assert.deepEqual(
      cells.map((cell) => cell.id),
      flat.tokenIds,
    );
    assert.deepEqual(
      cells.map((cell) => cell.mask),
      flat.lossMask,
    );
    assert.ok(cells.every((cell) => cell.mask === 1 || cell.logprob === null));
  }
  const answer = episodeView(stored(richTrajectory()), { values: null, note: "" }).turns[6];
  assert.deepEqual(
    answer.tokens.map((cell) => cell.logprob),
    [-0, -0.25, "-Infinity"],
    "-Infinity travels as its spelling",
  );
  const nullTurn = episodeView(stored(richTrajectory()), { values: null, note: "" }).turns[2];
  assert.ok(
    nullTurn.tokens.every((cell) => cell.logprob === null),
    "a turn without log-probs has none",
  );
});

test("advantages are placed on mask-1 tokens by flattened position; a length mismatch throws", () => {
  const trajectory = formatErrorTrajectory();
  const flat = flattenTrajectory(trajectory);
  const values = flat.tokenIds.map((_, i) => i);
  const cells = cellsOf(episodeView(stored(trajectory), { values: Float32Array.from(values), note: "test" }));
  cells.forEach((cell, i) => {
    assert.equal(cell.advantage, flat.lossMask[i] === 1 ? i : null);
  });
  assert.throws(
    () => episodeView(stored(trajectory), { values: new Float32Array(3), note: "" }),
    /3 entries for \d+ tokens/,
  );
});
