import assert from "node:assert/strict";
import { test } from "node:test";
import type { RunRecord } from "../store/index.ts";
import { linkCheckpoints, runRow } from "./run-rows.ts";

const record = (id: string, kind: RunRecord["kind"], config: Record<string, unknown>): RunRecord => ({
  id,
  kind,
  status: "completed",
  parentId: null,
  config,
  summary: null,
  createdAt: "2026-01-01T00:00:00.000Z",
  finishedAt: "2026-01-01T00:01:00.000Z",
});

test("a stage run's row is named from its store path, or by the name it recorded; other runs by id", () => {
  const rl = record("run", "rl", {
    estimator: "gigpo",
    families: ["chain"],
    out: "r/stages/credit-gigpo@s2/model",
  });
  const row = runRow(rl, "r/stages/credit-gigpo@s2/run/store.sqlite", null);
  assert.deepEqual(
    [row.name, row.stage, row.seed, row.recipe, row.estimator, row.family],
    ["credit-gigpo@s2", "credit-gigpo", 2, "r", "gigpo", "chain"],
  );
  assert.equal(
    runRow(rl, "stages/rl-base/run/store.sqlite", null).recipe,
    ".",
    "the root itself is the recipe",
  );
  assert.equal(runRow(rl, "r/stages/x/run/store.sqlite", null, Date.now(), "x@s3").name, "x@s3");
  const plain = runRow(
    record("rl-20260101", "rl", { families: ["lookup", "chain"] }),
    "rl-20260101/store.sqlite",
    null,
  );
  assert.deepEqual([plain.name, plain.stage, plain.seed, plain.family], ["rl-20260101", null, null, "mixed"]);
});

test("an eval under its training run takes the run's name as parent, and its estimator and family", () => {
  const rl = runRow(
    record("run", "rl", { estimator: "gigpo", families: ["chain"], out: "r/stages/credit-gigpo@s2/model" }),
    "r/stages/credit-gigpo@s2/run/store.sqlite",
    null,
  );
  const evaluation = runRow(
    record("run", "eval", { policy: "r/stages/credit-gigpo@s2/model" }),
    "r/stages/credit-eval-gigpo@s2/run/store.sqlite",
    null,
  );
  linkCheckpoints([rl, evaluation]);
  assert.deepEqual(
    [
      evaluation.parentKey,
      evaluation.parentId,
      evaluation.parentName,
      evaluation.estimator,
      evaluation.family,
    ],
    [rl.key, "run", "credit-gigpo@s2", "gigpo", "chain"],
  );
  assert.equal(rl.parentKey, null);
});
