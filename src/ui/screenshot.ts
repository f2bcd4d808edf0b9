/**
 * The README's screenshots of the dashboard: `node src/ui/screenshot.ts <runs> <out-prefix>` serves
 * the runs folder, opens the first run's page and its first episode with a tool failure in
 * headless Chromium (browser.ts), and writes `<out-prefix>-run.png` and `<out-prefix>-episode.png`.
 */
import { launchBrowser } from "./browser.ts";
import { startDashboard } from "./server.ts";

const [runsFolder = "runs", prefix = "docs/ui"] = process.argv.slice(2);
const dashboard = await startDashboard({ runs: runsFolder, port: 0 });
const chrome = await launchBrowser();
try {
  const page = await chrome.page({ width: 1500, height: 1000 });
  await page.goto(`${dashboard.url}/#/`);
  await page.waitForSelector("a.run-link");
  await page.click("a.run-link");
  await page.waitForSelector("figure.curve svg");
  await page.waitForSelector("tr.trajectory");
  await page.screenshot({ path: `${prefix}-run.png` });
  await page.selectOption('section.trajectories select[data-filter="tool"]', "timeout");
  await page.waitForSelector("tr.trajectory a.episode-link");
  await page.click("tr.trajectory a.episode-link");
  await page.waitForSelector("article.episode .tok");
  await page.selectOption("label:has-text('colour by') select", "advantage");
  const options = page.locator("label:has-text('beside it') option");
  const beside: string[] = [];
  for (let i = 0; i < (await options.count()); i++) {
    const value = await options.nth(i).getAttribute("value");
    if (value) beside.push(value);
  }
  if (beside.length > 0) {
    await page.selectOption("label:has-text('beside it') select", beside[0]);
    await page.waitForFunction(() => document.querySelectorAll("article.episode").length === 2);
  }
  await page.screenshot({ path: `${prefix}-episode.png` });
  if (chrome.errors.length > 0) throw new Error(`console errors:\n${chrome.errors.join("\n")}`);
  console.log(`wrote ${prefix}-run.png and ${prefix}-episode.png`);
} finally {
  await chrome.close();
  await dashboard.close();
}
