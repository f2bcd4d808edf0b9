/**
 * The files an eval writes into its run directory: `passk.json` (config, per-task counts, curves
 * with pass@k and pass^k at each k, totals), `passk.svg` (pass@k curves overall and per family,
 * log-scale k) and `passk.html` (a self-contained page with the pass@k and pass^k plots and tables).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Block, renderPage, type Section } from "../report/html.ts";
import type { PassAtKCurves } from "./curves.ts";
import type { PassAtKCurve } from "./passk.ts";
import { type CurveMeasure, passAtKChart } from "./passk-chart.ts";
import type { EvalResult } from "./run-eval.ts";

export interface EvalFiles {
  json: string;
  svg: string;
  html: string;
}

/** The JSON document of an eval (what `passk.json` holds). */
export function evalJson(result: Omit<EvalResult, "files">) {
  return {
    runId: result.runId,
    policyId: result.policyId,
    config: result.config,
    totals: result.totals,
    endReasons: result.endReasons,
    curves: result.curves,
    counts: result.counts,
  };
}

/** The table of one measure (pass@k, or pass^k) overall with its interval, then per group. */
export function curvesTable(
  curves: PassAtKCurves,
  groups: "families" | "templates",
  caption: string,
  measure: CurveMeasure = "pass@k",
): Block {
  const names = Object.keys(curves[groups]);
  const value = (point: PassAtKCurve[number]) => (measure === "pass@k" ? point.passAtK : point.passHatK);
  const fixed = (point: PassAtKCurve[number]) => value(point)?.toFixed(3) ?? "-";
  const interval = (point: PassAtKCurve[number]) => {
    const [lower, upper] =
      measure === "pass@k" ? [point.lower, point.upper] : [point.passHatKLower, point.passHatKUpper];
    return lower !== undefined && upper !== undefined
      ? `${fixed(point)} [${lower.toFixed(3)}, ${upper.toFixed(3)}]`
      : fixed(point);
  };
  return {
    type: "table",
    caption,
    columns: ["k", "all", ...names],
    rows: curves.ks.map((k, i) => [
      k,
      interval(curves.overall[i]),
      ...names.map((name) => fixed(curves[groups][name][i])),
    ]),
  };
}

export async function writeEvalFiles(
  directory: string,
  result: Omit<EvalResult, "files">,
): Promise<EvalFiles> {
  const files: EvalFiles = {
    json: join(directory, "passk.json"),
    svg: join(directory, "passk.svg"),
    html: join(directory, "passk.html"),
  };
  const { curves, config, totals } = result;
  const named = [
    { name: "all", curve: curves.overall },
    ...Object.entries(curves.families).map(([name, curve]) => ({ name, curve, band: false })),
  ];
  const svg = await passAtKChart(
    named,
    `pass@k of ${config.policy} (n = ${config.n}, ${totals.tasks} tasks)`,
  );
  const hatSvg = await passAtKChart(
    named,
    `pass^k of ${config.policy} (n = ${config.n}, ${totals.tasks} tasks)`,
    "pass^k",
  );
  writeFileSync(files.json, `${JSON.stringify(evalJson(result), null, 2)}\n`);
  writeFileSync(files.svg, svg);
  const sections: Section[] = [
    {
      title: "pass@k",
      blocks: [
        { type: "svg", svg, caption: "Unbiased pass@k; the band is a 95% bootstrap interval over tasks." },
        curvesTable(curves, "families", "pass@k overall (with interval) and per family"),
      ],
    },
    {
      title: "pass^k",
      blocks: [
        {
          type: "svg",
          svg: hatSvg,
          caption:
            "Unbiased pass^k = C(c,k)/C(n,k): the chance that all k samples are correct (reliability, as τ-bench reports it); the band is a 95% bootstrap interval over tasks.",
        },
        curvesTable(curves, "families", "pass^k overall (with interval) and per family", "pass^k"),
      ],
    },
    {
      title: "Totals",
      blocks: [
        {
          type: "table",
          columns: ["tasks", "samples", "correct", "solved at k = n", "policy errors", "infra failures"],
          rows: [
            [
              totals.tasks,
              totals.samples,
              totals.correct,
              totals.solved,
              totals.policyErrors,
              totals.infraFailures,
            ],
          ],
        },
        {
          type: "paragraph",
          text: `End reasons: ${Object.entries(result.endReasons)
            .map(([reason, count]) => `${reason} ${count}`)
            .join(
              ", ",
            )}. Policy errors count as failed samples; infra failures (upstream, sandbox or verifier broke) are not samples: left out of n.`,
        },
      ],
    },
  ];
  if (Object.keys(curves.templates).length > 0) {
    sections.push({
      title: "Per template",
      blocks: [
        curvesTable(curves, "templates", "pass@k per template"),
        curvesTable(curves, "templates", "pass^k per template", "pass^k"),
      ],
    });
  }
  sections.push(
    {
      title: "Tasks",
      blocks: [
        {
          type: "details",
          summary: `${result.counts.length} tasks: samples n, correct c`,
          blocks: [
            {
              type: "table",
              columns: ["task", "family", "template", "n", "c", "policy errors", "infra failures"],
              rows: result.counts.map((count) => [
                count.taskId,
                count.family,
                count.template ?? null,
                count.n,
                count.c,
                count.policyErrors,
                count.infraFailures ?? 0,
              ]),
            },
          ],
        },
      ],
    },
    { title: "Config", blocks: [{ type: "pre", text: JSON.stringify(config, null, 2) }] },
  );
  writeFileSync(
    files.html,
    renderPage({
      title: `pass@k: ${config.policy}`,
      subtitle: `eval run ${result.runId}, policy ${result.policyId}, seed ${config.seed}`,
      sections,
    }),
  );
  return files;
}
