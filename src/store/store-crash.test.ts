import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { createRunDirectory } from "./run-directory.ts";
import { openStore } from "./store.ts";
import { numberedTrajectory } from "./test-trajectories.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-crash-"));
after(() => rmSync(root, { recursive: true, force: true }));
const writer = fileURLToPath(new URL("./crash-writer.ts", import.meta.url));

/**
 * Runs the writer (on this Node, `process.execPath`) until it reports `killAfter` episodes, waits
 * `delayMs` so the kill lands at an arbitrary point of its loop, SIGKILLs it and returns the last
 * count it reported.
 */
async function writeAndKill(
  path: string,
  batch: number,
  tokensPerTurn: number,
  killAfter: number,
  delayMs: number,
) {
  const child = spawn(process.execPath, [writer, path, "r", String(batch), String(tokensPerTurn)], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let lastReported = -1;
  let buffer = "";
  let stderr = "";
  let killing = false;
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  child.stdout.on("data", (chunk) => {
    buffer += chunk;
    const lines = buffer.split("\n");
    buffer = lines.pop() ?? "";
    for (const line of lines) lastReported = Number(line.split(" ")[1]);
    if (lastReported >= killAfter && !killing) {
      killing = true;
      sleep(delayMs).then(() => child.kill("SIGKILL"));
    }
  });
  // 'close' fires after the child's stdout is drained, so every line it wrote has been counted.
  const signal = await new Promise<NodeJS.Signals | null>((resolve) =>
    child.on("close", (_code, sig) => resolve(sig)),
  );
  assert.equal(signal, "SIGKILL", `writer ended without being killed: ${stderr}`);
  return lastReported;
}

for (const [batch, tokensPerTurn] of [
  [1, 400],
  [4, 200],
]) {
  test(`SIGKILL mid-write (batch ${batch}, 4 kills) loses no committed trajectory and corrupts nothing`, async () => {
    const path = join(root, `b${batch}`, "store.sqlite");
    const setup = openStore(path);
    setup.createRun({ id: "r", kind: "rollout" });
    setup.close();

    let count = 0;
    for (const delayMs of [0, 2, 5, 11]) {
      const lastReported = await writeAndKill(path, batch, tokensPerTurn, count + 20, delayMs);
      assert.ok(lastReported >= count + 20);

      const store = openStore(path);
      assert.deepStrictEqual(store.integrityCheck(), ["ok"]);
      count = store.countTrajectories("r");
      // Everything reported is there, plus at most the one batch committed after the last report.
      assert.ok(
        count === lastReported || count === lastReported + batch,
        `count ${count}, reported ${lastReported}`,
      );
      // The counter was written in the same transaction as its batch.
      assert.equal(store.getState("r", "committed"), count);
      const stored = store.trajectories("r");
      assert.equal(stored.length, count);
      stored.forEach((trajectory, i) => {
        assert.deepStrictEqual(trajectory, numberedTrajectory(i, tokensPerTurn));
      });
      store.close();
    }
  });
}

test("a run directory a killed creation left (empty, or a store without runs) is taken over by the same id", () => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-abandoned-"));
  try {
    mkdirSync(join(root, "empty"));
    const fromEmpty = createRunDirectory({ root, id: "empty", kind: "eval" });
    assert.equal(fromEmpty.run.id, "empty");
    fromEmpty.store.close();
    mkdirSync(join(root, "no-run"));
    openStore(join(root, "no-run", "store.sqlite")).close();
    const fromStore = createRunDirectory({ root, id: "no-run", kind: "eval" });
    assert.equal(fromStore.store.listRuns().length, 1);
    fromStore.store.close();
    assert.throws(() => createRunDirectory({ root, id: "empty", kind: "eval" }), /already exists/);
    mkdirSync(join(root, "mine"));
    writeFileSync(join(root, "mine", "notes.txt"), "");
    assert.throws(() => createRunDirectory({ root, id: "mine", kind: "eval" }), /already exists/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
