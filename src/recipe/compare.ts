/**
 * Several recipe runs side by side (`agentrl recipe compare <dir...>`): the same config with
 * different seeds, usually, to see which verdicts hold beyond one run. Each claim gets its status
 * in every run, the run's estimate with its 95% interval where the verdict follows one paired
 * difference, how many runs called it each way, and the mean and range of the estimates. The
 * intervals are per run (tasks resampled within a run); this does not pool runs into one interval.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { PairedDifference, Verdict, VerdictStatus } from "./analysis.ts";
import { REPORT_JSON } from "./recipe.ts";
import type { RecipeReport } from "./report.ts";

export interface ComparedRun {
  dir: string;
  preset: string;
  seed: number;
  minutes: number;
}

export interface ComparedClaim {
  experiment: string;
  claim: string;
  /** One per run, in run order; null where that run has no such claim. */
  verdicts: (Pick<Verdict, "status" | "evidence" | "difference"> | null)[];
  counts: Record<VerdictStatus, number>;
  /** Mean and range of the runs' estimates (runs with a paired difference only). */
  estimates: { mean: number; min: number; max: number; runs: number } | null;
}

export interface RecipeComparison {
  runs: ComparedRun[];
  claims: ComparedClaim[];
  /** Config fields (top level) other than the seed on which the runs differ. */
  configDifferences: string[];
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

export function compareRecipeRuns(reports: { dir: string; report: RecipeReport }[]): RecipeComparison {
  const runs = reports.map(({ dir, report }) => ({
    dir,
    preset: report.preset,
    seed: report.config.seed,
    minutes: report.stages.reduce((sum, stage) => sum + stage.seconds, 0) / 60,
  }));
  const keyOf = (verdict: Verdict) => `${verdict.experiment}\u0000${verdict.claim}`;
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
  const claims = order.map((first): ComparedClaim => {
    const verdicts = reports.map(({ report }) => {
      const found = report.verdicts.find((verdict) => keyOf(verdict) === keyOf(first));
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
  const first = reports[0]?.report.config as unknown as Record<string, unknown> | undefined;
  const configDifferences = first
    ? Object.keys(first).filter(
        (key) =>
          key !== "seed" &&
          reports.some(
            ({ report }) =>
              JSON.stringify((report.config as unknown as Record<string, unknown>)[key]) !==
              JSON.stringify(first[key]),
          ),
      )
    : [];
  return { runs, claims, configDifferences };
}

const signed = (x: number) => `${x >= 0 ? "+" : ""}${x.toFixed(3)}`;

function cell(verdict: ComparedClaim["verdicts"][number]): string {
  if (!verdict) return "—";
  const d: PairedDifference | null | undefined = verdict.difference;
  return d
    ? `${verdict.status} ${signed(d.mean)} [${signed(d.interval.lower)}, ${signed(d.interval.upper)}]`
    : verdict.status;
}

/** The comparison as a Markdown table (one row per claim, one column per run). */
export function comparisonMarkdown(comparison: RecipeComparison): string {
  const n = comparison.runs.length;
  const header = [
    "experiment",
    "claim",
    ...comparison.runs.map((run) => `seed ${run.seed} (${run.preset})`),
    `reproduced / not / inconclusive of ${n}`,
    "mean estimate [min, max]",
  ];
  const escapePipes = (text: string) => text.replaceAll("|", "\\|");
  const rows = comparison.claims.map((claim) => [
    claim.experiment,
    escapePipes(claim.claim),
    ...claim.verdicts.map(cell),
    `${claim.counts.reproduced} / ${claim.counts["not reproduced"]} / ${claim.counts.inconclusive}`,
    claim.estimates
      ? `${signed(claim.estimates.mean)} [${signed(claim.estimates.min)}, ${signed(claim.estimates.max)}]`
      : "—",
  ]);
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [
    line(header),
    line(header.map(() => "---")),
    ...rows.map(line),
    "",
    ...(comparison.configDifferences.length > 0
      ? [
          `Note: the runs' configs differ in more than the seed: ${comparison.configDifferences.join(", ")}.`,
          "",
        ]
      : []),
    `Runs: ${comparison.runs.map((run) => `${run.dir} (seed ${run.seed}, ${run.minutes.toFixed(1)} min of stage compute)`).join("; ")}. Each interval is its own run's 95% bootstrap over tasks; the last column is the plain mean and range of the runs' estimates, not a pooled interval.`,
    "",
  ].join("\n");
}
