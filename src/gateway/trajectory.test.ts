/**
 * Calls → trajectory, on hand-written calls: the merge rule (next prompt = previous prompt +
 * completion + observation, exactly), a forced prefix break (split and counted, each segment an
 * exact context), the choice a later call continues when n > 1, and calls without token ids.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { countToolCalls, flattenTrajectory } from "../types/trajectory.ts";
import { buildTrajectory, type GatewayInfo, trajectorySegments } from "./trajectory.ts";
import type { GatewayCall, RecordedChoice } from "./types.ts";

function choice(partial: Partial<RecordedChoice>): RecordedChoice {
  return {
    index: 0,
    content: null,
    toolCalls: [],
    finishReason: "stop",
    tokenIds: null,
    logprobs: null,
    ...partial,
  };
}

function call(
  seq: number,
  messages: unknown[],
  promptTokenIds: number[] | null,
  choices: RecordedChoice[],
): GatewayCall {
  return {
    episodeId: "ep",
    seq,
    api: "chat",
    startedAt: "2026-01-01T00:00:00.000Z",
    latencyMs: 1,
    stream: false,
    request: { messages },
    response: {},
    promptTokenIds,
    choices,
    usage: null,
  };
}

const question = { role: "user", content: "population of zenda ?" };
const search = choice({
  toolCalls: [{ id: "c1", name: "search", arguments: '{"query":"zenda"}' }],
  finishReason: "tool_calls",
  tokenIds: [10, 11, 12],
  logprobs: [-0.1, -0.2, -0.3],
});
const assistant = { role: "assistant", content: null, tool_calls: [{ id: "c1" }] };
const toolMessage = { role: "tool", tool_call_id: "c1", content: "zenda has 4213 people" };
const answer = choice({ content: "4213", tokenIds: [20, 21], logprobs: [-0.5, -0.6] });
const options = {
  episodeId: "ep",
  taskId: "t1",
  family: "lookup",
  policyId: "p",
  seed: 1,
  finalAnswer: "4213",
};

test("a next prompt that extends prompt + completion merges: observation ids are the difference", () => {
  // call 0: prompt [1 2 3] → [10 11 12]; call 1: prompt [1 2 3 10 11 12 30 31] → [20 21]: obs [30 31].
  const calls = [
    call(0, [question], [1, 2, 3], [search]),
    call(1, [question, assistant, toolMessage], [1, 2, 3, 10, 11, 12, 30, 31], [answer]),
  ];
  const { trajectory, prefixBreaks } = buildTrajectory(calls, options);
  assert.equal(prefixBreaks, 0);
  assert.equal(trajectory.endReason, "answer");
  assert.deepEqual(trajectory.turns[0].action, {
    type: "tool-call",
    tool: "search",
    arguments: { query: "zenda" },
    callId: "c1",
  });
  assert.deepEqual(trajectory.turns[0].toolResult?.content, "zenda has 4213 people");
  assert.deepEqual(trajectory.turns[0].observation, { text: "zenda has 4213 people", tokenIds: [30, 31] });
  assert.deepEqual(trajectory.turns[1].action, { type: "answer", answer: "4213" });
  const flat = flattenTrajectory(trajectory);
  assert.deepEqual(flat.tokenIds, [1, 2, 3, 10, 11, 12, 30, 31, 20, 21]);
  assert.deepEqual(flat.lossMask, [0, 0, 0, 1, 1, 1, 0, 0, 1, 1]);
  assert.deepEqual(flat.logprobs, [0, 0, 0, -0.1, -0.2, -0.3, 0, 0, -0.5, -0.6]);
  assert.equal(trajectorySegments(trajectory).length, 1);
});

test("a prompt that does not extend the last one is a counted break; each segment is an exact context", () => {
  // The client re-rendered the history: call 1's prompt starts [1 2 3 10 99 …], not [1 2 3 10 11 12].
  const calls = [
    call(0, [question], [1, 2, 3], [search]),
    call(1, [question, assistant, toolMessage], [1, 2, 3, 10, 99, 12, 30, 31], [answer]),
  ];
  const { trajectory, prefixBreaks } = buildTrajectory(calls, options);
  assert.equal(prefixBreaks, 1);
  // Expected [1 2 3 | 10 11 12]: the break is at index 4, inside the sampled ids; 2 tokens lost.
  const info = trajectory.info?.gateway as GatewayInfo;
  assert.deepEqual(info.prefixBreakSites, { prompt: 0, sampled: 1, short: 0 });
  assert.equal(info.prefixLostTokens, 2);
  assert.equal(trajectory.turns.length, 2, "every turn's text is kept");
  assert.deepEqual(flattenTrajectory(trajectory).tokenIds, [1, 2, 3, 10, 11, 12], "first segment only");
  const segments = trajectorySegments(trajectory);
  assert.equal(segments.length, 2);
  assert.deepEqual(flattenTrajectory(segments[1]).tokenIds, [1, 2, 3, 10, 99, 12, 30, 31, 20, 21]);
  assert.deepEqual(flattenTrajectory(segments[1]).lossMask, [0, 0, 0, 0, 0, 0, 0, 0, 1, 1]);
  assert.equal(segments[1].turns[0].index, 0);
});

test("with n > 1 the turn is the choice the next prompt continues", () => {
  const other = choice({ ...search, index: 1, tokenIds: [40, 41], logprobs: [-1, -2] });
  const calls = [
    call(0, [question], [1], [{ ...search, index: 0 }, other]),
    call(1, [question, assistant, toolMessage], [1, 40, 41, 30], [answer]),
  ];
  const { trajectory, prefixBreaks } = buildTrajectory(calls, options);
  assert.equal(prefixBreaks, 0);
  assert.deepEqual(trajectory.turns[0].tokenIds, [40, 41]);
  assert.deepEqual(trajectory.turns[0].observation?.tokenIds, [30]);
});

test("calls without token ids give text-only turns (counted), never a break", () => {
  const calls = [
    call(0, [question], null, [{ ...search, tokenIds: null, logprobs: null }]),
    call(1, [question, assistant, toolMessage], null, [{ ...answer, tokenIds: null, logprobs: null }]),
  ];
  const { trajectory, prefixBreaks } = buildTrajectory(calls, options);
  assert.equal(prefixBreaks, 0);
  const info = trajectory.info?.gateway as { missingTokenIds: number } | undefined;
  assert.equal(info?.missingTokenIds, 2);
  assert.deepEqual(flattenTrajectory(trajectory).tokenIds, []);
  assert.equal(trajectory.turns[1].text, "4213");
});

test("failed calls are skipped; an error ends the episode as policy-error; posted rewards land", () => {
  const failed: GatewayCall = { ...call(1, [question], null, []), error: "malformed", response: null };
  const { trajectory } = buildTrajectory([call(0, [question], [1], [answer]), failed], {
    ...options,
    error: "malformed",
    reward: { reward: 0.5, turnRewards: { "0": 0.25 } },
  });
  assert.equal(trajectory.endReason, "policy-error");
  assert.equal(trajectory.outcomeReward, 0.5);
  assert.equal(trajectory.turns.length, 1);
  assert.equal(trajectory.turns[0].rewards.posted, 0.25);
});

test("malformed tool arguments are a format error, not a crash", () => {
  const bad = choice({
    toolCalls: [{ id: "c", name: "search", arguments: "{not json" }],
    tokenIds: [5],
    logprobs: [-1],
  });
  const { trajectory } = buildTrajectory([call(0, [question], [1], [bad])], {
    ...options,
    finalAnswer: null,
  });
  assert.equal(trajectory.turns[0].action.type, "format-error");
  assert.equal(trajectory.endReason, "format-error");
});

test("a turn that calls two tools keeps both calls, each with its own result; ids stay exact", () => {
  const both = choice({
    content: "let me look",
    toolCalls: [
      { id: "c1", name: "search", arguments: '{"query":"zenda"}' },
      { id: "c2", name: "calc", arguments: '{"expression":"2 * 3"}' },
    ],
    finishReason: "tool_calls",
    tokenIds: [10, 11, 12, 13],
    logprobs: [-0.1, -0.2, -0.3, -0.4],
  });
  const assistantBoth = {
    role: "assistant",
    content: "let me look",
    tool_calls: [{ id: "c1" }, { id: "c2" }],
  };
  const results = [
    { role: "tool", tool_call_id: "c1", content: "zenda has 4213 people" },
    { role: "tool", tool_call_id: "c2", content: "6" },
  ];
  const calls = [
    call(0, [question], [1, 2], [both]),
    call(1, [question, assistantBoth, ...results], [1, 2, 10, 11, 12, 13, 30, 31, 32], [answer]),
  ];
  const { trajectory, prefixBreaks } = buildTrajectory(calls, {
    ...options,
    reward: { turnRewards: { "0": 0.5, "1": 1 } },
  });
  assert.equal(prefixBreaks, 0);
  assert.equal(trajectory.turns.length, 3, "two tool-call turns and the answer");
  const [first, second, last] = trajectory.turns;
  assert.deepEqual(first.action, {
    type: "tool-call",
    tool: "search",
    arguments: { query: "zenda" },
    callId: "c1",
  });
  assert.deepEqual(second.action, {
    type: "tool-call",
    tool: "calc",
    arguments: { expression: "2 * 3" },
    callId: "c2",
  });
  assert.equal(first.text, "let me look");
  assert.deepEqual(first.tokenIds, [10, 11, 12, 13], "all sampled ids on the first call's turn");
  assert.deepEqual(second.tokenIds, []);
  assert.equal(first.toolResult?.content, "zenda has 4213 people");
  assert.equal(second.toolResult?.content, "6");
  assert.equal(first.observation, undefined);
  assert.deepEqual(second.observation, { text: "6", tokenIds: [30, 31, 32] });
  assert.deepEqual([first.index, second.index, last.index], [0, 1, 2]);
  // Posted turn rewards are per call: call 1 (the answer) is turn 2.
  assert.equal(first.rewards.posted, 0.5);
  assert.equal(last.rewards.posted, 1);
  assert.equal(second.rewards.posted, undefined);
  const flat = flattenTrajectory(trajectory);
  assert.deepEqual(flat.tokenIds, [1, 2, 10, 11, 12, 13, 30, 31, 32, 20, 21]);
  assert.deepEqual(flat.lossMask, [0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1]);
  assert.equal(countToolCalls(trajectory), 2);
});

test("an episode that ended right after an upstream failure is infra; one whose agent went on is not", () => {
  const broken: GatewayCall = {
    ...call(1, [question], null, []),
    response: null,
    error: "the upstream answered 503",
    failure: { class: "infra", code: "upstream-5xx", message: "the upstream answered 503" },
  };
  const first = call(0, [question], [1, 2], [search]);
  const ended = buildTrajectory([first, broken], { ...options, finalAnswer: null, error: "the agent threw" });
  assert.equal(ended.trajectory.endReason, "policy-error");
  assert.deepEqual(ended.trajectory.failure, broken.failure);
  // The agent retried after the failure and answered: its episode, not the infrastructure's.
  const retried = call(2, [question, assistant, toolMessage], [1, 2, 10, 11, 12, 30], [answer]);
  const recovered = buildTrajectory([first, broken, retried], { ...options, finalAnswer: "4213" });
  assert.equal(recovered.trajectory.endReason, "answer");
  assert.equal(recovered.trajectory.failure, undefined);
  // An agent that threw after a successful call is not infra either (run-episode makes it `agent`).
  const agentBug = buildTrajectory([first], { ...options, finalAnswer: null, error: "the agent threw" });
  assert.equal(agentBug.trajectory.failure, undefined);
});
