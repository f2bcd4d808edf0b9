import assert from "node:assert/strict";
import { test } from "node:test";
import { ClassifiedError, countFailures, failureClass, infraFailure, isInfraFailure } from "./failure.ts";

test("failure class: recorded failure first, else policy for an episode that did not end correct", () => {
  assert.equal(failureClass({ correct: true }), null);
  assert.equal(failureClass({ correct: false }), "policy");
  const infra = infraFailure("upstream-5xx", "502 Bad Gateway");
  assert.equal(failureClass({ correct: false, failure: infra }), "infra");
  assert.equal(isInfraFailure({ failure: infra }), true);
  assert.equal(isInfraFailure({ failure: { class: "agent", code: "agent-threw", message: "x" } }), false);
  assert.deepEqual(
    countFailures([{ correct: true }, { correct: false }, { correct: false, failure: infra }]),
    { ok: 1, policy: 1, agent: 0, tool: 0, infra: 1 },
  );
  const error = new ClassifiedError(infra);
  assert.equal(error.message, "502 Bad Gateway");
  assert.equal(error.failure.class, "infra");
});
