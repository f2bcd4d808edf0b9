import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { rolloutTasks } from "../env/task-set.ts";
import { readTaskList, taskSamplerFor, worldSampler } from "./tasks.ts";

const tasks = rolloutTasks({ split: "train", count: 6, seed: 4, family: "lookup" });
const ids = tasks.map((task) => task.id);

test("task files: tasks.jsonl of data select, a JSON list of ids, one id per line", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "agentrl-rl-tasks-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const jsonl = join(dir, "tasks.jsonl");
  writeFileSync(
    jsonl,
    `${tasks.map((task) => JSON.stringify({ ...task, metadata: { ...task.metadata, passRate: 0.5 } })).join("\n")}\n`,
  );
  const list = join(dir, "ids.json");
  writeFileSync(list, JSON.stringify(ids));
  const lines = join(dir, "ids.txt");
  writeFileSync(lines, `# selected\n${ids.join("\n")}\n`);
  for (const file of [jsonl, list, lines]) {
    const read = readTaskList(file);
    assert.deepEqual(
      read.map((task) => task.id),
      ids,
      file,
    );
    assert.deepEqual(
      read.map((task) => task.answer),
      tasks.map((task) => task.answer),
      file,
    );
  }
  // data select's rows come back whole (through the task-file reader's row conversion)
  assert.deepEqual(
    readTaskList(jsonl),
    tasks.map((task) => ({ ...task, metadata: { ...task.metadata, passRate: 0.5 } })),
  );
  const bad = join(dir, "bad.json");
  writeFileSync(bad, JSON.stringify([42]));
  assert.throws(() => readTaskList(bad), /entry 0 is neither a task id nor a task/);
});

test("draws are a function of (seed, step, round): distinct within a draw, reproducible", () => {
  const sampler = taskSamplerFor({ families: ["lookup"], taskIds: ids, perWorld: 2, seed: 1 });
  const draw = sampler.draw(3, 0, 4);
  assert.equal(new Set(draw.map((task) => task.id)).size, 4);
  assert.deepEqual(sampler.draw(3, 0, 4), draw);
  assert.notDeepEqual(
    sampler.draw(4, 0, 4).map((task) => task.id),
    draw.map((task) => task.id),
  );
  assert.equal(sampler.draw(1, 0, 9).length, 9, "past the pool: with replacement");
  const world = worldSampler(["lookup", "chain"], 2, 1);
  const fresh = world.draw(1, 0, 5);
  assert.deepEqual(
    fresh.map((task) => task.id),
    world.draw(1, 0, 5).map((task) => task.id),
  );
  assert.ok(fresh.every((task) => task.split === "train"));
  assert.deepEqual([...new Set(fresh.map((task) => task.family))].sort(), ["chain", "lookup"]);
  const heldout = worldSampler(["chain"], 1, 7, "test").draw(0, 0, 4);
  assert.ok(heldout.every((task) => task.split === "test" && task.family === "chain"));
});
