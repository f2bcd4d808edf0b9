/**
 * Several recipe runs side by side (`agentrl recipe compare <dir...>`): usually the same config at
 * different top-level seeds (`--seed 1`, `--seed 4`: disjoint training seeds), to see which
 * verdicts hold beyond one run. Claims are matched by their stable id (`rl-raises-pass1`; reports
 * written before ids by their experiment and wording). Each claim gets its status in every run,
 * the run's estimate with its 95% interval where the verdict follows one (over that run's training
 * seeds and tasks), how many runs called it each way, how many claims flip between reproduced and
 * not reproduced, and the mean and range of the estimates. For the main pass@1 comparisons it also
 * pools the runs' first-seed evaluations: every run evaluates the same test tasks (the eval's task
 * seed is not the run's seed), so each task's samples are summed over runs and the paired
 * difference is taken once, with one bootstrap over tasks.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { TaskCount } from "../eval/task-counts.ts";
import {
  type PairedDifference,
  poolCounts,
  positiveStatus,
  type Verdict,
  type VerdictStatus,
} from "./analysis.ts";

export { poolCounts } from "./analysis.ts";

import type { RecipeConfig } from "./config.ts";
import { replicaStage, trainingSeeds } from "./pipeline/vocabulary.ts";
import { isReplicated, recipeStages } from "./pipeline.ts";
import { REPORT_JSON } from "./recipe.ts";
import { buildReport, PASS1_COMPARISONS, pass1Difference, type RecipeReport } from "./report.ts";
import { completedStageResult, type StageResults } from "./stages.ts";

export interface ComparedRun {
  dir: string;
  preset: string;
  seed: number;
  /** Training seeds of the run (1 for reports before seeds). */
  seeds: number;
  minutes: number;
  /** The column's heading (default "seed <seed> (<preset>)"). */
  label?: string;
}

export interface ComparedClaim {
  /** The claim's stable id (reports before ids: its experiment and wording). */
  id: string;
  experiment: string;
  claim: string;
  /** One per run, in run order; null where that run has no such claim. */
  verdicts: (Pick<Verdict, "status" | "evidence" | "difference"> | null)[];
  counts: Record<VerdictStatus, number>;
  /** Mean and range of the runs' estimates (runs with a paired difference only). */
  estimates: { mean: number; min: number; max: number; runs: number } | null;
}

export interface RecipeComparison {
  /** What each column is: a finished run, or one training seed of a run (`seedSplitReports`). */
  unit: "run" | "training seed";
  runs: ComparedRun[];
  claims: ComparedClaim[];
  /** Config fields (top level) other than the seed on which the runs differ. */
  configDifferences: string[];
  pooled: PooledComparison[];
}

export interface PooledComparison {
  /** b − a, as the report words it. */
  label: string;
  /** Runs whose folders hold both evaluations. */
  runs: number;
  difference: PairedDifference | null;
  status: VerdictStatus;
}

function pooledComparisons(dirs: readonly string[], seed: number, margin: number): PooledComparison[] {
  const stored = new Map<string, readonly TaskCount[] | null>(); // each stage file read once
  const countsOf = (dir: string, stage: string) => {
    const key = join(dir, stage);
    if (!stored.has(key)) {
      stored.set(key, completedStageResult<{ counts: TaskCount[] }>(dir, stage)?.counts ?? null);
    }
    return stored.get(key) ?? null;
  };
  return Object.values(PASS1_COMPARISONS).map((comparison) => {
    const measured = dirs.filter((dir) => countsOf(dir, comparison.a) && countsOf(dir, comparison.b));
    const difference =
      measured.length === 0
        ? null
        : pass1Difference(
            comparison,
            (stage) => poolCounts(measured.map((dir) => countsOf(dir, stage) ?? [])),
            seed,
          );
    return {
      label: comparison.label,
      runs: measured.length,
      difference,
      status: positiveStatus(difference, margin),
    };
  });
}

/** The report of a finished recipe run; a clear error when the folder has none. */
export function loadRecipeReport(dir: string): RecipeReport {
  const file = join(dir, REPORT_JSON);
  if (!existsSync(file)) {
    throw new Error(`${dir}: no ${REPORT_JSON} (is it the --out folder of a finished agentrl recipe run?)`);
  }
  const report = JSON.parse(readFileSync(file, "utf8")) as Partial<RecipeReport>;
  if (report.version !== 1 || !Array.isArray(report.verdicts) || !report.config) {
    throw new Error(`${file}: not a recipe report (version 1 with config and verdicts)`);
  }
  return report as RecipeReport;
}

/** A report to compare: a run's, or one training seed's (`seedSplitReports`, with its column label). */
export interface ComparedReport {
  dir: string;
  report: RecipeReport;
  label?: string;
}

export function compareRecipeRuns(
  reports: ComparedReport[],
  unit: RecipeComparison["unit"] = "run",
): RecipeComparison {
  const runs = reports.map(({ dir, report, label }) => ({
    dir,
    preset: report.preset,
    seed: report.config.seed,
    seeds: report.config.seeds ?? 1,
    minutes: report.stages.reduce((sum, stage) => sum + stage.seconds, 0) / 60,
    ...(label ? { label } : {}),
  }));
  // the stable id; reports written before ids had none: their experiment and wording stand in
  const keyOf = (verdict: Verdict) => verdict.id ?? `${verdict.experiment}: ${verdict.claim}`;
  const order: Verdict[] = [];
  const seen = new Set<string>();
  for (const { report } of reports) {
    for (const verdict of report.verdicts) {
      if (!seen.has(keyOf(verdict))) {
        seen.add(keyOf(verdict));
        order.push(verdict);
      }
    }
  }
  const byKey = reports.map(
    ({ report }) => new Map(report.verdicts.map((verdict) => [keyOf(verdict), verdict])),
  );
  const claims = order.map((first): ComparedClaim => {
    const verdicts = byKey.map((verdictOf) => {
      const found = verdictOf.get(keyOf(first));
      return found
        ? { status: found.status, evidence: found.evidence, difference: found.difference ?? null }
        : null;
    });
    const counts: Record<VerdictStatus, number> = {
      reproduced: 0,
      "not reproduced": 0,
      inconclusive: 0,
      "not measured": 0,
    };
    for (const verdict of verdicts) if (verdict) counts[verdict.status] += 1;
    const means = verdicts
      .map((verdict) => verdict?.difference?.mean)
      .filter((mean): mean is number => typeof mean === "number");
    return {
      id: keyOf(first),
      experiment: first.experiment,
      claim: first.claim,
      verdicts,
      counts,
      estimates:
        means.length === 0
          ? null
          : {
              mean: means.reduce((sum, m) => sum + m, 0) / means.length,
              min: Math.min(...means),
              max: Math.max(...means),
              runs: means.length,
            },
    };
  });
  const configs = reports.map(({ report }) => report.config as unknown as Record<string, unknown>);
  const configDifferences = Object.keys(configs[0] ?? {}).filter(
    (key) =>
      key !== "seed" &&
      configs.some((config) => JSON.stringify(config[key]) !== JSON.stringify(configs[0][key])),
  );
  return {
    unit,
    runs,
    claims,
    configDifferences,
    // pooling is over runs that evaluate the same tasks; one run's seeds are already pooled in its report
    pooled:
      unit === "run"
        ? pooledComparisons(
            reports.map(({ dir }) => dir),
            reports[0]?.report.config.seed ?? 0,
            reports[0]?.report.config.margin ?? 0, // reports written before the margin existed: none
          )
        : [],
  };
}

/**
 * One finished multi-seed run's verdicts at each of its training seeds alone: the report rebuilt
 * from the folder's stored stage results with only that seed's replicas in place of every
 * replicated stage (the shared stages, such as the base evaluations, as they are). Each verdict's
 * interval then covers that seed's test tasks, not the seed: what a single-seed run would have
 * called, so `compareRecipeRuns(…, "training seed")` shows which calls hold at every seed.
 */
export async function seedSplitReports(dir: string): Promise<ComparedReport[]> {
  const report = loadRecipeReport(dir);
  const config = report.config;
  const seeds = trainingSeeds(config);
  if (seeds.length < 2)
    throw new Error(`${dir}: a run of one training seed (--seeds ${config.seeds}) has no seeds to split`);
  const results: StageResults = {};
  for (const { name } of recipeStages(config)) {
    const result = completedStageResult(dir, name);
    if (result === null)
      throw new Error(
        `${dir}: stage ${name} has no completed result (finish the run, then compare its seeds)`,
      );
    results[name] = result;
  }
  return Promise.all(
    seeds.map(async (seed, r) => {
      const single: RecipeConfig = { ...config, seed, seeds: 1 };
      const own: StageResults = { ...results };
      for (const name of Object.keys(results)) {
        if (!name.includes("@s") && isReplicated(name, config)) own[name] = results[replicaStage(name, r)];
      }
      const built = await buildReport({
        config: single,
        results: own,
        outcomes: [],
        seconds: 0,
        machine: report.machine,
      });
      return { dir, report: built.report, label: `training seed ${seed} alone` };
    }),
  );
}

const signed = (x: number) => `${x >= 0 ? "+" : ""}${x.toFixed(3)}`;
/** "+0.036 [+0.005, +0.068]" */
const estimate = (d: PairedDifference) =>
  `${signed(d.mean)} [${signed(d.interval.lower)}, ${signed(d.interval.upper)}]`;

function cell(verdict: ComparedClaim["verdicts"][number]): string {
  if (!verdict) return "—";
  return verdict.difference ? `${verdict.status} ${estimate(verdict.difference)}` : verdict.status;
}

/**
 * How the runs (or one run's training seeds) call one claim together: called (the same reproduced /
 * not reproduced at every one) or not, and why (every one inconclusive, or some that disagree).
 */
export function acrossRuns(
  claim: ComparedClaim,
  unit: RecipeComparison["unit"] = "run",
): { decided: boolean; text: string } {
  const statuses = measuredStatuses(claim);
  if (statuses.size === 0) return { decided: false, text: "not measured" };
  // runs that disagree leave a claim undecided; one run's seeds that disagree say how far its pooled call holds
  const undecided = unit === "run" ? "cannot decide: " : "";
  const [only] = [...statuses];
  if (statuses.size === 1 && only !== "inconclusive") {
    return { decided: true, text: `${only} at every ${unit}` };
  }
  if (statuses.size === 1)
    return {
      decided: false,
      text: `${undecided}inconclusive at every ${unit}${unit === "run" ? " (too small)" : ""}`,
    };
  const parts = (["reproduced", "not reproduced", "inconclusive"] as const)
    .filter((status) => claim.counts[status] > 0)
    .map((status) => `${claim.counts[status]} ${status}`);
  return { decided: false, text: `${undecided}the ${unit}s disagree (${parts.join(", ")})` };
}

/** The statuses the runs that measured a claim gave it. */
function measuredStatuses(claim: ComparedClaim): Set<string> {
  return new Set(
    claim.verdicts.flatMap((verdict) =>
      verdict && verdict.status !== "not measured" ? [verdict.status] : [],
    ),
  );
}

/** Why the undecided claims are undecided, from how they split. */
function whyUndecided(undecided: readonly ComparedClaim[], pooled: boolean): string {
  const disagree = undecided.filter((claim) => measuredStatuses(claim).size > 1);
  const reasons: string[] = [];
  if (disagree.length > 0)
    reasons.push(
      "Where runs disagree, each run's interval covers its test tasks only, not its training seed " +
        "(data order, rollouts, exploration): the seed moves these effects by more than one run's " +
        `interval, so at this size a single run cannot settle them${pooled ? ", and the pooled rows below average over the seeds" : ""}.`,
    );
  if (disagree.length < undecided.length)
    reasons.push(
      "Each run's report says, per inconclusive claim, its interval's half-width and about how many tasks would call it.",
    );
  return reasons.join(" ");
}

/**
 * The claims some run called "reproduced" and another "not reproduced": the flips the issue's
 * acceptance bounds (an inconclusive run is not a flip).
 */
export function flippedClaims(comparison: RecipeComparison): ComparedClaim[] {
  return comparison.claims.filter(
    (claim) => claim.counts.reproduced > 0 && claim.counts["not reproduced"] > 0,
  );
}

/** The comparison as a Markdown table (one row per claim, one column per run or training seed). */
export function comparisonMarkdown(comparison: RecipeComparison): string {
  const n = comparison.runs.length;
  const { unit } = comparison;
  const header = [
    "id",
    "experiment",
    "claim",
    ...comparison.runs.map((run) => run.label ?? `seed ${run.seed} (${run.preset})`),
    `reproduced / not / inconclusive of ${n}`,
    "mean estimate [min, max]",
    `across ${unit}s`,
  ];
  const escapePipes = (text: string) => text.replaceAll("|", "\\|");
  const across = comparison.claims.map((claim) => acrossRuns(claim, unit));
  const rows = comparison.claims.map((claim, i) => [
    claim.id,
    claim.experiment,
    escapePipes(claim.claim),
    ...claim.verdicts.map(cell),
    `${claim.counts.reproduced} / ${claim.counts["not reproduced"]} / ${claim.counts.inconclusive}`,
    claim.estimates
      ? `${signed(claim.estimates.mean)} [${signed(claim.estimates.min)}, ${signed(claim.estimates.max)}]`
      : "—",
    across[i].text,
  ]);
  const undecided = comparison.claims.flatMap((claim, i) =>
    across[i].decided ? [] : [{ claim, why: across[i].text.replace("cannot decide: ", "") }],
  );
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  const pooledHeader = ["pooled over runs", "runs", "Δ [95% CI]", "status"];
  const pooled = comparison.pooled.filter((row) => row.runs > 0);
  const flipped = flippedClaims(comparison);
  return [
    line(header),
    line(header.map(() => "---")),
    ...rows.map(line),
    "",
    `Flips between reproduced and not reproduced: ${flipped.length}${flipped.length > 0 ? ` (${flipped.map((claim) => claim.id).join(", ")})` : ""}.`,
    "",
    undecided.length === 0
      ? `Every claim is called the same way at all ${n} ${unit}s.`
      : unit === "training seed"
        ? `${undecided.length} of ${comparison.claims.length} claims are not called the same way at every training seed: ${undecided.map(({ claim, why }) => `${claim.id}: ${why}`).join("; ")}. Each column is the run's report rebuilt from one training seed's stages alone, so its interval covers that seed's test tasks and not the seed; the run's own verdicts pool the seeds (the two-level bootstrap of its report).`
        : `The lab cannot decide ${undecided.length} of ${comparison.claims.length} claims at this size: ${undecided.map(({ claim, why }) => `${escapePipes(claim.claim)} (${why})`).join("; ")}. ${whyUndecided(
            undecided.map(({ claim }) => claim),
            pooled.length > 0,
          )}`,
    "",
    ...(pooled.length > 0
      ? [
          line(pooledHeader),
          line(pooledHeader.map(() => "---")),
          ...pooled.map((row) =>
            line([
              row.label,
              String(row.runs),
              row.difference
                ? `${estimate(row.difference)} over ${row.difference.tasks} tasks`
                : "no shared tasks",
              row.status,
            ]),
          ),
          "",
          "Pooled: each task's samples summed over the runs (they evaluate the same test tasks), one paired bootstrap over tasks; it averages over the runs' training seeds and does not measure their spread.",
          "",
        ]
      : []),
    ...(comparison.configDifferences.length > 0
      ? [
          `Note: the runs' configs differ in more than the seed: ${comparison.configDifferences.join(", ")}.`,
          "",
        ]
      : []),
    unit === "training seed"
      ? `Training seeds ${comparison.runs.map((run) => run.seed).join(", ")} of ${comparison.runs[0]?.dir} (${comparison.runs[0]?.preset} preset). Each interval is one seed's 95% bootstrap over its test tasks; the mean-estimate column is the plain mean and range of the seeds' estimates, not an interval.`
      : `Runs: ${comparison.runs.map((run) => `${run.dir} (seed ${run.seed}${run.seeds > 1 ? `, training seeds ${run.seed}-${run.seed + run.seeds - 1}` : ""}, ${run.minutes.toFixed(1)} min of stage compute)`).join("; ")}. Each interval is its own run's 95% bootstrap (over its training seeds, then tasks, for runs of several seeds; over tasks otherwise); the mean-estimate column is the plain mean and range of the runs' estimates, not a pooled interval.`,
    "",
  ].join("\n");
}
