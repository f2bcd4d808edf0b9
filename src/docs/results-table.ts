/**
 * The published results table, generated from a committed recipe report
 * (`docs/results/recipe-default.report.json`, the `report.json` of `npm start`): one row per
 * verdict with its status and the paired difference it follows from, and a line saying which run
 * it is (preset, seed, duration, machine, date). docs/results.md holds it between `generated:`
 * markers; `npm run docs:results` rewrites them and results-table.test.ts fails when
 * a page and the report disagree.
 */
import { type PairedDifference, statusLabel } from "../recipe/analysis.ts";
import { learnedCell, learnedSummary } from "../recipe/arms-report.ts";
import type { RecipeReport } from "../recipe/report.ts";

export const RESULTS_REPORT = "docs/results/recipe-default.report.json";

const signed = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(3)}`;

/** "+0.048 [+0.013, +0.083], 24 tasks" */
export function formatEffect(difference: PairedDifference): string {
  const { mean, interval, tasks } = difference;
  return `${signed(mean)} [${signed(interval.lower)}, ${signed(interval.upper)}], ${tasks} tasks`;
}

const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ");

/** Evidence without an interval, cut to its first clause so the table stays readable. */
function shortEvidence(evidence: string): string {
  const first = evidence.split(";")[0].trim();
  return first.length > 90 ? `${first.slice(0, 89).trimEnd()}…` : first;
}

/** Each training seed's own estimate ("+0.034, +0.029, +0.065"; – where a seed measured nothing). */
function seedEstimates(seeds: readonly (number | null)[] | undefined): string {
  if (!seeds || seeds.length === 0) return "–";
  return seeds.map((value) => (value === null ? "–" : signed(value))).join(", ");
}

/** The table and the line under it (Markdown). */
export function resultsTable(report: RecipeReport): string {
  const rows = report.verdicts.map(
    (verdict) =>
      `| ${cell(verdict.id ?? verdict.experiment)} | ${statusLabel(verdict)} | ${cell(
        verdict.difference ? formatEffect(verdict.difference) : shortEvidence(verdict.evidence),
      )} | ${seedEstimates(verdict.seeds)} |`,
  );
  const minutes = (report.seconds / 60).toFixed(1);
  const { machine } = report;
  const first = report.config.seed;
  const count = report.config.seeds ?? 1;
  const seeds = count > 1 ? `training seeds ${first}–${first + count - 1}` : `seed ${first}`;
  return [
    "| claim | status | effect [95% CI] (tasks per seed) or evidence | per seed |",
    "| --- | --- | --- | --- |",
    ...rows,
    "",
    `Preset \`${report.preset}\`, ${seeds}, ${minutes} min on ${machine.cpus} × ${machine.cpuModel} ` +
      `(Node ${machine.node}, ${machine.platform}), ${report.createdAt.slice(0, 10)}; ` +
      `generated from \`${RESULTS_REPORT}\` by \`npm run docs:results\`. Each claim in words follows.`,
  ].join("\n");
}

/** Each claim in words with its whole evidence and, for one not reproduced, its measured cause. */
export function resultsDetail(report: RecipeReport): string {
  return report.verdicts
    .map((verdict) => {
      const cause = verdict.cause ? ` Measured cause: ${verdict.cause}.` : "";
      const label = verdict.cause?.startsWith("arms did not learn") ? "Cause" : "Measured cause";
      return `- **${verdict.id ?? verdict.experiment}** (${statusLabel(verdict)}): ${verdict.claim}. ${verdict.evidence}.${cause.replace("Measured cause", label)}`;
    })
    .join("\n");
}

/**
 * The RL arms of a report (report.json `arms`): per arm and training seed, pass@1 of its start and
 * its end on its own test tasks, the paired difference and whether it learned (the interval above 0).
 */
export function armsTable(report: RecipeReport): string {
  const arms = report.arms ?? [];
  if (arms.length === 0) return "This report predates the arms table (`arms[]` in report.json).";
  const f = (x: number | null) => (x === null ? "–" : x.toFixed(3));
  const rows = arms.map(
    (arm) =>
      `| ${arm.run} | ${arm.seed} | ${arm.family} | ${arm.estimator} | ${f(arm.start)} | ${f(arm.end)} | ${
        arm.difference ? formatEffect(arm.difference) : "–"
      } | ${learnedCell(arm, "**no**")} |`,
  );
  return [
    "| arm | seed | family | estimator | start pass@1 | end pass@1 | end − start [95% CI], tasks | learned |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows,
    "",
    `${learnedSummary(arms)} (learned: the interval of end − start lies above 0). Generated from \`${RESULTS_REPORT}\` by \`npm run docs:results\`.`,
  ].join("\n");
}
