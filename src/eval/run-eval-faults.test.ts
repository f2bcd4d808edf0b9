/**
 * `evaluate` under AGENTRL_FAULTS (verifier faults: the faults that reach an eval of the embedded
 * world; the upstream and sandbox ones are exercised through the same loop in env/faults.test.ts):
 * the faulted episodes are counted and reported, never samples, and pass@k equals the fault-free
 * run's on the same episodes.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { describeFaults, injectedFaults, withFaults } from "../core/faults.ts";
import { scriptedPolicy } from "../policy/scripted/index.ts";
import { openRunDirectory } from "../store/index.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { passAtKCurves } from "./curves.ts";
import { evaluate } from "./run-eval.ts";
import { countByTask } from "./task-counts.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-eval-faults-"));
after(() => rmSync(root, { recursive: true, force: true }));

async function run(runId: string, spec: string | undefined) {
  return withFaults(spec, async () => {
    const result = await evaluate({
      policy: scriptedPolicy("vague"),
      tasks: { type: "world", split: "test", count: 10, seed: 3 },
      n: 4,
      runsRoot: root,
      runId,
      curves: { bootstrap: false },
    });
    const store = openRunDirectory(result.directory!);
    try {
      return { result, stored: store.trajectories(runId) as Trajectory[], faults: injectedFaults() };
    } finally {
      store.close();
    }
  });
}

test("eval under verifier faults: infra episodes counted and reported, pass@k as fault-free on the same episodes", async () => {
  const clean = await run("clean", undefined);
  const faulted = await run("faulted", "seed=9,verifier-error=0.1,verifier-timeout=0.1");
  const faultedIds = new Set(faulted.faults.map((fault) => fault.key.split(":")[0]));
  assert.ok(faultedIds.size > 0, "no fault injected");
  const infra = faulted.stored.filter((trajectory) => trajectory.failure?.class === "infra");
  assert.deepEqual(infra.map((trajectory) => trajectory.id).sort(), [...faultedIds].sort(), "misclassified");
  assert.ok(infra.every((trajectory) => trajectory.outcomeReward === null));

  const { totals, metrics, curves, counts } = faulted.result;
  assert.equal(totals.infraFailures, faultedIds.size);
  assert.equal(metrics["eval/infra_failures"], faultedIds.size);
  assert.equal(totals.samples + totals.infraFailures, clean.result.totals.samples);
  const json = JSON.parse(readFileSync(join(root, "faulted", "passk.json"), "utf8"));
  assert.equal(json.totals.infraFailures, faultedIds.size);

  const labels = clean.result.counts.map((count) => ({
    id: count.taskId,
    family: count.family,
    template: count.template,
  }));
  const cleanSame = clean.stored.filter((trajectory) => !faultedIds.has(trajectory.id));
  const expected = passAtKCurves(countByTask(cleanSame, labels), { ks: curves.ks, bootstrap: false });
  assert.deepEqual(curves, expected);
  assert.deepEqual(
    counts.map(({ taskId, n, c }) => [taskId, n, c]),
    countByTask(cleanSame, labels).map(({ taskId, n, c }) => [taskId, n, c]),
  );
  assert.ok(clean.result.curves.overall[0].passAtK > 0, "the vague policy solves some tasks");
  console.log(`eval: faults ${describeFaults(faulted.faults)}, misclassified 0`);
});

test("an eval whose every episode failed for an infra reason measures nothing, reports it, and still writes its files", async () => {
  const { result } = await run("all-infra", "seed=1,verifier-error=1");
  assert.equal(result.totals.samples, 0);
  assert.ok(result.totals.infraFailures > 0);
  assert.deepEqual(result.curves.ks, []);
  assert.ok(result.files && readFileSync(result.files.html, "utf8").includes("infra failures"));
});
