import assert from "node:assert/strict";
import { test } from "node:test";
import { withRewards } from "../../reward/spec.ts";
import { sketchTrajectory, SKETCH_TASK as task } from "../../reward/testing.ts";
import { flattenTrajectory } from "../../types/trajectory.ts";
import { anchorKeys, toAdvantageBatch, toAdvantageEpisode } from "./from-trajectory.ts";
import { computeAdvantages } from "./index.ts";

const good = withRewards(
  sketchTrajectory([{ act: "search:zenda", refs: ["p-zenda"] }, { act: "answer:4213" }], {
    correct: true,
    group: 0,
  }),
  task,
  "mt-grpo",
);
const bad = withRewards(
  sketchTrajectory([{ act: "search:lorem", status: "empty" }, { act: "answer:1" }], { group: 0 }),
  task,
  "mt-grpo",
);

test("a rewarded trajectory becomes an estimator episode aligned with flattenTrajectory", () => {
  const episode = toAdvantageEpisode(good);
  const flat = flattenTrajectory(good);
  assert.deepEqual(episode.lossMask, flat.lossMask);
  assert.deepEqual(episode.turnIndex, flat.turnIndex);
  assert.equal(episode.group, 0);
  // outcome: EM 1 + contained 0.5 + format 0.2; turn 0: tool 0.2 + evidence 0.5; answer turn 0
  assert.ok(Math.abs((episode.outcomeReward as number) - 1.7) < 1e-12);
  assert.deepEqual(episode.turnRewards, [0.7, 0]);
  // Without a group the task id groups the rollouts; a missing reward key means 0.
  assert.equal(toAdvantageEpisode({ ...good, group: undefined }).group, good.taskId);
  assert.deepEqual(toAdvantageEpisode(good, { turnRewardKey: "absent" }).turnRewards, [0, 0]);
});

test("end to end: mt-grpo on two rewarded trajectories", () => {
  const batch = toAdvantageBatch([good, bad], { anchors: "observation" });
  const result = computeAdvantages("mt-grpo", batch);
  const flat = flattenTrajectory(good);
  // good: outcome 1.7 vs bad 0.2 → A^O = ±0.7071; turn 0: 0.7 vs 0 → A^T = ±0.7071 → 1.4142 on turn 0
  flat.turnIndex.forEach((turn, i) => {
    const expected = flat.lossMask[i] ? (turn === 0 ? Math.SQRT2 : Math.SQRT1_2) : 0;
    assert.ok(Math.abs(result.advantages[0][i] - expected) < 1e-3, `token ${i}: ${result.advantages[0][i]}`);
  });
  assert.ok(computeAdvantages("gigpo", batch).advantages[0].some((value) => value > 0));
});

test("anchor keys: the last observation, or the whole history", () => {
  const trajectory = sketchTrajectory([
    { act: "search:zenda" },
    { act: "search:zenda" },
    { act: "answer:1" },
  ]);
  const byObservation = anchorKeys(trajectory, "observation");
  // turn 0 starts from the prompt; turns 1 and 2 from the same observation ("result of zenda")
  assert.equal(byObservation[0], trajectory.prompt.text);
  assert.equal(byObservation[1], byObservation[2]);
  const byHistory = anchorKeys(trajectory, "history");
  assert.equal(new Set(byHistory).size, 3);
  assert.ok(byHistory[2].startsWith(byHistory[1]));
});
