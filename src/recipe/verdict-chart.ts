/**
 * The verdicts at a glance: per claim, its 95% two-level interval (seeds, then tasks) as a bar
 * coloured by its status, the mean over seeds as a tick and each training seed's own estimate as
 * a dot beside it, with 0 and the margin as dashed rules. A claim whose seeds disagree shows it:
 * the dots straddle the rules while one seed's interval alone would not.
 */
import type { TopLevelSpec } from "vega-lite";
import { renderVegaLite } from "../report/plots.ts";
import type { Verdict } from "./analysis.ts";

const STATUS_COLOURS = {
  reproduced: "#2e7d32",
  "not reproduced": "#c62828",
  inconclusive: "#ef8f00",
  "not measured": "#9e9e9e",
} as const;

/** The chart's rows: one interval per claim with a difference, one dot per seed estimate. */
export function verdictChartData(verdicts: readonly Verdict[]) {
  const measured = verdicts.filter((v) => v.difference);
  return {
    intervals: measured.map((v) => ({
      id: v.id,
      status: v.status,
      mean: v.difference!.mean,
      lower: v.difference!.interval.lower,
      upper: v.difference!.interval.upper,
    })),
    dots: measured.flatMap((v) =>
      v.seeds.flatMap((value, index) => (value === null ? [] : [{ id: v.id, seed: index + 1, value }])),
    ),
  };
}

export async function verdictIntervalChart(
  verdicts: readonly Verdict[],
  margin: number,
  title = "claims: interval over seeds and tasks, one dot per training seed",
): Promise<string> {
  const { intervals, dots } = verdictChartData(verdicts);
  if (intervals.length === 0) return "";
  const ids = intervals.map((row) => row.id);
  const statuses = Object.keys(STATUS_COLOURS);
  const y = { field: "id", type: "nominal", title: null, sort: ids, axis: { labelLimit: 240 } };
  const spec = {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title,
    width: 520,
    height: Math.max(120, 22 * ids.length),
    background: "white",
    config: { font: "sans-serif" },
    layer: [
      {
        data: { values: intervals },
        mark: { type: "rule", strokeWidth: 5, opacity: 0.55 },
        encoding: {
          y,
          x: { field: "lower", type: "quantitative", title: "estimate (b − a)" },
          x2: { field: "upper" },
          color: {
            field: "status",
            type: "nominal",
            scale: { domain: statuses, range: Object.values(STATUS_COLOURS) },
            title: null,
          },
        },
      },
      {
        data: { values: intervals },
        mark: { type: "tick", thickness: 2, color: "black" },
        encoding: { y, x: { field: "mean", type: "quantitative" } },
      },
      {
        data: { values: dots },
        mark: { type: "circle", size: 45, color: "#1f3b73", opacity: 0.85, yOffset: 8 },
        encoding: {
          y,
          x: { field: "value", type: "quantitative" },
          tooltip: [{ field: "seed" }, { field: "value", format: "+.3f" }],
        },
      },
      {
        data: { values: [{ x: 0 }, ...(margin > 0 ? [{ x: margin }] : [])] },
        mark: { type: "rule", strokeDash: [4, 3], color: "#555" },
        encoding: { x: { field: "x", type: "quantitative" } },
      },
    ],
  };
  return renderVegaLite(spec as TopLevelSpec);
}
