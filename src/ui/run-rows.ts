/**
 * What the dashboard's API says about runs: a row per run for the list (kind, status, config,
 * duration, parent, linked report), and the detail of one run (summary, metric keys, artifacts,
 * trajectory facets, pass@k curves read from its `…/pass@<k>` metrics).
 */
import type { RunRecord, Store } from "../store/index.ts";
import { type CatalogScan, type RunCatalog, runKey } from "./run-catalog.ts";
import { type TrajectoryFacets, trajectoryFacets } from "./trajectory-query.ts";

export interface RunRow {
  key: string;
  id: string;
  file: string;
  kind: string;
  status: string;
  parentKey: string | null;
  parentId: string | null;
  config: Record<string, unknown>;
  createdAt: string;
  finishedAt: string | null;
  /** Finished minus created, or now minus created while running. */
  durationSeconds: number;
  /** Path of the nearest report page (under /reports/), or null. */
  report: string | null;
}

export interface StoreRow {
  file: string;
  error: string | null;
  runs: RunRow[];
}

export interface PassAtKPoint {
  /** `eval` for the overall curve, `eval/<family>` for a family's. */
  series: string;
  k: number;
  value: number;
  step: number;
}

export interface RunDetail extends RunRow {
  summary: Record<string, unknown> | null;
  metricKeys: string[];
  artifacts: { kind: string; path: string; step: number | null }[];
  trajectories: TrajectoryFacets;
  passAtK: PassAtKPoint[];
  /** pass^k (all k samples correct) from the `<series>/pass^<k>` metrics, beside pass@k. */
  passHatK: PassAtKPoint[];
}

export function runRow(run: RunRecord, file: string, report: string | null, now = Date.now()): RunRow {
  const end = run.finishedAt ? Date.parse(run.finishedAt) : now;
  return {
    key: runKey(file, run.id),
    id: run.id,
    file,
    kind: run.kind,
    status: run.status,
    parentKey: run.parentId === null ? null : runKey(file, run.parentId),
    parentId: run.parentId,
    config: run.config,
    createdAt: run.createdAt,
    finishedAt: run.finishedAt,
    durationSeconds: Math.max(0, (end - Date.parse(run.createdAt)) / 1000),
    report,
  };
}

export function storeRows(catalog: RunCatalog, scan: CatalogScan): StoreRow[] {
  return scan.stores.map((store) => {
    const report = catalog.reportFor(store.file, scan.reports);
    return {
      file: store.file,
      error: store.error,
      runs: store.runs.map((run) => runRow(run, store.file, report)),
    };
  });
}

const PASS_AT_K = /^(.+)\/pass@(\d+)$/;
const PASS_HAT_K = /^(.+)\/pass\^(\d+)$/;

/**
 * The pass@k curves of a run: every `<series>/pass@<k>` metric at the latest step it was logged;
 * with `measure` "pass^k", the `<series>/pass^<k>` metrics instead.
 */
export function passAtKCurves(
  store: Store,
  runId: string,
  keys: readonly string[],
  measure: "pass@k" | "pass^k" = "pass@k",
): PassAtKPoint[] {
  const pattern = measure === "pass@k" ? PASS_AT_K : PASS_HAT_K;
  const points: PassAtKPoint[] = [];
  for (const key of keys) {
    const match = pattern.exec(key);
    if (!match) continue;
    const last = store.metrics(runId, key).at(-1);
    if (last && Number.isFinite(last.value)) {
      points.push({ series: match[1], k: Number(match[2]), value: last.value, step: last.step });
    }
  }
  return points.sort((a, b) => a.series.localeCompare(b.series) || a.k - b.k);
}

export function runDetail(store: Store, run: RunRecord, file: string, report: string | null): RunDetail {
  const metricKeys = store.metricKeys(run.id);
  return {
    ...runRow(run, file, report),
    summary: run.summary,
    metricKeys,
    artifacts: store.artifacts(run.id).map((artifact) => ({
      kind: artifact.kind,
      path: artifact.path,
      step: artifact.step,
    })),
    trajectories: trajectoryFacets(store, run.id),
    passAtK: passAtKCurves(store, run.id, metricKeys),
    passHatK: passAtKCurves(store, run.id, metricKeys, "pass^k"),
  };
}
