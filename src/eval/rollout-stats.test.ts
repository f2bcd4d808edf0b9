import assert from "node:assert/strict";
import { test } from "node:test";
import type { ToolResult } from "../types/tool.ts";
import type { Trajectory, Turn } from "../types/trajectory.ts";
import { rolloutStats, rolloutStatsByFamily } from "./rollout-stats.ts";

const call = (index: number, status: ToolResult["status"], injected = status !== "ok"): Turn => ({
  index,
  text: "",
  tokenIds: [1, 2],
  logprobs: null,
  action: { type: "tool-call", tool: "search", arguments: { query: "x" } },
  toolResult: { status, content: "", injected },
  rewards: {},
});
const answer = (index: number): Turn => ({
  index,
  text: "",
  tokenIds: [3],
  logprobs: null,
  action: { type: "answer", answer: "1" },
  rewards: {},
});
const episode = (family: string, correct: boolean, turns: Turn[]): Trajectory => ({
  id: `${family}-${turns.length}-${correct}`,
  taskId: "t",
  family,
  policyId: "p",
  seed: 0,
  prompt: { text: "", tokenIds: [] },
  turns,
  finalAnswer: "1",
  correct,
  outcomeReward: correct ? 1 : 0,
  endReason: "answer",
});

test("rates: success per episode, statuses per call, retries per failure", () => {
  // Episode 1: error → retry ok → answer (correct). Episode 2: timeout → answer (gave up, wrong).
  const stats = rolloutStats([
    episode("lookup", true, [call(0, "error"), call(1, "ok"), answer(2)]),
    episode("bridge", false, [call(0, "timeout"), answer(1)]),
  ]);
  assert.equal(stats.episodes, 2);
  assert.equal(stats.success_rate, 0.5);
  assert.equal(stats.mean_turns, 2.5);
  assert.equal(stats.mean_tool_calls, 1.5);
  assert.deepEqual(stats.tool_status_rate, {
    ok: 1 / 3,
    error: 1 / 3,
    empty: 0,
    timeout: 1 / 3,
    corrupted: 0,
  });
  assert.equal(stats.tool_failure_rate, 2 / 3);
  assert.equal(stats.tool_injected_rate, 2 / 3);
  assert.equal(stats.retry_after_failure_rate, 0.5); // 2 failures, 1 followed by another call
  assert.equal(stats.mean_policy_tokens, (2 + 2 + 1 + 2 + 1) / 2);
  assert.deepEqual(stats.end_reasons, { answer: 2 });
});

test("no tool calls and no episodes give zeros and null, not NaN", () => {
  const empty = rolloutStats([]);
  assert.equal(empty.success_rate, 0);
  assert.equal(empty.retry_after_failure_rate, null);
  assert.equal(rolloutStats([episode("lookup", true, [answer(0)])]).tool_status_rate.ok, 0);
});

test("per-family split", () => {
  const { families, overall } = rolloutStatsByFamily([
    episode("lookup", true, [answer(0)]),
    episode("lookup", false, [answer(0)]),
    episode("chain", true, [answer(0)]),
  ]);
  assert.deepEqual(Object.keys(families), ["chain", "lookup"]);
  assert.equal(families.lookup.success_rate, 0.5);
  assert.equal(overall.success_rate, 2 / 3);
});
