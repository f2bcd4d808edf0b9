/**
 * Headless Chromium for the dashboard's tests and its README screenshot: Debian's `chromium`
 * driven by playwright-core (nothing downloaded), as the recipe report test does, with every
 * console error and page error of every page collected. Point AGENTRL_CHROMIUM at another
 * Chromium if /usr/bin/chromium is not there (`apt-get install chromium`, what .ci/run does).
 */
import { existsSync } from "node:fs";
import type { Browser, Page } from "playwright-core";

export const CHROMIUM = process.env.AGENTRL_CHROMIUM ?? "/usr/bin/chromium";

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

export interface TestBrowser {
  browser: Browser;
  /** A new page whose console errors and uncaught errors land in `errors`. */
  page(viewport?: { width: number; height: number }): Promise<Page>;
  errors: string[];
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `no Chromium at ${CHROMIUM}: apt-get install chromium (what .ci/run does), or set AGENTRL_CHROMIUM`,
    );
  }
  const { chromium } = await import("playwright-core");
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  const errors: string[] = [];
  return {
    browser,
    errors,
    async page(viewport = { width: 1400, height: 900 }) {
      const page = await browser.newPage({ viewport });
      page.on("console", (message) => {
        if (message.type() === "error") errors.push(`${message.text()} (${message.location().url})`);
      });
      page.on("pageerror", (error) => errors.push(String(error)));
      return page;
    },
    close: () => browser.close(),
  };
}
