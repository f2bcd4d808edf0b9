import assert from "node:assert/strict";
import { test } from "node:test";
import { describeFaults, injectedFaults, withFaults } from "../core/faults.ts";
import { scriptedPolicy } from "../policy/scripted/index.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { collectTrajectories, INFRA_REJECTION } from "./collect.ts";
import { datasetTasks } from "./tasks.ts";

const tasks = datasetTasks({ count: 12, seed: 5 });

async function collect(spec: string | undefined, filter: "correct" | "all") {
  return withFaults(spec, async () => {
    const kept: Trajectory[] = [];
    const counts = await collectTrajectories({
      policy: scriptedPolicy("expert"),
      tasks,
      seed: 2,
      noise: 0,
      samplesPerTask: 3,
      maxKeptPerTask: 3,
      filter: filter === "all" ? [] : [{ type: "correct" }],
      onKept: (list) => {
        kept.push(...list);
      },
    });
    return { counts, kept, faults: injectedFaults() };
  });
}

test("data collect under verifier faults: infra episodes are never kept, whatever the filter, and are counted", async () => {
  const spec = "seed=4,verifier-error=0.15,verifier-timeout=0.1";
  const clean = await collect(undefined, "correct");
  assert.equal(clean.counts.infraFailures, 0);
  for (const filter of ["correct", "all"] as const) {
    const faulted = await collect(spec, filter);
    const faultedIds = new Set(faulted.faults.map((fault) => fault.key.split(":")[0]));
    assert.ok(faultedIds.size > 0, "no fault injected");
    assert.equal(faulted.counts.infraFailures, faultedIds.size);
    assert.equal(faulted.counts.rejections[INFRA_REJECTION], faultedIds.size);
    assert.ok(faulted.kept.every((trajectory) => !faultedIds.has(trajectory.id) && !trajectory.failure));
    // The expert answers everything correctly: what is kept is the fault-free run's, less the faulted.
    assert.deepEqual(
      faulted.kept.map((trajectory) => trajectory.id),
      clean.kept.map((trajectory) => trajectory.id).filter((id) => !faultedIds.has(id)),
    );
    console.log(`data collect (${filter}): faults ${describeFaults(faulted.faults)}, misclassified 0`);
  }
});
