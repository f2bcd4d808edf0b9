/**
 * The recipe's plan is pinned to a snapshot: every stage's name, order, `after` list, cache key and
 * cost for the three presets and a config that takes the other branches (given SFT models, the
 * adaptive expert, no model samples). The stage cache keys on each stage's config, so a refactor
 * of pipeline.ts that changed one config object would silently re-run that stage and every stage
 * after it in existing output folders; this test says which. A plan change that is meant (a new
 * stage, a new config field) updates the snapshot with `AGENTRL_UPDATE_PLAN_SNAPSHOT=1` and shows
 * in the diff which stages' caches it invalidates.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { test } from "node:test";
import { parseRecipeConfig, type RecipeConfig } from "./config.ts";
import { creditRunConfig } from "./pipeline/credit.ts";
import { noiseEvalN, noiseJudgedRate, recipeStages } from "./pipeline.ts";
import { stageKey } from "./stages.ts";

const SNAPSHOT = new URL("./pipeline.snapshot.json", import.meta.url);

const CONFIGS: Record<string, RecipeConfig> = {
  quick: parseRecipeConfig({}, "quick"),
  default: parseRecipeConfig({}, "default"),
  full: parseRecipeConfig({}, "full"),
  "quick-given-sft": parseRecipeConfig(
    {
      seeds: 2,
      sft: { models: { real: "models/sft-real", stitched: "models/sft-stitched" } },
      data: { expert: "expert-adapt", modelSamples: 0 },
      orchestra: { enabled: true },
    },
    "quick",
  ),
};

/** One line per stage: name, after, its cache key as `runStages` computes it (version 0), cost. */
function planSnapshot(config: RecipeConfig): string[] {
  const keys = new Map<string, string>();
  return recipeStages(config).map((stage) => {
    const key = stageKey(
      stage.name,
      { version: 0, config: stage.config },
      stage.after.map((dependency) => keys.get(dependency)!),
    );
    keys.set(stage.name, key);
    return `${stage.name} ← [${stage.after.join(", ")}] key ${key} cost ${stage.cost}`;
  });
}

test("the recipe's plan (names, order, after, cache keys, costs) equals its snapshot", () => {
  const actual = Object.fromEntries(
    Object.entries(CONFIGS).map(([name, config]) => [name, planSnapshot(config)]),
  );
  if (process.env.AGENTRL_UPDATE_PLAN_SNAPSHOT === "1") {
    writeFileSync(SNAPSHOT, `${JSON.stringify(actual, null, 1)}\n`);
  }
  const expected = JSON.parse(readFileSync(SNAPSHOT, "utf8")) as Record<string, string[]>;
  for (const name of Object.keys(CONFIGS)) assert.deepEqual(actual[name], expected[name], name);
  assert.deepEqual(Object.keys(expected), Object.keys(CONFIGS));
});

test("the noise runs are judged at their training noise with evalN samples a task; the curve's other rates get curveN", () => {
  const noise = { ...CONFIGS.default.noise, rates: [0, 0.1, 0.3], trainRate: 0.3, evalN: 12, curveN: 3 };
  assert.equal(noiseJudgedRate(noise), 0.3);
  assert.deepEqual(
    noise.rates.map((rate) => noiseEvalN(noise, rate)),
    [3, 3, 12],
  );
  // trained under a rate the evaluation leaves out: judged at the highest evaluated one
  const untested = { ...noise, trainRate: 0.2 };
  assert.equal(noiseJudgedRate(untested), 0.3);
  assert.deepEqual(
    untested.rates.map((rate) => noiseEvalN(untested, rate)),
    [3, 3, 12],
  );
});

test("credit.select: one pool stage, shared by every credit run at every seed, whose chains the runs train on", () => {
  const pooled = CONFIGS.default;
  assert.notEqual(pooled.credit.select, null);
  const stages = recipeStages(pooled);
  assert.deepEqual(
    stages.filter((stage) => stage.name.startsWith("credit-select")).map((stage) => stage.name),
    ["credit-select"],
  );
  const runs = stages.filter((stage) => /^credit-(grpo|mt-grpo|gigpo|gae)(@s\d)?$/.test(stage.name));
  assert.equal(runs.length, pooled.credit.estimators.length * pooled.seeds);
  for (const run of runs) assert.deepEqual(run.after, ["credit-select"], run.name);
  const taskIds = ["chain-1", "chain-2"];
  const rl = creditRunConfig(pooled, "grpo", "/tmp/credit", { "credit-select": { taskIds } });
  assert.deepEqual(rl.taskIds, taskIds);
  // without a pool: fresh chains of the family every step, and no stage to wait for
  const fresh = parseRecipeConfig({ credit: { select: null } }, "default");
  assert.equal(creditRunConfig(fresh, "grpo", "/tmp/credit", {}).taskIds, undefined);
  assert.deepEqual(creditRunConfig(fresh, "grpo", "/tmp/credit", {}).families, ["chain"]);
  const freshRuns = recipeStages(fresh).filter((stage) => stage.name.startsWith("credit-grpo"));
  for (const run of freshRuns) assert.deepEqual(run.after, []);
});
