import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { completedStageResult, runStages, type StageSpec, stageKey } from "./stages.ts";

/** A three-stage plan (a → b, c alone) that counts how often each stage's work ran. */
function plan(
  configs: { a: number; b: number; c: number },
  runs: Record<string, number>,
  failIn?: string,
): StageSpec[] {
  const work = (name: string, value: () => number) => async (context: { dir: string }) => {
    runs[name] = (runs[name] ?? 0) + 1;
    const partial = join(context.dir, "partial");
    const resumed = existsSync(partial);
    writeFileSync(partial, "started");
    if (failIn === name) throw new Error(`crash in ${name}`);
    return { value: value(), resumed };
  };
  let results: Record<string, unknown> = {};
  return [
    { name: "a", after: [], config: configs.a, cost: 1, run: work("a", () => configs.a * 10) },
    {
      name: "b",
      after: ["a"],
      config: configs.b,
      cost: 2,
      run: async (context, r) => {
        results = r;
        return work("b", () => (results.a as { value: number }).value + configs.b)(context);
      },
    },
    { name: "c", after: [], config: configs.c, cost: 1, run: work("c", () => configs.c) },
  ];
}

test("stage keys depend on name, config and the dependencies' keys, not on field order", () => {
  assert.equal(stageKey("a", { x: 1, y: 2 }, []), stageKey("a", { y: 2, x: 1 }, []));
  assert.notEqual(stageKey("a", { x: 1 }, []), stageKey("a", { x: 2 }, []));
  assert.notEqual(stageKey("a", { x: 1 }, []), stageKey("b", { x: 1 }, []));
  assert.notEqual(stageKey("a", { x: 1 }, ["k1"]), stageKey("a", { x: 1 }, ["k2"]));
});

test("completed stages are reused; a changed config redoes that stage and its dependents only", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-stages-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const runs: Record<string, number> = {};
  const first = await runStages(plan({ a: 1, b: 2, c: 3 }, runs), { root });
  assert.deepEqual(first.results.b, { value: 12, resumed: false });
  assert.deepEqual(runs, { a: 1, b: 1, c: 1 });

  const again = await runStages(plan({ a: 1, b: 2, c: 3 }, runs), { root });
  assert.deepEqual(runs, { a: 1, b: 1, c: 1 });
  assert.deepEqual(
    again.outcomes.map((o) => o.cached),
    [true, true, true],
  );
  assert.deepEqual(again.results.b, first.results.b);

  await runStages(plan({ a: 5, b: 2, c: 3 }, runs), { root });
  assert.deepEqual(runs, { a: 2, b: 2, c: 1 }, "a changed: a and b rerun, c is cached");
  const stored = JSON.parse(readFileSync(join(root, "stages", "b", "stage.json"), "utf8"));
  assert.equal(stored.status, "completed");
  assert.deepEqual(stored.result, { value: 52, resumed: false }, "b's folder was cleared for the new key");

  await runStages(plan({ a: 5, b: 2, c: 3 }, runs), { root, version: 2 });
  assert.deepEqual(runs, { a: 3, b: 3, c: 2 }, "a new version reruns everything");
});

test("a stage that crashed reruns in its own folder (what it stored is still there) and the plan completes", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-stages-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const runs: Record<string, number> = {};
  await assert.rejects(runStages(plan({ a: 1, b: 2, c: 3 }, runs, "b"), { root }), /crash in b/);
  assert.deepEqual(runs, { a: 1, b: 1 });
  const resumed = await runStages(plan({ a: 1, b: 2, c: 3 }, runs), { root });
  assert.deepEqual(runs, { a: 1, b: 2, c: 1 }, "only the crashed stage and those after it run");
  assert.deepEqual(resumed.results.b, { value: 12, resumed: true });
});

test("progress covers only the stages that run, and a plan naming a later stage as a dependency fails", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-stages-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const runs: Record<string, number> = {};
  await runStages(plan({ a: 1, b: 2, c: 3 }, runs).slice(0, 1), { root });
  const totals = new Set<number>();
  let last = 0;
  await runStages(plan({ a: 1, b: 2, c: 3 }, runs), {
    root,
    onProgress: ({ done, total }) => {
      totals.add(total);
      assert.ok(done >= last - 1e-9);
      last = done;
    },
  });
  assert.deepEqual([...totals], [3], "a is cached: the total is b's and c's cost");
  assert.equal(last, 3);
  const [a, b] = plan({ a: 1, b: 2, c: 3 }, runs);
  await assert.rejects(runStages([b, a], { root }), /needs "a", which does not come before it/);
});

test("with parallel 2, independent stages run side by side with a core each; dependents wait; a failure stops the rest", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-stages-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const log: string[] = [];
  const threads: Record<string, number | undefined> = {};
  const gate =
    (name: string, ms: number, fail = false) =>
    async (context: { threads?: number; signal?: AbortSignal }) => {
      log.push(`start ${name}`);
      threads[name] = context.threads;
      await new Promise((resolve) => setTimeout(resolve, ms));
      if (fail) throw new Error(`crash in ${name}`);
      if (context.signal?.aborted) throw new Error(`${name} aborted`);
      log.push(`end ${name}`);
      return name;
    };
  const stages = (failIn?: string): StageSpec[] => [
    { name: "slow", after: [], config: 1, cost: 2, run: gate("slow", 80, failIn === "slow") },
    { name: "fast", after: [], config: 1, cost: 1, run: gate("fast", 10, failIn === "fast") },
    { name: "join", after: ["slow", "fast"], config: 1, cost: 1, run: gate("join", 1) },
    { name: "after-fast", after: ["fast"], config: 1, cost: 1, run: gate("after-fast", 1) },
  ];
  const { results, outcomes } = await runStages(stages(), { root, parallel: 2, cores: 2 });
  assert.deepEqual(log.slice(0, 2), ["start slow", "start fast"], "both start at once");
  assert.ok(
    log.indexOf("start after-fast") < log.indexOf("end slow"),
    "fast's dependent does not wait for slow",
  );
  assert.ok(log.indexOf("start join") > log.indexOf("end slow"), "join waits for both");
  assert.deepEqual([threads.slow, threads.fast], [1, 1], "two at once: one core each");
  assert.equal(threads.join, 2, "alone: both cores");
  assert.deepEqual(results, { slow: "slow", fast: "fast", join: "join", "after-fast": "after-fast" });
  assert.deepEqual(
    outcomes.map((o) => o.name),
    ["slow", "fast", "join", "after-fast"],
    "outcomes in plan order",
  );

  const failing = mkdtempSync(join(tmpdir(), "agentrl-stages-"));
  t.after(() => rmSync(failing, { recursive: true, force: true }));
  log.length = 0;
  await assert.rejects(runStages(stages("fast"), { root: failing, parallel: 2 }), /crash in fast/);
  assert.ok(!log.includes("end slow"), "the stage running beside the failure was stopped");
  assert.ok(
    !log.includes("start join") && !log.includes("start after-fast"),
    "nothing starts after a failure",
  );
});

test("a moved pipeline folder keeps its cache, and stored paths follow it (relative and absolute roots)", async (t) => {
  const parent = mkdtempSync(join(tmpdir(), "agentrl-stages-move-"));
  t.after(() => rmSync(parent, { recursive: true, force: true }));
  let runs = 0;
  const stages: StageSpec[] = [
    {
      name: "model",
      after: [],
      config: 1,
      cost: 1,
      run: async (context) => {
        runs++;
        writeFileSync(join(context.dir, "weights"), "w");
        return { modelDir: context.dir, files: [join(context.dir, "weights")], note: "<root> is not a path" };
      },
    },
  ];
  const cwd = process.cwd();
  process.chdir(parent);
  t.after(() => process.chdir(cwd));
  // a relative root, as `--out runs/x` gives
  await runStages(stages, { root: "runs/first/" });
  const stored = JSON.parse(readFileSync(join(parent, "runs/first/stages/model/stage.json"), "utf8"));
  assert.equal(stored.result.modelDir, join("<root>", "stages", "model"));
  renameSync(join(parent, "runs/first"), join(parent, "moved"));
  const moved = await runStages(stages, { root: join(parent, "moved") });
  assert.equal(runs, 1, "the moved folder's stage is cached");
  const result = moved.results.model as { modelDir: string; files: string[]; note: string };
  assert.equal(result.modelDir, join(parent, "moved", "stages", "model"));
  assert.equal(readFileSync(result.files[0], "utf8"), "w");
  assert.equal(result.note, "<root> is not a path");
  assert.deepEqual(completedStageResult(join(parent, "moved"), "model"), result);
});
