/**
 * The published results table, generated from a committed recipe report
 * (`docs/results/recipe-default.report.json`, the `report.json` of `npm start`): one row per
 * verdict with its status and the paired difference it follows from, and a line saying which run
 * it is (preset, seed, duration, machine, date). The README and docs/results.md hold it between
 * `generated:` markers; `npm run docs:results` rewrites them and results-table.test.ts fails when
 * a page and the report disagree.
 */
import type { PairedDifference } from "../recipe/analysis.ts";
import type { RecipeReport } from "../recipe/report.ts";

export const RESULTS_REPORT = "docs/results/recipe-default.report.json";

const signed = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(3)}`;

/** "+0.048 [+0.013, +0.083], 24 tasks" */
export function formatEffect(difference: PairedDifference): string {
  const { mean, interval, tasks } = difference;
  return `${signed(mean)} [${signed(interval.lower)}, ${signed(interval.upper)}], ${tasks} tasks`;
}

const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ");

/** The table and the line under it (Markdown). */
export function resultsTable(report: RecipeReport): string {
  const rows = report.verdicts.map(
    (verdict) =>
      `| ${cell(verdict.experiment)} | ${cell(verdict.claim)} | ${verdict.status} | ${cell(
        verdict.difference ? formatEffect(verdict.difference) : verdict.evidence,
      )} |`,
  );
  const minutes = (report.seconds / 60).toFixed(1);
  const { machine } = report;
  return [
    "| experiment | claim | status | effect [95% CI] or evidence |",
    "| --- | --- | --- | --- |",
    ...rows,
    "",
    `Preset \`${report.preset}\`, seed ${report.config.seed}, ${minutes} min on ${machine.cpus} × ${machine.cpuModel} ` +
      `(Node ${machine.node}, ${machine.platform}), ${report.createdAt.slice(0, 10)}; ` +
      `generated from \`${RESULTS_REPORT}\` by \`npm run docs:results\`.`,
  ].join("\n");
}
