import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { register } from "../cli/commands/recipe.ts";
import { runCli } from "../cli/testing.ts";
import { clearRecipeOutput, freshRefusal, markRecipeOutput, RECIPE_MARKER } from "./output-folder.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-recipe-out-"));
after(() => rmSync(root, { recursive: true, force: true }));

test("recipe --out . --fresh refuses the working folder and deletes nothing", async () => {
  // In a scratch working folder: were the guard broken, this test must not delete the checkout.
  const working = join(root, "working");
  mkdirSync(join(working, "stages"), { recursive: true });
  markRecipeOutput(working, "quick");
  const home = process.cwd();
  process.chdir(working);
  try {
    await assert.rejects(
      runCli(register, ["recipe", "--quick", "--out", ".", "--fresh"]),
      /recipe --fresh: \. is the working folder or holds it; refusing to delete it/,
    );
    await assert.rejects(
      runCli(register, ["recipe", "--quick", "--out", "..", "--fresh"]),
      /\.\. is the working folder or holds it/,
    );
  } finally {
    process.chdir(home);
  }
  assert.ok(existsSync(join(working, RECIPE_MARKER)), "the working folder is intact");
});

test("--fresh refuses a folder that is not a recipe output folder, or that holds anything else", async () => {
  const project = join(root, "project");
  mkdirSync(project);
  writeFileSync(join(project, "notes.txt"), "mine");
  await assert.rejects(
    runCli(register, ["recipe", "--quick", "--out", project, "--fresh"]),
    /is not a recipe output folder \(no \.agentrl-recipe or stages\/ in it\)/,
  );
  assert.ok(existsSync(join(project, "notes.txt")));

  const mixed = join(root, "mixed");
  mkdirSync(join(mixed, "stages"), { recursive: true });
  markRecipeOutput(mixed, "quick");
  writeFileSync(join(mixed, "thesis.tex"), "mine");
  assert.match(freshRefusal(mixed) ?? "", /holds files the recipe did not write \(thesis\.tex\)/);
  assert.throws(() => clearRecipeOutput(mixed), /refusing to delete it/);
  assert.ok(existsSync(join(mixed, "thesis.tex")));
});

test("--fresh deletes a recipe output folder, an empty folder, or nothing at all", () => {
  const out = join(root, "recipe-out");
  mkdirSync(join(out, "stages", "base"), { recursive: true });
  markRecipeOutput(out, "quick");
  writeFileSync(join(out, "report.json"), "{}");
  assert.ok(existsSync(join(out, RECIPE_MARKER)));
  clearRecipeOutput(out);
  assert.equal(existsSync(out), false);
  const empty = join(root, "empty");
  mkdirSync(empty);
  clearRecipeOutput(empty);
  assert.equal(existsSync(empty), false);
  assert.doesNotThrow(() => clearRecipeOutput(join(root, "never-made")));
});
