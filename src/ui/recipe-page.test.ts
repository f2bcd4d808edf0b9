/**
 * The dashboard on a recipe output folder (testing-recipe.ts), in headless Chromium (browser.ts):
 * every stage run named `<stage>@s<seed>` with its estimator, family and seed, every evaluation of a
 * trained checkpoint under its training run; the recipe page's verdicts; a claim opening its arms
 * (the report's arms[], each training arm's seeds overlaid, each evaluation's pass@k per seed), two
 * arms compared at one seed, and from an evaluation to an episode's token view; no console error.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Page } from "playwright-core";
import { launchBrowser, type TestBrowser } from "./browser.ts";
import type { StoreRow } from "./run-rows.ts";
import { type Dashboard, startDashboard } from "./server.ts";
import { createTestRecipe, type TestRecipe } from "./testing-recipe.ts";

let recipe: TestRecipe;
let dashboard: Dashboard;
let chrome: TestBrowser;
let page: Page;

before(async () => {
  recipe = createTestRecipe();
  dashboard = await startDashboard({ runs: recipe.root, port: 0 });
  chrome = await launchBrowser();
  page = await chrome.page();
});

after(async () => {
  await chrome?.close();
  await dashboard?.close();
  recipe?.close();
});

const recipeUrl = (query: string) => `${dashboard.url}/#/recipe?path=${recipe.path}${query}`;

test("/api/runs names every stage run <stage>@s<seed> and gives each eval its training run as parent", async () => {
  const body = (await (await fetch(`${dashboard.url}/api/runs`)).json()) as {
    stores: StoreRow[];
    recipes: string[];
  };
  assert.deepEqual(body.recipes, [recipe.path]);
  const runs = body.stores.flatMap((store) => store.runs);
  assert.equal(runs.length, recipe.stages.length);
  assert.deepEqual(
    runs.map((run) => run.name).sort(),
    recipe.stages.map((s) => (s.includes("@") ? s : `${s}@s1`)).sort(),
  );
  const byName = new Map(runs.map((run) => [run.name, run]));
  const evalMt = byName.get("credit-eval-mt-grpo@s2")!;
  assert.equal(evalMt.parentKey, byName.get("credit-mt-grpo@s2")!.key);
  assert.equal(evalMt.parentName, "credit-mt-grpo@s2");
  assert.deepEqual(
    [evalMt.estimator, evalMt.family, evalMt.seed, evalMt.stage],
    ["mt-grpo", "chain", 2, "credit-eval-mt-grpo"],
  );
  assert.equal(byName.get("eval-base-strong@s1")!.parentKey, null, "a base model is no run's checkpoint");
  // only folders the scan found are read; an unknown claim is named
  const refused = await fetch(`${dashboard.url}/api/recipe?path=${encodeURIComponent("../runs")}`);
  assert.equal(refused.status, 404);
  assert.match(((await refused.json()) as { error: string }).error, /no recipe output "\.\.\/runs"/);
  const unknown = await fetch(`${dashboard.url}/api/claim?path=${recipe.path}&id=nope`);
  assert.equal(unknown.status, 404);
  assert.match(((await unknown.json()) as { error: string }).error, /no claim "nope"/);
  for (const run of runs.filter((r) => r.kind === "eval" && r.stage!.startsWith("credit-eval")))
    assert.equal(byName.get(run.parentName!)?.kind, "rl", `${run.name}'s parent`);
});

test("the runs list filters and groups by estimator, family and seed, and links the recipe", async () => {
  await page.goto(`${dashboard.url}/#/`);
  await page.waitForSelector("tr.run");
  assert.equal(await page.textContent("a.recipe-link"), recipe.path);
  await page.selectOption('select[data-filter="estimator"]', "mt-grpo");
  const names = await page.$$eval("tr.run a.run-link", (links) => links.map((a) => a.textContent));
  assert.deepEqual(names.sort(), [
    "credit-eval-mt-grpo@s1",
    "credit-eval-mt-grpo@s2",
    "credit-mt-grpo@s1",
    "credit-mt-grpo@s2",
  ]);
  await page.selectOption("label:has-text('group by') select", "seed");
  assert.deepEqual(
    await page.$$eval("tr.group", (rows) => rows.map((row) => row.getAttribute("data-group"))),
    ["1", "2"],
  );
});

test("the recipe page lists every claim; a claim opens its arms, their seeds overlaid, and pass@k", async () => {
  await page.goto(recipeUrl(""));
  await page.waitForSelector("tr.verdict");
  assert.deepEqual(
    await page.$$eval("tr.verdict", (rows) => rows.map((row) => row.getAttribute("data-claim"))),
    ["mt-grpo-beats-grpo", "rl-raises-pass1", "old-claim"],
  );
  assert.match(
    (await page.textContent('tr.verdict[data-claim="rl-raises-pass1"]')) ?? "",
    /Cause: an effect of the opposite sign/,
  );

  await page.click('tr.verdict[data-claim="mt-grpo-beats-grpo"] a.claim-link');
  await page.waitForSelector('section.claim[data-loaded="true"]');
  // the report's arms of the claim, whichever way the difference is spelled; rl-base is another claim's
  assert.deepEqual(
    await page.$$eval("table.arms-table tr.arm", (rows) =>
      rows.map((row) => Array.from(row.children, (cell) => cell.textContent)),
    ),
    [
      ["credit-grpo", "1", "chain", "grpo", "0.100", "0.150", "+0.050 [+0.010, +0.090]", "yes"],
      ["credit-mt-grpo@s2", "2", "chain", "mt-grpo", "0.100", "0.080", "-0.020 [-0.050, +0.010]", "no"],
    ],
  );
  assert.deepEqual(
    await page.$$eval("section.arm-group", (groups) =>
      groups.map((group) => group.getAttribute("data-stage")),
    ),
    ["credit-grpo", "credit-mt-grpo"],
  );
  // each arm's curve at both seeds on one chart: one latest value per seed
  const latest = await page.$$eval(
    'section.arm-group[data-stage="credit-grpo"] figure.curve[data-key="reward/mean"] span.latest',
    (spans) => spans.map((span) => [span.getAttribute("data-run"), span.getAttribute("data-step")]),
  );
  assert.deepEqual(latest, [
    ["credit-grpo@s1", "3"],
    ["credit-grpo@s2", "3"],
  ]);
  assert.deepEqual(
    await page.$$eval("section.eval-group", (groups) =>
      groups.map((group) => group.getAttribute("data-stage")),
    ),
    ["credit-eval-grpo", "credit-eval-mt-grpo"],
  );
  assert.equal(
    await page.$$eval(
      'section.eval-group[data-stage="credit-eval-grpo"] g.mark-symbol.role-mark path',
      (marks) => marks.length,
    ),
    6,
    "pass@1, 2, 4 at each of the two seeds",
  );

  // GRPO against MT-GRPO at seed 1, on the comparison page
  await page.click('a.compare-seed[data-seed="1"]');
  await page.waitForSelector("section.compare section.curves figure.curve svg");
  assert.deepEqual(await page.$$eval("section.compare li a", (links) => links.map((a) => a.textContent)), [
    "credit-grpo@s1",
    "credit-mt-grpo@s1",
  ]);
});

test("from a claim's evaluation to an episode's token view; an older report says why its claim has no runs", async () => {
  await page.goto(recipeUrl("&claim=mt-grpo-beats-grpo"));
  await page.waitForSelector('section.claim[data-loaded="true"]');
  await page.click('section.eval-group[data-stage="credit-eval-grpo"] li a.run-link >> nth=1');
  await page.waitForSelector("a.parent-link");
  assert.equal(await page.textContent("a.parent-link"), "parent credit-grpo@s2");
  await page.waitForSelector("tr.trajectory a.episode-link");
  await page.click("tr.trajectory a.episode-link");
  await page.waitForSelector("article.episode .tok");

  await page.goto(recipeUrl("&claim=old-claim"));
  await page.waitForSelector('section.claim[data-loaded="true"]');
  assert.ok(await page.$("section.claim p.stale"));
  assert.equal(await page.$$eval("section.arm-group, section.eval-group", (s) => s.length), 0);
  assert.deepEqual(chrome.errors, [], "no console error on any page");
});
