/**
 * The docs' screenshots of the recipe page: `node src/ui/screenshot-recipe.ts <runs> <out-prefix>
 * [claim] [arms]` serves the runs folder, opens its first recipe output in headless Chromium
 * (browser.ts) and writes `<out-prefix>.png` (the verdicts), `<out-prefix>-claim.png` (the claim,
 * default `mt-grpo-beats-grpo`, opened: each training arm's curves at every seed on one chart) and
 * `<out-prefix>-compare.png` (the arms, default `credit-grpo,credit-mt-grpo`, at the first seed on
 * the comparison page).
 */
import { launchBrowser } from "./browser.ts";
import { startDashboard } from "./server.ts";

const [
  runsFolder = "runs",
  prefix = "docs/ui-recipe",
  claim = "mt-grpo-beats-grpo",
  compared = "credit-grpo,credit-mt-grpo",
] = process.argv.slice(2);
const dashboard = await startDashboard({ runs: runsFolder, port: 0 });
const chrome = await launchBrowser();
try {
  const page = await chrome.page({ width: 1500, height: 1000 });
  await page.goto(`${dashboard.url}/#/`);
  await page.waitForSelector("a.recipe-link");
  await page.click("a.recipe-link");
  await page.waitForSelector("tr.verdict");
  await page.screenshot({ path: `${prefix}.png` });

  await page.click(`tr.verdict[data-claim="${claim}"] a.claim-link`);
  await page.waitForSelector('section.claim[data-loaded="true"]', { timeout: 60_000 });
  await page.locator("section.claim").scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${prefix}-claim.png` });

  // the compared arms only (default GRPO and MT-GRPO), at the first seed
  const inputs = page.locator("input[data-arm]");
  const arms: (string | null)[] = [];
  for (let i = 0; i < (await inputs.count()); i++) arms.push(await inputs.nth(i).getAttribute("data-arm"));
  for (const arm of arms)
    if (!compared.split(",").includes(arm ?? "")) await page.uncheck(`input[data-arm="${arm}"]`);
  await page.click("a.compare-seed >> nth=0");
  await page.waitForSelector("section.compare section.curves figure.curve svg");
  await page.waitForSelector("section.compare section.pass-at-k svg").catch(() => undefined);
  await page.screenshot({ path: `${prefix}-compare.png` });
  if (chrome.errors.length > 0) throw new Error(`console errors:\n${chrome.errors.join("\n")}`);
  console.log(`wrote ${prefix}.png, ${prefix}-claim.png and ${prefix}-compare.png`);
} finally {
  await chrome.close();
  await dashboard.close();
}
