import assert from "node:assert/strict";
import { test } from "node:test";
import { recordedCall } from "../gateway/testing.ts";
import type { GatewayCall } from "../gateway/types.ts";
import { callFailure, FATAL_INFRA_CODES, statusFailure } from "./episode-failure.ts";

function call(
  seq: number,
  error: string | undefined,
  response: Record<string, unknown> | null = null,
): GatewayCall {
  return recordedCall(seq, { response, ...(error ? { error } : {}) });
}

test("an upstream's answer is classed by status and vLLM's message", () => {
  const codes = (status: number, message: string) => {
    const failure = statusFailure(status, message);
    return [failure.class, failure.code];
  };
  assert.deepEqual(codes(404, "The model `Qwen/Qwen3-4B` does not exist."), ["infra", "model-not-found"]);
  assert.deepEqual(codes(400, '"auto" tool choice requires --enable-auto-tool-choice'), [
    "infra",
    "upstream-4xx",
  ]);
  // The conversation outgrew the model: the policy's own length, trained on as such.
  assert.deepEqual(codes(400, "This model's maximum context length is 32768 tokens."), [
    "policy",
    "context-length",
  ]);
  assert.deepEqual(codes(503, "overloaded"), ["infra", "upstream-5xx"]);
  // A busy server (rate limit, request timeout) is transient: masked, never a fatal configuration error.
  assert.deepEqual(codes(429, "Too Many Requests"), ["infra", "upstream-overloaded"]);
  assert.ok(!(FATAL_INFRA_CODES as readonly string[]).includes(statusFailure(408, "timeout").code));
  assert.deepEqual([...FATAL_INFRA_CODES], ["upstream-4xx", "model-not-found", "no-token-ids"]);
});

test("an episode's failure is its first failed call's, with the upstream's message", () => {
  assert.equal(callFailure([call(0, undefined)]), null);
  const failure = callFailure([
    call(1, "the upstream could not be reached: ECONNREFUSED"),
    call(0, "the upstream answered 400", { error: { message: "bad tools" } }),
  ]);
  assert.deepEqual(failure, {
    class: "infra",
    code: "upstream-4xx",
    message: "the upstream answered 400: bad tools",
  });
  assert.equal(callFailure([call(0, "the upstream could not be reached: x")])?.code, "upstream-unreachable");
  assert.equal(
    callFailure([call(0, "malformed completion from the upstream: choices")])?.code,
    "upstream-malformed",
  );
});
