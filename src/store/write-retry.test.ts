import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { injectedFaultCounts, withFaults } from "../core/faults.ts";
import { evaluate } from "../eval/run-eval.ts";
import { scriptedPolicy } from "../policy/scripted/index.ts";
import { ClassifiedError } from "../types/failure.ts";
import { openRunDirectory } from "./index.ts";
import { retryingWrite, STORE_WRITE_ATTEMPTS } from "./write-retry.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-store-faults-"));
after(() => rmSync(root, { recursive: true, force: true }));

const sqliteError = (errcode: number) => Object.assign(new Error(`sqlite ${errcode}`), { errcode });

test("retryingWrite: busy/IO errors retried, then an infra store-write-failed; other errors at once", () => {
  let calls = 0;
  assert.equal(
    retryingWrite("w", "k", () => {
      if (++calls < STORE_WRITE_ATTEMPTS) throw sqliteError(5); // SQLITE_BUSY
      return "ok";
    }),
    "ok",
  );
  calls = 0;
  assert.throws(
    () =>
      retryingWrite("storing x", "k", () => {
        calls++;
        throw sqliteError(10 | (3 << 8)); // SQLITE_IOERR_WRITE
      }),
    (error: unknown) =>
      error instanceof ClassifiedError &&
      error.failure.class === "infra" &&
      error.failure.code === "store-write-failed" &&
      error.message.startsWith("storing x: 3 attempts failed"),
  );
  assert.equal(calls, STORE_WRITE_ATTEMPTS);
  calls = 0;
  assert.throws(
    () =>
      retryingWrite("w", "k", () => {
        calls++;
        throw sqliteError(19); // SQLITE_CONSTRAINT: a bug, not the disk
      }),
    /sqlite 19/,
  );
  assert.equal(calls, 1);
});

async function storedIds(runId: string, spec: string | undefined) {
  return withFaults(spec, async () => {
    const result = await evaluate({
      policy: scriptedPolicy("vague"),
      tasks: { type: "world", split: "test", count: 8, seed: 4 },
      n: 3,
      runsRoot: root,
      runId,
      curves: { bootstrap: false },
    });
    const store = openRunDirectory(result.directory!);
    try {
      return {
        ids: store.trajectories(runId).map((t) => t.id),
        faults: injectedFaultCounts()["sqlite-write"],
      };
    } finally {
      store.close();
    }
  });
}

test("eval under sqlite-write faults: every episode stored exactly once; a disk that never takes a write stops the run as infra", async () => {
  const clean = await storedIds("clean", undefined);
  const faulted = await storedIds("faulted", "seed=5,sqlite-write=0.3");
  assert.ok(faulted.faults > 0, "no write fault injected");
  assert.deepEqual([...faulted.ids].sort(), [...clean.ids].sort());
  console.log(`store: ${faulted.faults} sqlite-write faults injected, 0 episodes lost or duplicated`);
  await withFaults("seed=3,sqlite-write=1", async () => {
    await assert.rejects(
      evaluate({
        policy: scriptedPolicy("vague"),
        tasks: { type: "world", split: "test", count: 2, seed: 4 },
        n: 1,
        runsRoot: root,
        runId: "dead-disk",
      }),
      (error: unknown) => error instanceof ClassifiedError && error.failure.code === "store-write-failed",
    );
  });
});
