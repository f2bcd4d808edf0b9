import assert from "node:assert/strict";
import { test } from "node:test";
import { splitStage, stageRunName } from "./stage-run-name.ts";

test("a stage run is named <stage>@s<seed> from its store path, at every seed", () => {
  assert.deepEqual(stageRunName("runs/recipe-default/stages/credit-eval-gigpo@s2/run/store.sqlite", "run"), {
    name: "credit-eval-gigpo@s2",
    stage: "credit-eval-gigpo@s2",
    base: "credit-eval-gigpo",
    seed: 2,
    recipe: "runs/recipe-default",
  });
  // the first seed's stages (and the shared ones) carry no suffix in the plan: seed 1
  assert.equal(stageRunName("/tmp/q/stages/rl-base/run/store.sqlite", "run")?.name, "rl-base@s1");
  assert.equal(stageRunName("stages/rl-base/run/store.sqlite", "run")?.recipe, "");
});

test("folders between the stage and the run, and a run id other than its folder's, are kept", () => {
  assert.equal(
    stageRunName("r/stages/noise-eval-aware@s3/noise-0.3/run/store.sqlite", "run")?.name,
    "noise-eval-aware@s3/noise-0.3",
  );
  assert.equal(
    stageRunName("r/stages/data-real/dataset/store.sqlite", "dataset")?.name,
    "data-real@s1/dataset",
  );
  assert.equal(
    stageRunName("r/stages/rl-base/run/store.sqlite", "eval-child")?.name,
    "rl-base@s1/eval-child",
  );
});

test("a store outside a recipe's stages folder has no stage name", () => {
  assert.equal(stageRunName("runs/rl-20260101-000000/store.sqlite", "rl-20260101-000000"), null);
  assert.equal(stageRunName("stages/store.sqlite", "run"), null);
  assert.deepEqual(splitStage("eval-base-strong"), { base: "eval-base-strong", seed: 1 });
  assert.deepEqual(splitStage("credit-gae@s10"), { base: "credit-gae", seed: 10 });
});
