/**
 * The id bookkeeping of an agent-server episode on hand-made calls: turn j takes call j's sampled
 * ids and log-probs, the observation between is what call j+1's prompt adds, and a prefix break
 * (or a call without ids) ends the exact part, so the response verl gets is always an exact prefix.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { recordedCall } from "../gateway/testing.ts";
import type { GatewayCall } from "../gateway/types.ts";
import type { Trajectory, Turn } from "../types/trajectory.ts";
import { verlSequence, withCallIds } from "./agent-server-episode.ts";

function call(seq: number, prompt: number[] | null, sampled: number[] | null, error?: string): GatewayCall {
  return recordedCall(seq, {
    promptTokenIds: prompt,
    choices: error
      ? []
      : [
          {
            index: 0,
            content: null,
            toolCalls: [],
            finishReason: "stop",
            tokenIds: sampled,
            logprobs: sampled ? sampled.map((id) => -id / 100) : null,
          },
        ],
    ...(error ? { error } : {}),
  });
}

function turn(index: number, observation: boolean): Turn {
  return {
    index,
    text: `turn ${index}`,
    tokenIds: [],
    logprobs: null,
    action: observation
      ? { type: "tool-call", tool: "search", arguments: { query: "q" } }
      : { type: "answer", answer: "a" },
    ...(observation ? { observation: { text: `obs ${index}`, tokenIds: [] } } : {}),
    rewards: {},
  };
}

function loop(turns: number): Trajectory {
  return {
    id: "t",
    taskId: "task",
    family: "lookup",
    policyId: "p",
    seed: 1,
    prompt: { text: "q", tokenIds: [] },
    turns: Array.from({ length: turns }, (_, i) => turn(i, i < turns - 1)),
    finalAnswer: "a",
    correct: true,
    outcomeReward: 1,
    endReason: "answer",
  };
}

test("exact calls: prompt, sampled ids (mask 1, their log-probs), observation ids between (mask 0), spans", () => {
  const calls = [
    call(0, [1, 2, 3], [10, 11]),
    call(1, [1, 2, 3, 10, 11, 50, 51], [12]),
    call(2, [1, 2, 3, 10, 11, 50, 51, 12, 60], [13, 14]),
  ];
  const { trajectory, prefixBreaks, aligned } = withCallIds(loop(3), calls);
  assert.equal(prefixBreaks, 0);
  assert.ok(aligned);
  const sequence = verlSequence(trajectory);
  assert.deepEqual(sequence.promptIds, [1, 2, 3]);
  assert.deepEqual(sequence.responseIds, [10, 11, 50, 51, 12, 60, 13, 14]);
  assert.deepEqual(sequence.mask, [1, 1, 0, 0, 1, 0, 1, 1]);
  assert.deepEqual(sequence.logprobs, [-0.1, -0.11, 0, 0, -0.12, 0, -0.13, -0.14]);
  assert.deepEqual(sequence.spans, [
    [0, 2],
    [4, 5],
    [6, 8],
  ]);
  // Texts, actions and the observations' text stay the loop's.
  assert.equal(trajectory.turns[0].observation?.text, "obs 0");
  assert.equal(trajectory.turns[1].action.type, "tool-call");
});

test("a prefix break ends the exact part: the response stops before the breaking call", () => {
  // Call 2's prompt re-renders turn 1 differently (11 → 99): not an extension of call 1's.
  const calls = [call(0, [1, 2], [10]), call(1, [1, 2, 10, 50], [11]), call(2, [1, 2, 10, 50, 99, 60], [12])];
  const { trajectory, prefixBreaks } = withCallIds(loop(3), calls);
  assert.equal(prefixBreaks, 1);
  const sequence = verlSequence(trajectory);
  assert.deepEqual(sequence.responseIds, [10, 50, 11]);
  assert.deepEqual(sequence.mask, [1, 0, 1]);
  assert.deepEqual(trajectory.turns[2].tokenIds, [], "the later turn keeps its text only");
  assert.equal(trajectory.turns[2].text, "turn 2");
});

test("calls without ids (an upstream without return_token_ids) give no response, not a made-up one", () => {
  const calls = [call(0, null, null), call(1, null, null)];
  const { trajectory } = withCallIds(loop(2), calls);
  const sequence = verlSequence(trajectory);
  assert.deepEqual(sequence.promptIds, []);
  assert.deepEqual(sequence.responseIds, []);
});

test("a failed call is not a turn; more turns than successful calls is flagged, not aligned by guess", () => {
  const calls = [call(0, [1], [10]), call(1, null, null, "HTTP 500")];
  const { aligned } = withCallIds(loop(2), calls);
  assert.equal(aligned, false);
  const ok = withCallIds(loop(1), calls);
  assert.ok(ok.aligned);
  assert.deepEqual(verlSequence(ok.trajectory).responseIds, [10]);
});
