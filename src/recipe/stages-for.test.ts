import assert from "node:assert/strict";
import { test } from "node:test";
import { register } from "../cli/commands/recipe.ts";
import { runCli } from "../cli/testing.ts";
import { parseRecipeConfig } from "./config.ts";
import { recipeStagesFor } from "./recipe.ts";

test("recipe --stages runs the named stages and every stage they read, in plan order", () => {
  const config = parseRecipeConfig({}, "quick");
  assert.deepEqual(
    recipeStagesFor(config, ["eval-sft-stitched"]).map((stage) => stage.name),
    ["data-stitched", "sft-stitched", "eval-sft-stitched"],
  );
  assert.deepEqual(
    recipeStagesFor(config, ["sft-real", "select"]).map((stage) => stage.name),
    ["select", "data-real", "sft-real"],
  );
});

test("recipe --stages with an unknown stage lists the stages", async () => {
  await assert.rejects(
    runCli(register, ["recipe", "--quick", "--stages", "select,nope", "--out", "unused"]),
    /recipe: no stage nope; stages: eval-base-strong, eval-base-weak, select, /,
  );
});
