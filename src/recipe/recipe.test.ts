/**
 * The recipe end to end at the quick preset (what `npm start -- --quick` runs): every stage runs in
 * its child process, the report is written, every experiment has its verdicts, a second run reuses
 * every stage, and the page renders in a real browser (headless Chromium through playwright-core)
 * with its sections and drawn plots and without errors.
 *
 * The browser check needs Debian's `chromium` (`.ci/run` installs it; elsewhere `apt-get install
 * chromium`, or point AGENTRL_CHROMIUM at another Chromium). Without one the test fails, saying so.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import * as recipeCommand from "../cli/commands/recipe.ts";
import { runCli } from "../cli/testing.ts";
import { openRunDirectory } from "../store/index.ts";
import { VERDICT_STATUSES } from "./analysis.ts";
import type { RecipeComparison } from "./compare.ts";
import type { RecipeReport } from "./report.ts";
import { STAGE_RUN_NAME_KEY } from "./stage-run-name.ts";

const CHROMIUM = process.env.AGENTRL_CHROMIUM ?? "/usr/bin/chromium";
const folder = mkdtempSync(join(tmpdir(), "agentrl-recipe-"));
const out = join(folder, "quick");
after(() => rmSync(folder, { recursive: true, force: true }));

test("agentrl recipe --quick: every stage, the report and its verdicts; a rerun reuses every stage", {
  timeout: 900_000,
}, async () => {
  const first = await runCli(recipeCommand.register, ["recipe", "--quick", "--seeds", "2", "--out", out]);
  const html = join(out, "report.html");
  assert.ok(existsSync(html), "report.html written");
  assert.ok(
    first.out.some((line) => line.includes(html)),
    "the CLI prints the report's path",
  );
  const report = JSON.parse(readFileSync(join(out, "report.json"), "utf8")) as RecipeReport;
  assert.equal(report.preset, "quick");
  assert.equal(report.config.seeds, 2, "--seeds reaches the config");
  assert.ok(report.stages.length >= 25, `${report.stages.length} stages`);
  assert.ok(report.stages.every((stage) => !stage.cached));
  // every claim once, by its stable id, with an estimate per training seed; a claim called against
  // the seed carries a measured cause
  const ids = report.verdicts.map((v) => v.id);
  assert.equal(new Set(ids).size, ids.length, `ids unique: ${ids.join(", ")}`);
  for (const id of ["rl-raises-pass1", "mt-grpo-beats-grpo", "credit-fidelity", "variance-grows-with-length"])
    assert.ok(ids.includes(id), id);
  for (const verdict of report.verdicts) {
    assert.equal(verdict.seeds.length, report.config.seeds, `${verdict.id}: one estimate per seed`);
    if (verdict.status === "not reproduced")
      assert.ok(verdict.cause && verdict.cause.length > 10, verdict.id);
  }
  assert.ok(
    report.stages.some((stage) => stage.name === "rl-base@s2"),
    "the second seed's RL ran",
  );
  // each claim names the stages its experiment read, every seed's (the dashboard opens them)
  const planned = new Set(report.stages.map((stage) => stage.name));
  for (const verdict of report.verdicts) {
    assert.ok(verdict.stages && verdict.stages.length > 0, `${verdict.id}: stages`);
    for (const stage of verdict.stages) assert.ok(planned.has(stage), `${verdict.id} read ${stage}`);
  }
  // and each stage's run records its name when created (the dashboard's runs list shows it)
  for (const [folder, name] of [
    ["credit-eval-grpo@s2/run", "credit-eval-grpo@s2"],
    ["rl-base/run", "rl-base@s1"],
  ]) {
    const store = openRunDirectory(join(out, "stages", folder), { readOnly: true });
    try {
      assert.equal(store.getState("run", STAGE_RUN_NAME_KEY), name);
    } finally {
      store.close();
    }
  }
  const credit = report.verdicts.find((v) => v.id === "mt-grpo-beats-grpo")!.stages!;
  for (const stage of ["credit-grpo", "credit-grpo@s2", "credit-eval-mt-grpo", "credit-eval-mt-grpo@s2"])
    assert.ok(credit.includes(stage), `mt-grpo-beats-grpo read ${stage}: ${credit.join(", ")}`);
  // a comparison names the arms it compares (the dashboard narrows the claim to them); others none
  const compares = Object.fromEntries(report.verdicts.map((v) => [v.id, v.compares]));
  assert.deepEqual(compares["mt-grpo-beats-grpo"], ["credit-mt-grpo", "credit-grpo"]);
  assert.equal(compares["rl-raises-pass1"], undefined);
  for (const experiment of ["boundary", "data-first", "credit", "fidelity", "noise", "base"]) {
    const verdicts = report.verdicts.filter((v) => v.experiment === experiment);
    assert.ok(verdicts.length > 0, `${experiment} has verdicts`);
    for (const verdict of verdicts) {
      assert.ok(VERDICT_STATUSES.includes(verdict.status), verdict.status);
      assert.ok(verdict.evidence.length > 10, `${verdict.claim}: evidence`);
    }
  }
  // one arm per RL run and training seed (4 main-line starts, the credit estimators, 2 noise runs),
  // each with its start and end on the same tasks and `learned` following its interval
  const runs = 4 + report.config.credit.estimators.length + 2;
  assert.equal(report.arms.length, runs * report.config.seeds, "an arm per RL run and seed");
  for (const arm of report.arms) {
    assert.ok(arm.difference, `${arm.stage}: a paired difference`);
    assert.equal(arm.learned, arm.difference.interval.lower > 0, arm.stage);
    assert.ok(Math.abs(arm.end! - arm.start! - arm.difference.mean) < 1e-9, `${arm.stage}: end − start`);
  }
  // the numbers in report.json are the measured ones: the stored eval curves of the stages
  const boundary = report.experiments.boundary as { passAt1: { base: number; rl: number } };
  const stored = JSON.parse(readFileSync(join(out, "stages", "eval-base-strong", "stage.json"), "utf8"));
  assert.equal(boundary.passAt1.base, stored.result.curves.overall[0].passAtK);
  const page = readFileSync(html, "utf8");
  assert.ok(!/<script/i.test(page), "the page has no scripts");
  assert.ok((page.match(/<svg/g) ?? []).length >= 10, "plots are inlined");

  const second = await runCli(recipeCommand.register, [
    "recipe",
    "--quick",
    "--seeds",
    "2",
    "--out",
    out,
    "--json",
  ]);
  const json = JSON.parse(second.out.join("\n"));
  assert.equal(json.verdicts.length, report.verdicts.length);
  const again = JSON.parse(readFileSync(join(out, "report.json"), "utf8")) as RecipeReport;
  assert.ok(
    again.stages.every((stage) => stage.cached),
    "every stage cached on the second run",
  );
  assert.deepEqual(again.verdicts, report.verdicts, "the same stored results give the same verdicts");
});

test("recipe compare --by-seed: each column is the run's verdicts rebuilt from that training seed's stages alone", async () => {
  const report = JSON.parse(readFileSync(join(out, "report.json"), "utf8")) as RecipeReport;
  const { out: printed } = await runCli(recipeCommand.register, [
    "recipe",
    "compare",
    "--by-seed",
    out,
    "--json",
  ]);
  const comparison = JSON.parse(printed.join("\n")) as RecipeComparison;
  assert.equal(comparison.unit, "training seed");
  assert.deepEqual(
    comparison.runs.map((run) => run.seed),
    [report.config.seed, report.config.seed + 1],
  );
  // a seed's own estimate is what the pooled report lists for that seed; at least one claim differs
  // between the seeds, so a split that read the first seed's stages twice would fail here
  let compared = 0;
  let differing = 0;
  for (const verdict of report.verdicts) {
    const claim = comparison.claims.find((c) => c.id === verdict.id);
    assert.ok(claim, verdict.id);
    verdict.seeds.forEach((estimate, r) => {
      const mean = claim.verdicts[r]?.difference?.mean;
      if (estimate === null || mean === undefined) return;
      assert.ok(Math.abs(mean - estimate) < 1e-9, `${verdict.id} at seed ${r + 1}: ${mean} vs ${estimate}`);
      compared++;
    });
    if (verdict.seeds[0] !== null && verdict.seeds[0] !== verdict.seeds[1]) differing++;
  }
  assert.ok(
    compared >= 10 && differing > 0,
    `${compared} estimates compared, ${differing} claims differ by seed`,
  );
  // compare's --out is its own (the recipe's --out of the same name once took it)
  const table = join(folder, "by-seed.md");
  await runCli(recipeCommand.register, ["recipe", "compare", "--by-seed", out, "--out", table]);
  assert.match(readFileSync(table, "utf8"), /\| training seed \d+ alone \| training seed \d+ alone \|/);
  await assert.rejects(
    runCli(recipeCommand.register, ["recipe", "compare", "--by-seed", out, out]),
    /give one run folder, got 2/,
  );
});

test("the report renders in headless Chromium with every section and drawn plots, without errors", async () => {
  const html = join(out, "report.html");
  assert.ok(existsSync(html), "the recipe test above writes the report this test opens");
  assert.ok(
    existsSync(CHROMIUM),
    `no Chromium at ${CHROMIUM}: apt-get install chromium (what .ci/run does), or set AGENTRL_CHROMIUM`,
  );
  const { chromium } = await import("playwright-core");
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(message.text());
    });
    page.on("pageerror", (error) => errors.push(String(error)));
    await page.goto(pathToFileURL(html).href);
    const titles = await page.$$eval("h2", (elements) =>
      elements.map((element) => element.textContent ?? ""),
    );
    for (const expected of [
      "Summary",
      "1. Boundary",
      "2. Data first",
      "3. Credit assignment",
      "4. Tool noise",
      "5. Choosing the base",
      "Stages",
    ]) {
      assert.ok(
        titles.some((title) => title.startsWith(expected)),
        `section "${expected}" in ${titles.join(" | ")}`,
      );
    }
    const plots = await page.$$eval("figure > svg", (elements) =>
      elements.map((element) => {
        const box = element.getBoundingClientRect();
        return {
          width: box.width,
          height: box.height,
          marks: element.querySelectorAll("path, line, rect").length,
        };
      }),
    );
    assert.ok(plots.length >= 10, `${plots.length} plots`);
    for (const plot of plots) {
      assert.ok(plot.width > 100 && plot.height > 100, `a plot is drawn at ${plot.width}x${plot.height}`);
      assert.ok(plot.marks > 5, "a plot has marks");
    }
    const verdictRows = await page.$$eval(
      "table tr",
      (rows) =>
        rows.filter((row) => /REPRODUCED|INCONCLUSIVE|NOT MEASURED/.test(row.textContent ?? "")).length,
    );
    assert.ok(verdictRows > 5, `${verdictRows} verdict rows`);
    // status cells are coloured: green / red / amber backgrounds, one per verdict in the summary at least
    const toned = await page.$$eval("td[class^='tone-']", (cells) =>
      cells.map((cell) => getComputedStyle(cell).backgroundColor),
    );
    const report = JSON.parse(readFileSync(join(out, "report.json"), "utf8")) as RecipeReport;
    assert.ok(toned.length >= report.verdicts.length, `${toned.length} toned cells`);
    assert.ok(
      toned.every((color) => color !== "rgba(0, 0, 0, 0)"),
      "a toned cell has a background",
    );
    // one real trajectory of each source and one stitched trajectory are shown
    const text = (await page.textContent("body")) ?? "";
    assert.match(text, /real \(expert[^)]*\): CORRECT/);
    assert.match(text, /real \(models\/base-strong\): CORRECT/);
    assert.match(text, /stitched: CORRECT/);
    if (report.verdicts.some((v) => v.status === "not reproduced")) {
      assert.ok(
        titles.includes("Claims the lab calls against the article"),
        "claims called against the article have a section",
      );
    }
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
  }
});
