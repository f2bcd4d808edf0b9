/**
 * The dashboard in headless Chromium (browser.ts), on runs written by the test (test-runs.ts):
 * the runs list with the unreadable files listed, a metric chart drawn and then updated in place
 * when the still-running run logs a new step, an episode's token view with one element per stored
 * token carrying its loss mask, log-prob and advantage, two episodes side by side, pass@k, the
 * comparison page, and no console error anywhere.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Page } from "playwright-core";
import { numberedTrajectory } from "../store/test-trajectories.ts";
import { flattenTrajectory, type Trajectory } from "../types/trajectory.ts";
import { launchBrowser, type TestBrowser } from "./browser.ts";
import { runKey } from "./run-catalog.ts";
import { type Dashboard, startDashboard } from "./server.ts";
import { createTestRuns, type TestRuns } from "./test-runs.ts";

let runs: TestRuns;
let dashboard: Dashboard;
let chrome: TestBrowser;
let page: Page;

before(async () => {
  runs = createTestRuns();
  dashboard = await startDashboard({ runs: runs.root, port: 0 });
  chrome = await launchBrowser();
  page = await chrome.page();
});

after(async () => {
  await chrome?.close();
  await dashboard?.close();
  runs?.close();
});

const rlKey = () => runKey("rl-test/store.sqlite", runs.rlRunId);

/** Points of the drawn (smoothed) line of a curve: one SVG path command per point. */
async function linePoints(key: string): Promise<number> {
  return page.$eval(`figure.curve[data-key="${key}"]`, (figure) => {
    const paths = Array.from(figure.querySelectorAll("g.mark-line path"));
    const d = paths.at(-1)?.getAttribute("d") ?? "";
    return (d.match(/[ML]/g) ?? []).length;
  });
}

/** What the token view must show for an episode: mask, log-prob as the page spells it, per token. */
function expectedTokens(trajectory: Trajectory): { mask: string; logprob: string }[] {
  const flat = flattenTrajectory(trajectory);
  const logprobs: string[] = trajectory.prompt.tokenIds.map(() => "");
  for (const turn of trajectory.turns) {
    logprobs.push(...turn.tokenIds.map((_, i) => (turn.logprobs ? String(turn.logprobs[i]) : "")));
    logprobs.push(...(turn.observation?.tokenIds ?? []).map(() => ""));
  }
  return flat.lossMask.map((mask, i) => ({ mask: String(mask), logprob: logprobs[i] }));
}

test("the runs list shows every run and lists unreadable store files with their error", async () => {
  await page.goto(`${dashboard.url}/#/`);
  await page.waitForSelector("tr.run");
  const rows = await page.$$eval("tr.run", (elements) =>
    elements.map((row) => ({ key: row.getAttribute("data-key"), status: row.getAttribute("data-status") })),
  );
  assert.deepEqual(rows, [
    { key: rlKey(), status: "running" },
    { key: runKey("rl-test/store.sqlite", runs.evalRunId), status: "completed" },
  ]);
  const broken = await page.$$eval("p.store-error", (elements) =>
    elements.map((element) => [element.getAttribute("data-file"), element.textContent ?? ""]),
  );
  assert.equal(broken.length, 2);
  assert.match(broken[0][0] ?? "", /corrupt\.sqlite/);
  assert.match(broken[0][1] ?? "", /not a database/);
  assert.match(broken[1][1] ?? "", /not an agentrl store/);
  // the config's "<b>…</b>" is shown as text, never parsed as markup
  assert.equal(await page.$$eval("td.config b", (elements) => elements.length), 0);
  assert.match((await page.textContent("tr.run td.config")) ?? "", /<b>not markup<\/b>/);
  // the search box filters
  await page.fill("input.search", "eval");
  assert.equal(await page.$$eval("tr.run", (elements) => elements.length), 1);
});

test("a run's metric chart is drawn, and a new step logged by the live run appears without reloading", async () => {
  await page.goto(`${dashboard.url}/#/run?run=${encodeURIComponent(rlKey())}`);
  await page.waitForSelector('figure.curve[data-key="loss/policy"] svg');
  const box = await page.$eval('figure.curve[data-key="loss/policy"] svg', (svg) => {
    const rect = svg.getBoundingClientRect();
    return { width: rect.width, height: rect.height };
  });
  assert.ok(box.width > 200 && box.height > 150, `chart drawn at ${box.width}x${box.height}`);
  assert.equal(await linePoints("loss/policy"), runs.steps, "one point per logged step");
  assert.equal(
    await page.getAttribute('figure.curve[data-key="loss/policy"] span.latest', "data-step"),
    String(runs.steps),
  );
  await page.evaluate(() => {
    (window as unknown as { marker: number }).marker = 42;
  });

  runs.rlStore.addMetrics(runs.rlRunId, runs.steps + 1, { "loss/policy": 0.1, "rollout/success_rate": 0.7 });
  await page.waitForSelector(
    `figure.curve[data-key="loss/policy"] span.latest[data-step="${runs.steps + 1}"]`,
    { timeout: 15_000 },
  );
  assert.equal(await linePoints("loss/policy"), runs.steps + 1, "the drawn line gained the new step");
  assert.equal(await page.evaluate(() => (window as unknown as { marker?: number }).marker), 42, "no reload");

  // a newly stored episode joins the trajectory list, also without reloading
  runs.rlStore.addTrajectory(runs.rlRunId, numberedTrajectory(9), { step: runs.steps + 1 });
  await page.waitForSelector('tr.trajectory[data-seq="4"]', { timeout: 15_000 });
  assert.equal(await page.evaluate(() => (window as unknown as { marker?: number }).marker), 42, "no reload");

  // a key ticked in the picker gets its own chart; NaN values are left out of the line
  await page.check('input[data-key="optim/grad_norm"]');
  await page.waitForSelector('figure.curve[data-key="optim/grad_norm"] svg');
  assert.equal(await linePoints("optim/grad_norm"), 3, "steps 1, 3, 5 (2 and 4 logged NaN)");
});

test("an episode's token view has one element per stored token with its mask, log-prob and advantage", async () => {
  await page.goto(`${dashboard.url}/#/run?run=${encodeURIComponent(rlKey())}`);
  await page.waitForSelector('tr.trajectory[data-seq="1"] a.episode-link');
  await page.click('tr.trajectory[data-seq="1"] a.episode-link');
  await page.waitForSelector('article.episode[data-seq="1"] .tok');
  const tokens = await page.$$eval('article.episode[data-seq="1"] .tok', (elements) =>
    elements.map((element) => ({
      mask: element.getAttribute("data-mask") ?? "?",
      logprob: element.getAttribute("data-logprob") ?? "?",
      advantage: element.getAttribute("data-advantage") ?? "?",
    })),
  );
  const episode = runs.episodes[0];
  const expected = expectedTokens(episode);
  assert.equal(tokens.length, flattenTrajectory(episode).tokenIds.length);
  assert.deepEqual(
    tokens.map(({ mask, logprob }) => ({ mask, logprob })),
    expected,
  );
  assert.ok(
    expected.some((token) => token.logprob === "-Infinity"),
    "the fixture holds a -Infinity log-prob",
  );
  // GRPO over the kept group [correct 1, wrong 0]: mean 0.5, sample std 1/√2 → 0.5 / (1/√2 + eps 1e-6) ≈ +0.70711 on every policy token
  for (const token of tokens) {
    if (token.mask === "1")
      assert.ok(Math.abs(Number(token.advantage) - Math.SQRT1_2) < 1e-5, token.advantage);
    else assert.equal(token.advantage, "");
  }
  // model output such as "<search> zenda </search>" is shown as text, never parsed into elements
  assert.equal(
    await page.$$eval("article.episode search, article.episode obs", (elements) => elements.length),
    0,
  );
  assert.match(
    (await page.textContent('article.episode[data-seq="1"] section.turn pre.text')) ?? "",
    /<search> zenda <\/search>/,
  );
  const injected = episode.turns.filter((turn) => turn.toolResult?.injected).length;
  assert.equal(await page.$$eval("article.episode .badge.injected", (elements) => elements.length), injected);
  assert.equal(
    await page.$$eval("article.episode section.turn", (elements) => elements.length),
    episode.turns.length,
  );

  // colour by log-prob: the -Infinity token is red (probability 0), a mask-0 token uncoloured
  await page.selectOption("label:has-text('colour by') select", "logprob");
  const colors = await page.$$eval('article.episode[data-seq="1"] .tok', (elements) =>
    elements.map((element) => (element as HTMLElement).style.background),
  );
  assert.ok(colors.some((color) => /rgb\(2\d\d, \d+, \d+\)/.test(color)));

  // the failure of the same task beside it
  await page.selectOption("label:has-text('beside it') select", "2");
  await page.waitForSelector('article.episode[data-seq="2"]');
  const columns = await page.$$eval("article.episode", (elements) =>
    elements.map((element) => element.className),
  );
  assert.deepEqual(columns, ["episode correct", "episode wrong"]);
  assert.equal(
    await page.$$eval('article.episode[data-seq="2"] .tok', (elements) => elements.length),
    flattenTrajectory(runs.episodes[1]).tokenIds.length,
  );
});

test("trajectory filters, pass@k of an eval run, the comparison page, and no console errors", async () => {
  await page.goto(`${dashboard.url}/#/run?run=${encodeURIComponent(rlKey())}`);
  await page.waitForSelector("tr.trajectory");
  await page.selectOption('section.trajectories select[data-filter="end"]', "format-error");
  await page.waitForFunction(() => document.querySelectorAll("tr.trajectory").length === 1);
  assert.equal(await page.getAttribute("tr.trajectory", "data-seq"), "3");

  await page.goto(
    `${dashboard.url}/#/run?run=${encodeURIComponent(runKey("rl-test/store.sqlite", runs.evalRunId))}`,
  );
  await page.waitForSelector("section.pass-at-k svg");
  const marks = await page.$$eval(
    "section.pass-at-k g.mark-symbol.role-mark path",
    (elements) => elements.length,
  );
  assert.equal(marks, 6, "pass@1,2,4 overall and for lookup");
  await page.waitForSelector("section.pass-hat-k svg");
  assert.equal(
    await page.$$eval("section.pass-hat-k g.mark-symbol.role-mark path", (elements) => elements.length),
    6,
    "pass^1,2,4 overall and for lookup, in their own chart",
  );
  assert.equal(await page.textContent("section.pass-hat-k h2"), "pass^k");
  assert.ok(await page.$("a.report-link"), "the report page found beside the store is linked");

  const compare = `#/compare?run=${encodeURIComponent(rlKey())}&run=${encodeURIComponent(runKey("rl-test/store.sqlite", runs.evalRunId))}`;
  await page.goto(`${dashboard.url}/${compare}`);
  await page.waitForSelector("section.curves figure.curve svg");
  assert.equal(await page.$$eval("section.compare li", (elements) => elements.length), 2);
  await page.waitForSelector("section.compare section.pass-at-k svg");
  assert.equal(
    await page.$$eval(
      "section.compare section.pass-at-k g.mark-symbol.role-mark path",
      (elements) => elements.length,
    ),
    3,
    "the eval run's overall pass@1,2,4",
  );
  await page.waitForSelector("section.compare section.pass-hat-k svg");
  assert.equal(
    await page.$$eval(
      "section.compare section.pass-hat-k g.mark-symbol.role-mark path",
      (elements) => elements.length,
    ),
    3,
    "the eval run's overall pass^1,2,4",
  );

  assert.deepEqual(chrome.errors, [], "no console error on any page so far");

  await page.goto(`${dashboard.url}/#/run?run=no-such-run`);
  await page.waitForSelector(".error-page");
  assert.match((await page.textContent(".error-page")) ?? "", /404: no run "no-such-run"/);
  // the browser logs the failed request itself; nothing else may be logged
  assert.ok(
    chrome.errors.length > 0 && chrome.errors.every((error) => /status of 404/.test(error)),
    chrome.errors.join("\n"),
  );
});
