/**
 * What the dashboard's API says about runs: a row per run for the list (name, kind, estimator,
 * family, seed, status, config, duration, parent, linked report), and the detail of one run
 * (summary, metric keys, artifacts, trajectory facets, pass@k curves read from its `…/pass@<k>`
 * metrics).
 *
 * A recipe stage's run is named `<stage>@s<seed>` (recipe/stage-run-name.ts: recorded in the run
 * at creation, else read from its store's path), other runs by their id. A run without a parent
 * of its own gets the run whose checkpoint it starts from (run-lineage.ts), in whichever store
 * that is; an evaluation takes its training run's estimator and family.
 */
import { dirname, resolve } from "node:path";
import { STAGE_RUN_NAME_KEY, splitStage, stageRunName } from "../recipe/stage-run-name.ts";
import type { RunRecord, Store } from "../store/index.ts";
import { type CatalogScan, type RunCatalog, runKey } from "./run-catalog.ts";
import { checkpointParents } from "./run-lineage.ts";
import { type TrajectoryFacets, trajectoryFacets } from "./trajectory-query.ts";

export interface RunRow {
  key: string;
  id: string;
  /** What the run is: `credit-eval-gigpo@s2` for a recipe stage's run, else its id. */
  name: string;
  file: string;
  kind: string;
  /** The recipe stage without its seed (`credit-eval-gigpo`), or null outside a recipe. */
  stage: string | null;
  /** The recipe output folder holding the run (relative to the root, "." for the root), or null. */
  recipe: string | null;
  /** The training seed's place in a recipe (1, 2, …), or null outside a recipe. */
  seed: number | null;
  /** The RL advantage estimator (an evaluation: its training run's), or null. */
  estimator: string | null;
  /** The task family trained on (`mixed` for several; an evaluation: its training run's), or null. */
  family: string | null;
  status: string;
  parentKey: string | null;
  parentId: string | null;
  /** The parent's name (its `name` column), or null. */
  parentName: string | null;
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

export function runRow(
  run: RunRecord,
  file: string,
  report: string | null,
  now = Date.now(),
  recordedName?: unknown,
): RunRow {
  const end = run.finishedAt ? Date.parse(run.finishedAt) : now;
  const derived = stageRunName(file, run.id);
  const name = typeof recordedName === "string" ? recordedName : (derived?.name ?? run.id);
  const seeded = derived ? splitStage(derived.stage) : null;
  return {
    key: runKey(file, run.id),
    id: run.id,
    name,
    file,
    kind: run.kind,
    stage: seeded?.base ?? null,
    recipe: derived ? derived.recipe || "." : null,
    seed: seeded?.seed ?? null,
    estimator: run.kind === "rl" && typeof run.config.estimator === "string" ? run.config.estimator : null,
    family: familyOf(run),
    status: run.status,
    parentKey: run.parentId === null ? null : runKey(file, run.parentId),
    parentId: run.parentId,
    parentName: run.parentId,
    config: run.config,
    createdAt: run.createdAt,
    finishedAt: run.finishedAt,
    durationSeconds: Math.max(0, (end - Date.parse(run.createdAt)) / 1000),
    report,
  };
}

/** A trainer's family: the one it trained on, `mixed` for several, null when not recorded. */
function familyOf(run: RunRecord): string | null {
  const families = run.config.families;
  if (run.kind !== "rl" || !Array.isArray(families) || families.length === 0) return null;
  return families.length === 1 ? String(families[0]) : "mixed";
}

/** The name recorded in a recipe stage's run when it was created, if any. */
function recordedName(store: Store | null, runId: string): unknown {
  try {
    return store?.getState(runId, STAGE_RUN_NAME_KEY);
  } catch {
    return undefined; // a store from before the state table is read as unnamed
  }
}

export function storeRows(catalog: RunCatalog, scan: CatalogScan): StoreRow[] {
  const rows = scan.stores.map((store) => {
    const report = catalog.reportFor(store.file, scan.reports);
    const open = store.runs.length > 0 ? catalog.storeOf(store.file) : null;
    return {
      file: store.file,
      error: store.error,
      runs: store.runs.map((run) => runRow(run, store.file, report, Date.now(), recordedName(open, run.id))),
    };
  });
  linkCheckpoints(
    rows.flatMap((store) => store.runs),
    (file) => dirname(resolve(catalog.root, file)),
  );
  return rows;
}

/** Sets each run's parent to the run whose checkpoint it starts from, across stores; evals inherit its labels. */
export function linkCheckpoints(runs: RunRow[], directoryOf?: (file: string) => string): void {
  const byKey = new Map(runs.map((run) => [run.key, run]));
  const lineage = runs.map((run) => ({ ...run, directory: directoryOf?.(run.file) }));
  for (const [key, parentKey] of checkpointParents(lineage)) {
    const run = byKey.get(key)!;
    const parent = byKey.get(parentKey)!;
    run.parentKey = parent.key;
    run.parentId = parent.id;
    if (run.kind === "eval") {
      run.estimator ??= parent.estimator;
      run.family ??= parent.family;
    }
  }
  for (const run of runs) if (run.parentKey) run.parentName = byKey.get(run.parentKey)?.name ?? run.parentId;
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

/** One run's detail; `listed` is its row from the last listing, whose name and lineage it keeps. */
export function runDetail(
  store: Store,
  run: RunRecord,
  file: string,
  report: string | null,
  listed?: RunRow,
): RunDetail {
  const metricKeys = store.metricKeys(run.id);
  const row = runRow(run, file, report, Date.now(), recordedName(store, run.id));
  if (listed) {
    for (const field of ["name", "parentKey", "parentId", "parentName", "estimator", "family"] as const)
      Object.assign(row, { [field]: listed[field] });
  }
  return {
    ...row,
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
