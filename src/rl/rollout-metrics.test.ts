import assert from "node:assert/strict";
import { test } from "node:test";
import type { Task } from "../types/task.ts";
import type { ToolStatus } from "../types/tool.ts";
import type { Trajectory, Turn } from "../types/trajectory.ts";
import { rolloutMetrics } from "./rollout-metrics.ts";

function turn(index: number, status?: ToolStatus, formatError = false): Turn {
  return {
    index,
    text: "",
    tokenIds: [1, 2],
    logprobs: [-1, -1],
    action: formatError
      ? { type: "format-error", error: "no tag" }
      : status
        ? { type: "tool-call", tool: "search", arguments: {} }
        : { type: "answer", answer: "x" },
    ...(status ? { toolResult: { status, content: "", injected: status !== "ok" } } : {}),
    rewards: {},
  };
}

function episode(taskId: string, reward: number | null, turns: Turn[]): Trajectory {
  return {
    id: `${taskId}-${reward}`,
    taskId,
    family: "f",
    policyId: "p",
    seed: 0,
    prompt: { text: "", tokenIds: [] },
    turns,
    finalAnswer: "x",
    correct: reward === 1,
    outcomeReward: reward,
    endReason: "answer",
  };
}

test("rollout metrics: reward by hops, pass@1, tool error rates by status, retries, format failures", () => {
  const tasks: Record<string, Task> = {
    a: { id: "a", question: "", answer: "", family: "f", hops: 1 },
    b: { id: "b", question: "", answer: "", family: "f", hops: 4 },
  };
  const metrics = rolloutMetrics(
    [
      // hops 1: rewards 1 and 0 → mean 0.5, std 0.5.
      episode("a", 1, [turn(0, "ok"), turn(1)]),
      episode("a", 0, [turn(0, "error"), turn(1, "ok"), turn(2)]),
      // hops 4: reward 0.2 and one unscorable episode (left out of the reward statistics).
      episode("b", 0.2, [turn(0, "timeout"), turn(1, undefined, true), turn(2)]),
      episode("b", null, [turn(0)]),
    ],
    (id) => tasks[id],
  );
  assert.equal(metrics["reward/mean_hops_1"], 0.5);
  assert.equal(metrics["reward/std_hops_1"], 0.5);
  assert.ok(Math.abs(metrics["reward/mean_hops_4"] - 0.2) < 1e-12);
  assert.equal(metrics["reward/std_hops_4"], 0);
  assert.ok(Math.abs(metrics["reward/mean"] - 0.4) < 1e-12);
  assert.equal(metrics["rollout/pass@1"], 0.25);
  assert.equal(metrics["rollout/tool_calls_per_episode"], 1);
  // 4 calls: ok, error, ok, timeout.
  assert.equal(metrics["rollout/tool_error_rate/error"], 0.25);
  assert.equal(metrics["rollout/tool_error_rate/timeout"], 0.25);
  assert.equal(metrics["rollout/tool_error_rate/empty"], 0);
  // Two failed calls: the error was followed by another call, the timeout by a format error.
  assert.equal(metrics["rollout/retry_after_error_rate"], 0.5);
  assert.equal(metrics["rollout/format_failures"], 0.25);
  assert.equal(metrics["rollout/end_answer"], 1);
  // No turn rewards recorded: the return is the outcome.
  assert.equal(metrics["return/std_hops_1"], 0.5);
  assert.ok(Math.abs(metrics["return/mean"] - 0.4) < 1e-12);
});

test("rollout metrics: the return adds the turn rewards (neutral turns count 0)", () => {
  const tasks: Record<string, Task> = { a: { id: "a", question: "", answer: "", family: "f", hops: 3 } };
  const rewarded = (reward: number, totals: (number | null)[]) =>
    episode(
      "a",
      reward,
      totals.map((total, i) => ({ ...turn(i, "ok"), rewards: { total } })),
    );
  // Returns 1 + 0.5 + 0.25 = 1.75 and 0 + 0 (null) + 0.25 = 0.25: mean 1, population std 0.75.
  const metrics = rolloutMetrics([rewarded(1, [0.5, 0.25]), rewarded(0, [null, 0.25])], (id) => tasks[id]);
  assert.ok(Math.abs(metrics["return/mean_hops_3"] - 1) < 1e-12);
  assert.ok(Math.abs(metrics["return/std_hops_3"] - 0.75) < 1e-12);
  assert.equal(metrics["reward/mean_hops_3"], 0.5);
});
