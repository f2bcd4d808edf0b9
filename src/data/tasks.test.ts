import assert from "node:assert/strict";
import { test } from "node:test";
import { datasetTasks } from "./tasks.ts";

test("datasetTasks over several families: equal shares, the remainder to the first, each share as one family draws it", () => {
  const families = ["bridge", "arithmetic", "chain"] as const;
  const tasks = datasetTasks({ count: 20, seed: 5, families });
  assert.equal(tasks.length, 20);
  const per = (family: string) => tasks.filter((task) => task.family === family);
  assert.deepEqual(
    families.map((family) => per(family).length),
    [7, 7, 6],
  );
  assert.equal(new Set(tasks.map((task) => task.id)).size, 20);
  // deterministic, and other options (the split, excluded templates) apply to every share
  assert.deepEqual(
    datasetTasks({ count: 20, seed: 5, families }).map((task) => task.id),
    tasks.map((task) => task.id),
  );
  const test = datasetTasks({ count: 9, seed: 5, families, split: "test" });
  assert.deepEqual(
    test.map((task) => task.family),
    [...Array(3).fill("bridge"), ...Array(3).fill("arithmetic"), ...Array(3).fill("chain")],
  );
  assert.ok(test.every((task) => !tasks.some((other) => other.id === task.id)));
  assert.throws(() => datasetTasks({ count: 4, seed: 5, families: [] }), /at least one family/);
  assert.throws(
    () => datasetTasks({ count: 4, seed: 5, families, family: "chain" }),
    /families, or family and templateShares, not both/,
  );
});
