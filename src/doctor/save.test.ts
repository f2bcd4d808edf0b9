/**
 * A stored doctor run is what the dashboard lists: a `doctor` run whose summary is the report,
 * its page linked as the run's report, and its verdict drawn on the run page.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { launchBrowser } from "../ui/browser.ts";
import { runKey } from "../ui/run-catalog.ts";
import type { RunDetail, StoreRow } from "../ui/run-rows.ts";
import { startDashboard } from "../ui/server.ts";
import { runDoctor } from "./run-doctor.ts";
import { saveDoctorRun } from "./save.ts";

const root = mkdtempSync(join(tmpdir(), "doctor-runs-"));
after(() => rmSync(root, { recursive: true, force: true }));

test("a doctor run is stored with its page and shown by the dashboard", async () => {
  const report = await runDoctor({
    policySpec: "none",
    tasks: { type: "world", split: "test", count: 4, seed: 1, family: "chain" },
    reward: "mt-grpo",
    checks: ["verifier", "reward-hacking"],
  });
  const saved = await saveDoctorRun(report, { root, runId: "doctor-test" });
  assert.match(readFileSync(saved.files.html, "utf8"), /Verdict: not ready[\s\S]*tool-spam/);
  assert.equal(JSON.parse(readFileSync(saved.files.json, "utf8")).ready, false);

  const dashboard = await startDashboard({ runs: root, port: 0 });
  const chrome = await launchBrowser();
  try {
    const runs = (await (await fetch(`${dashboard.url}/api/runs`)).json()) as { stores: StoreRow[] };
    const row = runs.stores.flatMap((store) => store.runs).find((run) => run.id === "doctor-test");
    assert.equal(row?.kind, "doctor");
    assert.equal(row?.report, "doctor-test/report.html");
    const key = runKey("doctor-test/store.sqlite", "doctor-test");
    const detail = (await (
      await fetch(`${dashboard.url}/api/run?run=${encodeURIComponent(key)}`)
    ).json()) as RunDetail;
    assert.equal(detail.summary?.ready, false);
    assert.ok(detail.metricKeys.includes("doctor/reward-hacking/ok"));

    const page = await chrome.page();
    await page.goto(`${dashboard.url}/#/run?run=${encodeURIComponent(key)}`);
    await page.waitForSelector("section.doctor tr.doctor-check");
    assert.equal(await page.textContent("section.doctor h2"), "doctor: not ready");
    assert.deepEqual(
      await page.$$eval("section.doctor tr.doctor-check td:nth-child(2)", (cells) =>
        cells.map((c) => c.textContent),
      ),
      ["pass", "fail"],
    );
    assert.deepEqual(chrome.errors, []);
  } finally {
    await chrome.close();
    await dashboard.close();
  }
});
