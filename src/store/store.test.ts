import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import fc from "fast-check";
import { decodeJson, encodeJson } from "./json-codec.ts";
import {
  createRunDirectory,
  directoryRun,
  listRunDirectories,
  openRunDirectory,
  runStorePath,
} from "./run-directory.ts";
import { SCHEMA_VERSION } from "./schema.ts";
import { openStore, type Store } from "./store.ts";
import {
  chatTrajectory,
  formatErrorTrajectory,
  numberedTrajectory,
  richTrajectory,
  TEST_TOOL_SPECS,
} from "./test-trajectories.ts";
import { episodeKey } from "./trajectories.ts";
import { arbitraryTrajectory } from "./trajectory-arbitrary.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-store-"));
after(() => rmSync(root, { recursive: true, force: true }));

let counter = 0;
function freshStore(): Store {
  return openStore(join(root, `s${counter++}`, "store.sqlite"));
}

test("json codec keeps -0, NaN and infinities that plain JSON loses", () => {
  const value = { a: -0, b: Number.NaN, c: [Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0, 1.5] };
  assert.notDeepStrictEqual(JSON.parse(JSON.stringify(value)), value);
  assert.deepStrictEqual(decodeJson(encodeJson(value)), value);
  assert.ok(Object.is((decodeJson(encodeJson({ x: -0 })) as { x: number }).x, -0));
  // The text stays plain JSON.
  assert.deepStrictEqual(JSON.parse(encodeJson({ a: -0 })), { a: { $number: "-0" } });
  // Only exact tags are numbers; an own `__proto__` key stays a plain property.
  assert.deepStrictEqual(decodeJson('{"$number":"NaN","x":1}'), { $number: "NaN", x: 1 });
  const tricky = decodeJson('{"__proto__":{"a":{"$number":"-0"}}}') as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(tricky), Object.prototype);
  assert.ok(Object.hasOwn(tricky, "__proto__"));
  const own = Object.getOwnPropertyDescriptor(tricky, "__proto__")?.value as { a: number };
  assert.ok(Object.is(own.a, -0));
});

test("a fresh store records its schema version; reopening keeps the data", () => {
  const path = join(root, "reopen", "store.sqlite");
  const store = openStore(path);
  const version = store.database.connection.prepare("SELECT MAX(version) AS v FROM migrations").get();
  assert.equal(Number(version?.v), SCHEMA_VERSION);
  const run = store.createRun({ id: "r1", kind: "eval", config: { k: 4 } });
  store.addTrajectory(run.id, richTrajectory());
  store.close();
  const again = openStore(path);
  assert.equal(again.countTrajectories("r1"), 1);
  assert.deepStrictEqual(again.getRun("r1")?.config, { k: 4 });
  assert.equal(
    String(again.database.connection.prepare("PRAGMA journal_mode").get()?.journal_mode).toLowerCase(),
    "wal",
  );
  again.close();
});

test("a read-only store reads and refuses writes; a file that is no store is refused", () => {
  const path = join(root, "read-only", "store.sqlite");
  const writer = openStore(path);
  writer.createRun({ id: "r", kind: "eval" });
  writer.addTrajectory("r", richTrajectory());
  const reader = openStore(path, { readOnly: true });
  assert.deepStrictEqual(reader.trajectories("r"), [richTrajectory()]);
  assert.throws(() => reader.createRun({ id: "x", kind: "eval" }), /readonly/);
  reader.close();
  writer.close();
  const empty = join(root, "read-only", "empty.sqlite");
  const emptied = openStore(empty);
  emptied.database.connection.exec("DROP TABLE migrations");
  emptied.close();
  assert.throws(() => openStore(empty, { readOnly: true }), /not an agentrl store/);
});

test("a store written by a newer schema is refused", () => {
  const path = join(root, "newer", "store.sqlite");
  const store = openStore(path);
  store.database.connection
    .prepare("INSERT INTO migrations VALUES (?, 'future', 'now')")
    .run(SCHEMA_VERSION + 1);
  store.close();
  assert.throws(() => openStore(path), /newer than/);
});

test("runs: create, default ids, finish, reopen, parent and kind checks", () => {
  const store = freshStore();
  const parent = store.createRun({ kind: "recipe", config: { seed: 1 } });
  assert.match(parent.id, /^recipe-\d{8}-\d{6}$/);
  assert.equal(parent.status, "running");
  const second = store.createRun({ kind: "recipe" });
  assert.notEqual(second.id, parent.id);
  const child = store.createRun({ id: "sft-stage", kind: "sft", parentId: parent.id });
  assert.equal(child.parentId, parent.id);
  assert.throws(() => store.createRun({ id: "sft-stage", kind: "sft" }), /already exists/);
  assert.throws(() => store.createRun({ kind: "nope" as "sft" }), /valid kinds: rollout, eval/);
  assert.throws(() => store.createRun({ kind: "rl", parentId: "ghost" }), /parent run "ghost"/);

  const finished = store.finishRun(child.id, "completed", { "eval/pass@1": 0.5, loss: -0 });
  assert.equal(finished.status, "completed");
  assert.ok(finished.finishedAt);
  assert.deepStrictEqual(finished.summary, { "eval/pass@1": 0.5, loss: -0 });
  assert.throws(() => store.finishRun(child.id, "running" as "completed"), /invalid status/);
  const reopened = store.reopenRun(child.id);
  assert.equal(reopened.status, "running");
  assert.equal(reopened.finishedAt, null);

  assert.deepStrictEqual(
    store.listRuns({ parentId: parent.id }).map((run) => run.id),
    ["sft-stage"],
  );
  assert.equal(store.listRuns({ kind: "recipe" }).length, 2);
  assert.throws(() => store.requireRun("ghost"), /no run "ghost".*runs: recipe-/);
  store.close();
});

test("trajectories read back deep-equal to what was written", () => {
  const store = freshStore();
  const run = store.createRun({ id: "r", kind: "rollout" });
  const written = [richTrajectory(1), formatErrorTrajectory(2), chatTrajectory(3)];
  assert.equal(store.addTrajectories(run.id, written, { step: 4 }), 3);
  assert.deepStrictEqual(store.trajectories(run.id), written);
  const stored = [...store.iterateTrajectories(run.id)];
  assert.deepStrictEqual(
    stored.map((item) => [item.key, item.step, item.runId]),
    written.map((trajectory) => [trajectory.id, 4, "r"]),
  );
  assert.ok(stored[0].seq < stored[1].seq && stored[1].seq < stored[2].seq);
  store.close();
});

test("filters and counts by family, task, policy, correctness and step; limit and offset", () => {
  const store = freshStore();
  const run = store.createRun({ id: "r", kind: "rl" });
  for (let step = 0; step < 3; step++) {
    const batch = Array.from({ length: 6 }, (_, i) => numberedTrajectory(step * 6 + i));
    store.addTrajectories(run.id, batch, { step });
  }
  const all = store.trajectories(run.id);
  assert.equal(all.length, 18);
  const expect = (predicate: (i: number) => boolean) =>
    all.filter((_, i) => predicate(i)).map((trajectory) => trajectory.id);
  const ids = (filter: Parameters<Store["trajectories"]>[1]) =>
    store.trajectories(run.id, filter).map((t) => t.id);

  assert.deepStrictEqual(
    ids({ family: "bridge" }),
    expect((i) => i % 3 === 1),
  );
  assert.deepStrictEqual(
    ids({ taskId: "bulk/task-2" }),
    expect((i) => i % 5 === 2),
  );
  assert.deepStrictEqual(
    ids({ correct: true }),
    expect((i) => i % 2 === 0),
  );
  assert.deepStrictEqual(
    ids({ correct: false, step: 1 }),
    expect((i) => i % 2 === 1 && Math.floor(i / 6) === 1),
  );
  assert.deepStrictEqual(
    ids({ step: 2, limit: 2, offset: 1 }),
    expect((i) => i === 13 || i === 14),
  );
  assert.deepStrictEqual(ids({ policyId: "nobody" }), []);
  assert.equal(store.countTrajectories(run.id, { correct: true }), 9);
  assert.equal(store.countTrajectories(run.id, { family: "lookup", step: 0 }), 2);
  assert.equal(store.countTrajectories("other-run"), 0);
  store.close();
});

test("filter columns are filled from the trajectory", () => {
  const store = freshStore();
  const run = store.createRun({ id: "r", kind: "eval" });
  store.addTrajectory(run.id, richTrajectory(9), { key: "k" });
  const row = store.database.connection.prepare("SELECT * FROM trajectories").get();
  assert.deepStrictEqual(
    { ...row, seq: undefined, created_at: undefined, json: undefined },
    {
      seq: undefined,
      run_id: "r",
      key: "k",
      id: "w3/arithmetic/years-between/0#9",
      task_id: "w3/arithmetic/years-between/0",
      family: "arithmetic",
      policy_id: "base-v1",
      seed: 9,
      grp: 2,
      correct: 1,
      outcome_reward: 1,
      end_reason: "answer",
      n_turns: 7,
      n_tool_calls: 6,
      step: null,
      created_at: undefined,
      json: undefined,
    },
  );
  store.close();
});

test("episode keys make re-adding idempotent (first write wins)", () => {
  const store = freshStore();
  const run = store.createRun({ id: "eval", kind: "eval" });
  const first = richTrajectory(1);
  const key = episodeKey(first.taskId, 0);
  assert.equal(store.hasEpisode(run.id, key), false);
  assert.equal(store.addTrajectory(run.id, first, { key }), true);
  assert.equal(store.hasEpisode(run.id, key), true);
  const regenerated = { ...richTrajectory(1), finalAnswer: "61" };
  assert.equal(store.addTrajectory(run.id, regenerated, { key }), false);
  assert.deepStrictEqual(store.trajectories(run.id), [first]);
  // A batch with one old and one new key adds only the new one.
  const batch = [richTrajectory(1), richTrajectory(2)];
  assert.equal(store.addTrajectories(run.id, batch, { key: (t, i) => episodeKey(t.taskId, i) }), 1);
  assert.deepStrictEqual(store.episodeKeys(run.id), new Set([key, episodeKey(first.taskId, 1)]));
  store.close();
});

test("a failing batch writes nothing; a write to an unknown run names it", () => {
  const store = freshStore();
  const run = store.createRun({ id: "r", kind: "eval" });
  const bad = { ...richTrajectory(2), seed: 1.5 };
  assert.throws(() => store.addTrajectories(run.id, [richTrajectory(1), bad]), /seed must be an integer/);
  assert.equal(store.countTrajectories(run.id), 0);
  assert.throws(() => store.addTrajectory("ghost", richTrajectory()), /no run "ghost".*runs: r/);
  assert.throws(() => store.addMetrics("ghost", 0, { a: 1 }), /no run "ghost"/);
  store.close();
});

test("store.transaction commits several calls together or rolls all back", () => {
  const store = freshStore();
  const run = store.createRun({ id: "r", kind: "rl" });
  assert.throws(() =>
    store.transaction(() => {
      store.addTrajectories(run.id, [numberedTrajectory(1), numberedTrajectory(2)], { step: 0 });
      store.addMetrics(run.id, 0, { "loss/policy": 1 });
      store.setState(run.id, "last-step", 0);
      throw new Error("crash mid-step");
    }),
  );
  assert.equal(store.countTrajectories(run.id), 0);
  assert.deepStrictEqual(store.metrics(run.id), []);
  assert.equal(store.getState(run.id, "last-step"), undefined);
  store.transaction(() => {
    store.addTrajectory(run.id, numberedTrajectory(1), { step: 0 });
    store.setState(run.id, "last-step", 0);
  });
  assert.equal(store.countTrajectories(run.id), 1);
  assert.equal(store.getState(run.id, "last-step"), 0);
  assert.throws(() => store.transaction(() => Promise.resolve(1)), /must be synchronous/);
  assert.equal(store.database.connection.isTransaction, false);
  store.close();
});

test("metrics: series per key, same step replaces, NaN survives", () => {
  const store = freshStore();
  const run = store.createRun({ id: "r", kind: "rl" });
  store.addMetrics(run.id, 0, { "loss/policy": 0.5, "rollout/success_rate": 0.1 });
  store.addMetrics(run.id, 1, { "loss/policy": Number.NaN, "rollout/success_rate": 0.2 });
  store.addMetrics(run.id, 1, { "rollout/success_rate": 0.25 });
  store.addMetrics(run.id, 2, { "loss/policy": Number.POSITIVE_INFINITY });
  const series = store.metrics(run.id, "loss/policy").map((point) => [point.step, point.value]);
  assert.deepStrictEqual(series, [
    [0, 0.5],
    [1, Number.NaN],
    [2, Number.POSITIVE_INFINITY],
  ]);
  assert.deepStrictEqual(
    store.metrics(run.id, "rollout/success_rate").map((point) => point.value),
    [0.1, 0.25],
  );
  assert.equal(store.metrics(run.id).length, 5);
  assert.deepStrictEqual(store.metricKeys(run.id), ["loss/policy", "rollout/success_rate"]);
  assert.throws(() => store.addMetrics(run.id, 0.5, { a: 1 }), /step must be an integer/);
  assert.throws(() => store.addMetrics(run.id, 3, { a: "1" as unknown as number }), /must be a number/);
  store.close();
});

test("artifacts and state; truncateAfterStep rolls a run back to a checkpoint", () => {
  const store = freshStore();
  const run = store.createRun({ id: "r", kind: "rl" });
  for (let step = 0; step < 4; step++) {
    store.addTrajectory(run.id, numberedTrajectory(step), { step });
    store.addMetrics(run.id, step, { "loss/policy": step });
    if (step % 2 === 1)
      store.addArtifact(run.id, { kind: "checkpoint", path: `ckpt/${step}.safetensors`, step });
  }
  store.addArtifact(run.id, { kind: "report", path: "report.html", meta: { plots: 3 } });
  assert.deepStrictEqual(
    store.artifacts(run.id).map((artifact) => [artifact.kind, artifact.step]),
    [
      ["checkpoint", 1],
      ["checkpoint", 3],
      ["report", null],
    ],
  );
  assert.deepStrictEqual(store.artifacts(run.id, "report")[0].meta, { plots: 3 });
  assert.equal(store.latestArtifact(run.id, "checkpoint")?.path, "ckpt/3.safetensors");
  assert.equal(store.latestArtifact(run.id, "none"), undefined);

  store.setState(run.id, "stage/pretrain", { hash: "abc", loss: -0 });
  store.setState(run.id, "stage/pretrain", { hash: "def" });
  assert.deepStrictEqual(store.getState(run.id, "stage/pretrain"), { hash: "def" });
  assert.equal(store.getState(run.id, "missing"), undefined);
  assert.throws(() => store.setState(run.id, "x", undefined), /use deleteState/);
  store.setToolSpecs(run.id, TEST_TOOL_SPECS);
  assert.deepStrictEqual(store.toolSpecs(run.id), TEST_TOOL_SPECS);
  assert.deepStrictEqual(store.stateKeys(run.id), ["stage/pretrain", "tool-specs"]);
  assert.equal(store.deleteState(run.id, "stage/pretrain"), true);

  assert.deepStrictEqual(store.truncateAfterStep(run.id, 1), { trajectories: 2, metrics: 2, artifacts: 1 });
  assert.equal(store.countTrajectories(run.id), 2);
  assert.deepStrictEqual(
    store.metrics(run.id).map((point) => point.step),
    [0, 1],
  );
  assert.deepStrictEqual(
    store.artifacts(run.id).map((artifact) => artifact.path),
    ["ckpt/1.safetensors", "report.html"],
  );
  store.close();
});

test("run directories: create, clash suffixes, reopen, list, directory run", () => {
  const runsRoot = join(root, "runs");
  const a = createRunDirectory({ root: runsRoot, kind: "eval", config: { k: 8 } });
  const b = createRunDirectory({ root: runsRoot, kind: "eval" });
  assert.notEqual(a.directory, b.directory);
  assert.equal(a.run.id, a.directory.split("/").at(-1));
  assert.throws(() => createRunDirectory({ root: runsRoot, kind: "eval", id: a.run.id }), /already exists/);
  a.store.createRun({ id: "child", kind: "rollout", parentId: a.run.id });
  a.store.close();
  b.store.close();

  const reopened = openRunDirectory(a.directory);
  assert.equal(directoryRun(reopened, a.directory).id, a.run.id);
  reopened.close();
  assert.deepStrictEqual(listRunDirectories(runsRoot), [a.directory, b.directory].sort());
  assert.deepStrictEqual(listRunDirectories(join(root, "missing")), []);
  assert.throws(() => openRunDirectory(join(root, "missing")), /not a run directory/);

  // A store in a folder whose name is not a run id: the only top-level run stands for it.
  const loose = openStore(runStorePath(join(root, "loose")));
  loose.createRun({ id: "x", kind: "dataset" });
  assert.equal(directoryRun(loose, join(root, "loose")).id, "x");
  loose.createRun({ id: "y", kind: "dataset" });
  assert.throws(() => directoryRun(loose, join(root, "loose")), /holds: x, y/);
  loose.close();
});

test("two connections share one WAL store; an open iterator reads a snapshot", () => {
  const path = join(root, "shared", "store.sqlite");
  const writer = openStore(path);
  const reader = openStore(path);
  const run = writer.createRun({ id: "r", kind: "rollout" });
  writer.addTrajectory(run.id, numberedTrajectory(1));
  assert.equal(reader.countTrajectories("r"), 1);
  const iterator = reader.iterateTrajectories("r");
  assert.equal(iterator.next().value?.trajectory.id, "bulk/1");
  writer.addTrajectory(run.id, numberedTrajectory(2));
  // The live iterator holds the reader's read transaction open: its connection sees a snapshot.
  assert.equal(reader.countTrajectories("r"), 1);
  iterator.return(undefined);
  assert.equal(reader.countTrajectories("r"), 2);
  writer.close();
  reader.close();
});

test("property: any trajectory reads back from the store deep-equal", () => {
  const store = freshStore();
  const run = store.createRun({ id: "r", kind: "rollout" });
  let n = 0;
  fc.assert(
    fc.property(arbitraryTrajectory, (trajectory) => {
      const key = `k${n++}`;
      assert.equal(store.addTrajectory(run.id, trajectory, { key }), true);
      const [stored] = [...store.iterateTrajectories(run.id, { offset: n - 1, limit: 1 })];
      assert.equal(stored.key, key);
      assert.deepStrictEqual(stored.trajectory, trajectory);
    }),
    { numRuns: 200, seed: 7 },
  );
  store.close();
});
