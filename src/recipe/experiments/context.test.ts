import assert from "node:assert/strict";
import { test } from "node:test";
import { statusLabel } from "../analysis.ts";
import { finishVerdicts, measuredCause, type RunSignal } from "./context.ts";

const run = (overrides: Partial<RunSignal>): RunSignal => ({
  name: "rl",
  noSignalSteps: 0,
  steps: 8,
  toolCallsStart: 3,
  toolCallsEnd: 3,
  rewardStart: 0.2,
  rewardEnd: 0.2,
  ...overrides,
});
const estimate = (mean: number, lower: number, upper: number) => ({
  mean,
  interval: { lower, upper },
  tasks: 24,
});

test("a claim called against the article gets the cause its runs' numbers show, checked in order", () => {
  // half the steps or more without a group with signal: no learning signal, whatever the effect
  assert.match(
    measuredCause(estimate(0.01, -0.02, 0.04), 0.05, [run({ noSignalSteps: 4 }), run({ name: "other" })]),
    /^no learning signal: .*rl 4\/8/,
  );
  // reward up while tool calls grew by half: a farmed reward
  assert.match(
    measuredCause(estimate(0.01, -0.02, 0.04), 0.05, [run({ toolCallsEnd: 4.5, rewardEnd: 0.4 })]),
    /^a farmed reward: .*3\.0 → 4\.5/,
  );
  // more tool calls without more reward is not farming
  assert.match(
    measuredCause(estimate(0.01, -0.02, 0.04), 0.05, [run({ toolCallsEnd: 6 })]),
    /below the margin/,
  );
  assert.match(measuredCause(estimate(-0.05, -0.08, -0.01), 0.05), /^an effect of the opposite sign/);
});

test("finishing verdicts: a 'not reproduced' without a cause is a bug in the module, not a report", () => {
  const verdict = {
    id: "x",
    experiment: "e",
    claim: "c",
    evidence: "ev",
    seeds: [0.1],
    status: "not reproduced" as const,
  };
  assert.throws(() => finishVerdicts([{ ...verdict }], 0.05), /x.*without a measured cause/);
  const reproduced = { ...verdict, status: "reproduced" as const, cause: "left over" };
  finishVerdicts([reproduced], 0.05);
  assert.equal("cause" in reproduced, false, "only a claim called against the article keeps a cause");
});

test("a reproduced claim whose interval lies entirely below the margin says so; one reaching it does not", () => {
  const verdict = (upper: number) => ({
    id: "x",
    experiment: "e",
    claim: "c",
    evidence: "ev",
    seeds: [0.02],
    status: "reproduced" as const,
    difference: estimate(0.02, 0.005, upper),
  });
  const small = verdict(0.04);
  const large = verdict(0.06);
  finishVerdicts([small, large], 0.05);
  assert.equal(statusLabel(small), "reproduced, smaller than the margin");
  assert.match(small.evidence, /reproduced, smaller than the margin/);
  assert.equal(statusLabel(large), "reproduced");
  assert.equal(large.evidence, "ev");
});
