import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { loadRecipeConfigFile, PRESET_CONFIGS, parseRecipeConfig, RECIPE_PRESETS } from "./config.ts";
import { recipeStages, trainingSeeds } from "./pipeline.ts";

test("every preset validates and the presets grow in size", () => {
  for (const preset of RECIPE_PRESETS) assert.equal(parseRecipeConfig({}, preset).preset, preset);
  const episodes = (preset: (typeof RECIPE_PRESETS)[number]) => {
    const c = PRESET_CONFIGS[preset];
    return (c.eval.tasks + c.eval.withheldTasks) * c.eval.n + c.rl.steps * c.rl.tasksPerStep * c.rl.groupSize;
  };
  assert.ok(episodes("quick") < episodes("default"));
  assert.ok(episodes("default") < episodes("full"));
});

test("a partial config merges field by field over the preset", () => {
  const config = parseRecipeConfig({ rl: { steps: 3 }, eval: { noise: 0.3 } }, "quick");
  assert.equal(config.rl.steps, 3);
  assert.equal(config.rl.groupSize, PRESET_CONFIGS.quick.rl.groupSize);
  assert.equal(config.eval.noise, 0.3);
  assert.equal(config.eval.n, PRESET_CONFIGS.quick.eval.n);
  assert.equal(parseRecipeConfig({ preset: "full" }).preset, "full");
});

test("bad fields fail naming the field and, for choices, the valid values", () => {
  assert.throws(() => parseRecipeConfig({ rl: { steps: 0 } }), /rl\.steps/);
  assert.throws(() => parseRecipeConfig({ rl: { estimator: "ppo2" } }), /rl\.estimator.*grpo/s);
  assert.throws(() => parseRecipeConfig({ credit: { family: "poetry" } }), /credit\.family.*lookup/s);
  assert.throws(
    () => parseRecipeConfig({ noise: { naiveReward: "nope" } }),
    /noise\.naiveReward.*exact-match/s,
  );
  assert.throws(() => parseRecipeConfig({ eval: { noise: 2 } }), /eval\.noise/);
  assert.throws(() => parseRecipeConfig({ sft: { stepz: 3 } }), /sft.*stepz/);
  assert.throws(() => parseRecipeConfig({}, "huge" as never), /preset.*quick, default, full/);
  assert.throws(() => parseRecipeConfig([]), /JSON object/);
});

test("the checkpoints a preset names ship with the repository", () => {
  for (const preset of RECIPE_PRESETS) {
    const config = PRESET_CONFIGS[preset];
    const dirs = [config.bases.strong, config.bases.weak];
    if (config.orchestra.enabled) dirs.push(...config.orchestra.orchestrators.map((o) => o.dir));
    for (const dir of dirs) assert.ok(existsSync(join(dir, "checkpoint.json")), `${preset}: ${dir}`);
  }
  assert.equal(PRESET_CONFIGS.full.orchestra.enabled, true, "--full adds the orchestration section");
});

test("a config file's errors name the file: unreadable, invalid JSON (line and column), bad fields", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "agentrl-recipe-config-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const broken = join(dir, "broken.json");
  writeFileSync(broken, '{\n  "rl": { "steps": 3 },\n  oops\n}\n');
  assert.throws(
    () => loadRecipeConfigFile(broken),
    (error: Error) => {
      assert.match(error.message, /broken\.json:3:3: not valid JSON/);
      return true;
    },
  );
  const bad = join(dir, "bad.json");
  writeFileSync(bad, JSON.stringify({ eval: { n: 1 } }));
  assert.throws(() => loadRecipeConfigFile(bad), /bad\.json.*\n\s+eval\.n:/);
  assert.throws(() => loadRecipeConfigFile(join(dir, "missing.json")), /missing\.json: cannot read/);
  const good = join(dir, "good.json");
  writeFileSync(good, JSON.stringify({ rl: { steps: 3 } }));
  assert.equal(loadRecipeConfigFile(good, "quick").rl.steps, 3);
});

test("the plan: real data from the chosen expert and the strong base's own episodes; a paired final evaluation per credit run", () => {
  const plan = (override: object) => recipeStages(parseRecipeConfig(override, "quick"));
  const stages = plan({});
  const config = PRESET_CONFIGS.quick;
  for (const model of ["base", ...config.credit.estimators]) {
    const stage = stages.find((s) => s.name === `credit-eval-${model}`);
    assert.ok(stage, `credit-eval-${model}`);
    assert.deepEqual(stage.after, model === "base" ? [] : [`credit-${model}`]);
  }
  const dataReal = (override: object) =>
    plan(override).find((s) => s.name === "data-real")!.config as {
      data: Record<string, unknown>;
      base: string | null;
    };
  // the scripted source enters the key only when it is not the original expert (old runs keep their keys)
  assert.equal("expert" in dataReal({}).data, false);
  assert.equal(dataReal({ data: { expert: "expert-adapt" } }).data.expert, "expert-adapt");
  assert.equal(dataReal({}).base, config.bases.strong);
  assert.equal(dataReal({ data: { modelSamples: 0 } }).base, null);
  assert.throws(() => parseRecipeConfig({ data: { expert: "oracle" } }), /data\.expert/);
});

test("seeds: every trained arm and its evaluation at each training seed, reading that seed's replicas; shared stages once", () => {
  const config = parseRecipeConfig({ seed: 4, seeds: 3 }, "quick");
  const stages = recipeStages(config);
  const byName = new Map(stages.map((stage) => [stage.name, stage]));
  // the first seed keeps the plain names; later seeds get @s2, @s3
  for (const name of [
    "rl-sft-real",
    "eval-rl-sft-real",
    "sft-real",
    "credit-mt-grpo",
    "noise-rl-aware",
    "credit-fidelity",
  ]) {
    assert.ok(byName.has(name), name);
    assert.ok(byName.has(`${name}@s2`), `${name}@s2`);
    assert.ok(byName.has(`${name}@s3`), `${name}@s3`);
  }
  // a replica reads its own seed's replicated stages and the shared ones as they are
  assert.deepEqual(byName.get("rl-sft-real@s3")!.after, ["select", "sft-real@s3"]);
  assert.deepEqual(byName.get("sft-real@s2")!.after, ["data-real"]);
  // each replica trains at its own seed (seed + r), hashed into its key
  assert.equal((byName.get("rl-base@s3")!.config as { seed: number }).seed, 6);
  assert.equal((byName.get("rl-base")!.config as { seed: number }).seed, 4);
  // the bases' main evaluations, the pool, the data and the boundary scoring are shared
  for (const name of ["eval-base-strong", "select", "data-real", "boundary"]) {
    assert.ok(byName.has(name), name);
    assert.equal(byName.has(`${name}@s2`), false, `${name}@s2`);
  }
  assert.equal(new Set(stages.map((stage) => stage.name)).size, stages.length, "names are unique");
  assert.deepEqual(trainingSeeds(config), [4, 5, 6]);
  // one seed is today's plan
  assert.equal(
    recipeStages(parseRecipeConfig({ seeds: 1 }, "quick")).some((s) => s.name.includes("@s")),
    false,
  );
  assert.throws(() => parseRecipeConfig({ seeds: 0 }), /seeds/);
});

test("credit.testN below credit.groupSize fails naming the field (the signal claim would drop the chain tasks)", () => {
  assert.throws(
    () => parseRecipeConfig({ credit: { groupSize: 6, testN: 4 } }),
    /credit\.testN: must be at least credit\.groupSize/,
  );
  assert.equal(parseRecipeConfig({ credit: { groupSize: 4, testN: 4 } }).credit.testN, 4);
});
