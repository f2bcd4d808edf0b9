/**
 * A doctor run on disk, where the dashboard finds it: a run directory `<root>/doctor-<time>/` whose
 * store holds one run of kind `doctor` (config: the setup; summary: the whole report; metrics:
 * `doctor/ready`, `doctor/<check>/ok`, `doctor/coverage/signal_share`), with the page beside it
 * as `report.html` (the dashboard links a run's nearest report page) and the report as
 * `doctor.json`.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRunDirectory } from "../store/index.ts";
import { doctorPage } from "./page.ts";
import type { DoctorReport } from "./types.ts";

export const DOCTOR_PAGE = "report.html";
export const DOCTOR_JSON = "doctor.json";

export interface SavedDoctorRun {
  directory: string;
  runId: string;
  files: { html: string; json: string };
}

export function doctorMetrics(report: DoctorReport): Record<string, number> {
  const metrics: Record<string, number> = { "doctor/ready": report.ready ? 1 : 0 };
  for (const check of report.checks) {
    if (!check.skipped) metrics[`doctor/${check.id}/ok`] = check.ok ? 1 : 0;
  }
  const overall = report.checks.find((check) => check.id === "coverage")?.data?.overall as
    | { signalShare: number; passAt1: number }
    | undefined;
  if (overall) {
    metrics["doctor/coverage/signal_share"] = overall.signalShare;
    metrics["doctor/coverage/pass@1"] = overall.passAt1;
  }
  return metrics;
}

export async function saveDoctorRun(
  report: DoctorReport,
  options: { root: string; runId?: string },
): Promise<SavedDoctorRun> {
  const { directory, store, run } = createRunDirectory({
    kind: "doctor",
    root: options.root,
    config: report.setup,
    ...(options.runId ? { id: options.runId } : {}),
  });
  try {
    const html = join(directory, DOCTOR_PAGE);
    const json = join(directory, DOCTOR_JSON);
    writeFileSync(html, await doctorPage(report));
    writeFileSync(json, `${JSON.stringify(report, null, 2)}\n`);
    store.addMetrics(run.id, 0, doctorMetrics(report));
    store.addArtifact(run.id, { kind: "report", path: DOCTOR_PAGE });
    store.addArtifact(run.id, { kind: "report", path: DOCTOR_JSON });
    store.finishRun(run.id, "completed", report as unknown as Record<string, unknown>);
    return { directory, runId: run.id, files: { html, json } };
  } catch (error) {
    store.finishRun(run.id, "failed", { error: String(error) });
    throw error;
  } finally {
    store.close();
  }
}
