import assert from "node:assert/strict";
import { test } from "node:test";
import { normalizeAnswerText } from "./normalize.ts";
import { containsAnswerReward, demyAgentReward, exactMatchReward, formatReward } from "./outcome.ts";
import { overlongPenalty, overlongReward, policyTokenCount } from "./overlong.ts";
import { sketchTrajectory, SKETCH_TASK as task } from "./testing.ts";

const solved = sketchTrajectory([{ act: "search:zenda" }, { act: "answer:4213" }], { correct: true });
const wrong = sketchTrajectory([{ act: "search:zenda" }, { act: "answer:17" }], { correct: false });

test("exact match trusts trajectory.correct, or recomputes with a normaliser", () => {
  assert.equal(exactMatchReward(solved, task), 1);
  assert.equal(exactMatchReward(wrong, task), 0);
  // The episode loop's verdict is trusted by default, even if the text disagrees…
  const mislabelled = { ...wrong, correct: true };
  assert.equal(exactMatchReward(mislabelled, task), 1);
  // …and recomputed when asked.
  assert.equal(exactMatchReward(mislabelled, task, { recompute: true }), 0);
  const formatted = sketchTrajectory([{ act: "answer:4,213.0" }]);
  assert.equal(exactMatchReward(formatted, task, { recompute: true }), 1);
  assert.equal(
    exactMatchReward(formatted, { ...task, answer: "9", aliases: ["4213"] }, { recompute: true }),
    1,
  );
  assert.equal(exactMatchReward(sketchTrajectory([{ act: "search:x" }]), task, { recompute: true }), 0);
  assert.equal(exactMatchReward({ ...solved, endReason: "policy-error" }, task), null);
});

test("the local normaliser", () => {
  assert.equal(normalizeAnswerText("  The Zenda Republic! "), "zenda republic");
  assert.equal(normalizeAnswerText("4,213.50"), "4213.5");
  assert.equal(normalizeAnswerText("007."), "7");
  assert.equal(normalizeAnswerText("3.14"), "3.14");
});

test("contains-answer matches whole tokens only", () => {
  assert.equal(containsAnswerReward(sketchTrajectory([{ act: "answer:about 4213 people" }]), task), 1);
  assert.equal(containsAnswerReward(sketchTrajectory([{ act: "answer:42130" }]), task), 0);
  assert.equal(containsAnswerReward(sketchTrajectory([{ act: "search:x" }]), task), 0);
});

test("format: 1 only without format errors and when the episode ended by answering", () => {
  assert.equal(formatReward(solved), 1);
  assert.equal(formatReward(wrong), 1); // wrong but well-formed
  assert.equal(formatReward(sketchTrajectory([{ act: "format-error" }, { act: "answer:4213" }])), 0);
  assert.equal(formatReward(sketchTrajectory([{ act: "search:zenda" }, { act: "search:zenda" }])), 0); // max-turns
  assert.equal(formatReward({ ...solved, endReason: "policy-error" }), null);
});

test("DemyAgent: +1 correct; wrong = min(-0.6, -1 + 0.1·tool_calls)", () => {
  assert.equal(demyAgentReward(solved, task), 1);
  // 0 calls → -1; 1 call → -0.9; 3 calls → -0.7; 4 calls → -0.6; 7 calls → min(-0.6, -0.3) = -0.6
  const wrongWith = (calls: number) =>
    sketchTrajectory([...Array.from({ length: calls }, () => ({ act: "search:x" })), { act: "answer:1" }]);
  assert.equal(demyAgentReward(wrongWith(0), task), -1);
  assert.ok(Math.abs((demyAgentReward(wrongWith(1), task) as number) + 0.9) < 1e-12);
  assert.ok(Math.abs((demyAgentReward(wrongWith(3), task) as number) + 0.7) < 1e-12);
  assert.equal(demyAgentReward(wrongWith(4), task), -0.6);
  assert.equal(demyAgentReward(wrongWith(7), task), -0.6);
  // Format errors are not tool calls.
  assert.equal(demyAgentReward(sketchTrajectory([{ act: "format-error" }, { act: "answer:1" }]), task), -1);
});

test("overlong shaping: 0, then a linear ramp over the window, then -1", () => {
  // Lmax 100, Lcache 20: free up to 80; 90 → -(90-80)/20 = -0.5; 99 → -0.95; 100 and beyond → -1
  assert.equal(overlongPenalty(50, 100, 20), 0);
  assert.equal(overlongPenalty(80, 100, 20), 0);
  assert.equal(overlongPenalty(90, 100, 20), -0.5);
  assert.equal(overlongPenalty(99, 100, 20), -0.95);
  assert.equal(overlongPenalty(100, 100, 20), -1);
  assert.equal(overlongPenalty(500, 100, 20), -1);
  assert.throws(() => overlongPenalty(1, 10, 20), /need 0 < cacheLength <= maxLength/);
  // Length counts policy tokens only: 2 turns × 3 tokens; prompt and observation tokens excluded.
  assert.equal(policyTokenCount(solved), 6);
  assert.equal(overlongReward(solved, task, { maxLength: 8, cacheLength: 4 }), -0.5);
  assert.throws(() => overlongReward(solved, task), /needs options/);
});
