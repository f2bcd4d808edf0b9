/**
 * What the dashboard says about a recipe output folder: its report's verdicts (report.json, as the
 * report has them), its runs, and for one claim the runs behind it, grouped by arm: the training
 * runs of each arm at every seed (with their metric keys, for curves overlaid across seeds) and the
 * evaluations (with their pass@k), and the report's `arms[]` entries of those arms when it has them.
 *
 * A claim's runs are those of the stages its experiment read (`verdicts[].stages`, recorded as the
 * report was built: recipe/report.ts); a report from before that was recorded lists none. Only
 * folders the catalog's scan found are read, and only their `report.json`: no path built from a
 * request reaches the disk. A claim's stores are opened when the claim is asked for.
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { splitStage } from "../recipe/stage-run-name.ts";
import type { RunCatalog } from "./run-catalog.ts";
import { type PassAtKPoint, passAtKCurves, type RunRow } from "./run-rows.ts";

export class RecipeNotFound extends Error {}

export interface RecipeVerdict {
  id: string;
  experiment: string;
  claim: string;
  status: string;
  evidence: string;
  cause: string | null;
  /** The claim's estimate at each training seed. */
  seeds: (number | null)[];
  /** The stages its experiment read, or null for a report from before they were recorded. */
  stages: string[] | null;
  /** For a comparison of RL methods, the arms it compares (the report's `compares`), else null. */
  compares: string[] | null;
}

/** One entry of the report's `arms[]`, read defensively (its producer may name fields differently). */
export interface RecipeArm {
  run: string;
  stage: string;
  seed: number | null;
  family: string | null;
  estimator: string | null;
  start: number | null;
  end: number | null;
  difference: { estimate: number; low: number | null; high: number | null } | null;
  learned: boolean | null;
}

export interface RecipeDetail {
  path: string;
  preset: string | null;
  /** The training seeds (config.seed, +1, …). */
  seeds: number[];
  createdAt: string | null;
  /** The report page (under /reports/), or null. */
  reportPage: string | null;
  verdicts: RecipeVerdict[];
  /** The report's `arms[]`, or null when it has none. */
  arms: RecipeArm[] | null;
  runs: RunRow[];
}

export interface ArmRun extends RunRow {
  /** Training runs: their metric keys. */
  metricKeys: string[];
  /** Evaluations: the overall pass@k at their latest step. */
  passAtK: PassAtKPoint[];
}

export interface ArmGroup {
  /** The stage without its seed (`credit-grpo`): the arm. */
  stage: string;
  kind: string;
  /** Its run at each seed (and, for a stage with several runs such as a noise sweep, each of them). */
  runs: ArmRun[];
}

export interface ClaimDetail {
  verdict: RecipeVerdict;
  arms: RecipeArm[];
  training: ArmGroup[];
  evaluations: ArmGroup[];
}

const TRAINERS = new Set(["rl", "sft", "pretrain"]);

const text = (value: unknown): string | null => (typeof value === "string" ? value : null);
const num = (value: unknown): number | null =>
  typeof value === "number" && Number.isFinite(value) ? value : null;
const record = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === "object" ? (value as Record<string, unknown>) : {};

function readVerdict(raw: unknown): RecipeVerdict {
  const v = record(raw);
  return {
    id: text(v.id) ?? "?",
    experiment: text(v.experiment) ?? "",
    claim: text(v.claim) ?? "",
    status: text(v.status) ?? "",
    evidence: text(v.evidence) ?? "",
    cause: text(v.cause),
    seeds: Array.isArray(v.seeds) ? v.seeds.map(num) : [],
    stages: Array.isArray(v.stages) ? v.stages.filter((s): s is string => typeof s === "string") : null,
    compares: Array.isArray(v.compares) ? v.compares.filter((s): s is string => typeof s === "string") : null,
  };
}

/** An `arms[]` entry: `difference` as `{ estimate, low, high }` or as the report's `{ mean, interval }`. */
export function readArm(raw: unknown): RecipeArm {
  const a = record(raw);
  const d = record(a.difference);
  const interval = record(d.interval);
  const estimate = num(d.estimate) ?? num(d.mean);
  const stage = text(a.stage) ?? text(a.run) ?? "?";
  return {
    run: text(a.run) ?? splitStage(stage).base,
    stage,
    seed: num(a.seed),
    family: text(a.family),
    estimator: text(a.estimator),
    start: num(a.start),
    end: num(a.end),
    difference:
      estimate === null
        ? null
        : {
            estimate,
            low: num(d.low) ?? num(interval.lower),
            high: num(d.high) ?? num(interval.upper),
          },
    learned: typeof a.learned === "boolean" ? a.learned : null,
  };
}

interface ParsedReport {
  preset: string | null;
  seeds: number[];
  createdAt: string | null;
  verdicts: RecipeVerdict[];
  arms: RecipeArm[] | null;
}

/** report.json of each recipe folder, read again only when the file changes. */
export class RecipeReports {
  readonly #cache = new Map<string, { stamp: string; report: ParsedReport }>();
  readonly #catalog: RunCatalog;

  constructor(catalog: RunCatalog) {
    this.#catalog = catalog;
  }

  /** The parsed report of a recipe folder the scan found; throws RecipeNotFound for any other. */
  read(path: string): ParsedReport {
    if (!this.#catalog.recipes().includes(path)) throw new RecipeNotFound(`no recipe output "${path}"`);
    const file = join(this.#catalog.root, path, "report.json");
    const stat = statSync(file);
    const stamp = `${stat.mtimeMs}:${stat.size}`;
    const cached = this.#cache.get(path);
    if (cached?.stamp === stamp) return cached.report;
    const raw = record(JSON.parse(readFileSync(file, "utf8")));
    const config = record(raw.config);
    const first = num(config.seed) ?? 1;
    const report: ParsedReport = {
      preset: text(raw.preset),
      seeds: Array.from({ length: num(config.seeds) ?? 1 }, (_, r) => first + r),
      createdAt: text(raw.createdAt),
      verdicts: Array.isArray(raw.verdicts) ? raw.verdicts.map(readVerdict) : [],
      arms: Array.isArray(raw.arms) ? raw.arms.map(readArm) : null,
    };
    this.#cache.set(path, { stamp, report });
    return report;
  }
}

export function recipeDetail(
  reports: RecipeReports,
  path: string,
  rows: readonly RunRow[],
  reportPages: readonly string[],
): RecipeDetail {
  const report = reports.read(path);
  const page = path === "." ? "report.html" : `${path}/report.html`;
  return {
    path,
    ...report,
    reportPage: reportPages.includes(page) ? page : null,
    runs: rows.filter((row) => row.recipe === path),
  };
}

/** The runs of a recipe behind one claim, by arm; the claim's stores are opened here. */
export function claimDetail(
  catalog: RunCatalog,
  reports: RecipeReports,
  path: string,
  id: string,
  rows: readonly RunRow[],
): ClaimDetail {
  const report = reports.read(path);
  const verdict = report.verdicts.find((v) => v.id === id);
  if (!verdict) throw new RecipeNotFound(`no claim "${id}" in the recipe output "${path}"`);
  const read = new Set(
    (verdict.stages ?? []).map((stage) => {
      const { base, seed } = splitStage(stage);
      return `${base}@s${seed}`;
    }),
  );
  // A comparison shows the arms it compares: their training runs, the evaluations of their
  // checkpoints and the evaluations of untrained starts (the arms' base), not the experiment's others.
  const compares = verdict.compares === null ? null : new Set(verdict.compares);
  const shown = (row: RunRow) =>
    compares === null ||
    (TRAINERS.has(row.kind)
      ? compares.has(row.stage!)
      : row.parentName === null || compares.has(splitStage(row.parentName).base));
  const behind = rows.filter(
    (row) => row.recipe === path && row.stage && read.has(`${row.stage}@s${row.seed}`) && shown(row),
  );
  const groups = new Map<string, ArmGroup>();
  for (const row of behind) {
    if (row.kind !== "eval" && !TRAINERS.has(row.kind)) continue; // datasets, selections: no curves to draw
    const group = groups.get(row.stage!) ?? { stage: row.stage!, kind: row.kind, runs: [] };
    const store = catalog.storeOf(row.file);
    const metricKeys = store && TRAINERS.has(row.kind) ? store.metricKeys(row.id) : [];
    const passAtK =
      store && row.kind === "eval"
        ? passAtKCurves(store, row.id, store.metricKeys(row.id)).filter((point) => point.series === "eval")
        : [];
    group.runs.push({ ...row, metricKeys, passAtK });
    groups.set(row.stage!, group);
  }
  const all = [...groups.values()];
  for (const group of all)
    group.runs.sort((a, b) => (a.seed ?? 0) - (b.seed ?? 0) || a.name.localeCompare(b.name));
  const arms = (report.arms ?? []).filter(
    (arm) =>
      (compares === null || compares.has(arm.run)) &&
      (groups.has(arm.run) || groups.has(splitStage(arm.stage).base)),
  );
  return {
    verdict,
    arms,
    training: all.filter((group) => TRAINERS.has(group.kind)),
    evaluations: all.filter((group) => group.kind === "eval"),
  };
}
