import assert from "node:assert/strict";
import { test } from "node:test";
import { failureStatus, finishRunAfterError } from "./run-failure.ts";
import { openStore } from "./store.ts";

test("an abort is `interrupted`, any other error `failed`", () => {
  const aborted = new AbortController();
  aborted.abort();
  assert.equal(failureStatus(new Error("boom"), aborted.signal), "interrupted");
  assert.equal(failureStatus(new DOMException("stopped", "AbortError")), "interrupted");
  assert.equal(failureStatus(new Error("boom"), new AbortController().signal), "failed");
  assert.equal(failureStatus(new Error("boom")), "failed");
  assert.equal(failureStatus("a thrown string"), "failed");
});

test("finishRunAfterError records the status and the error; a failed write names both errors", () => {
  const store = openStore(":memory:");
  const run = store.createRun({ kind: "eval" });
  const aborted = new AbortController();
  aborted.abort();
  finishRunAfterError(store, run.id, new Error("stopped by Ctrl-C"), aborted.signal);
  assert.equal(store.requireRun(run.id).status, "interrupted");
  assert.deepEqual(store.requireRun(run.id).summary, { error: "Error: stopped by Ctrl-C" });
  finishRunAfterError(store, run.id, new Error("disk full"));
  assert.equal(store.requireRun(run.id).status, "failed");
  store.close();
  assert.throws(
    () => finishRunAfterError(store, run.id, new Error("the run's own error")),
    (error: Error) =>
      /could not mark run .* failed/.test(error.message) && /the run's own error/.test(error.message),
  );
});
