import assert from "node:assert/strict";
import { test } from "node:test";
import type { Trajectory } from "../types/trajectory.ts";
import { recordedCall } from "./testing.ts";
import { refuseTextOnly, textOnlyCalls } from "./text-only.ts";
import { buildTrajectory } from "./trajectory.ts";

const options = { episodeId: "e", taskId: "t", family: "f", policyId: "p", seed: 1, finalAnswer: "4" };
const choice = (tokenIds: number[] | null) => ({
  index: 0,
  content: "4",
  toolCalls: [],
  finishReason: "stop",
  tokenIds,
  logprobs: null,
});

test("calls without any ids are labelled text-only with their server, and training refuses them by name", () => {
  const ollama = buildTrajectory([recordedCall(0, { choices: [choice(null)] })], {
    ...options,
    server: { kind: "ollama", version: "0.13.5", tokenIds: false },
  }).trajectory;
  const exact = buildTrajectory([recordedCall(0, { promptTokenIds: [1, 2], choices: [choice([3])] })], {
    ...options,
    server: { kind: "sglang", version: "0.5.9", tokenIds: true },
  }).trajectory;
  assert.deepEqual(ollama.info?.gateway, {
    ...(ollama.info?.gateway as object),
    textOnlyCalls: 1,
    server: { kind: "ollama", version: "0.13.5" },
  });
  assert.equal(textOnlyCalls([exact]).calls, 0);
  assert.doesNotThrow(() => refuseTextOnly([exact], "train"));
  assert.throws(
    () => refuseTextOnly([exact, ollama] as Trajectory[], "verl agent-server"),
    /verl agent-server: 1 call\(s\) were answered by Ollama without token ids.*text-only.*serve the model with vLLM/,
  );
});
