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
  return intervalChart({
    intervals,
    dots,
    colours: STATUS_COLOURS,
    title,
    xTitle: "estimate (b − a)",
    rules: [0, ...(margin > 0 ? [margin] : [])],
  });
}

/** One row of an interval chart: its bar (lower–upper), its tick (mean) and its colour's key. */
export interface IntervalRow {
  id: string;
  status: string;
  mean: number;
  lower: number;
  upper: number;
}

/**
 * Intervals as horizontal bars, one row each in the order given, coloured by `status` (the
 * `colours` keys, in legend order), a tick at the mean, optional dots beside a row (e.g. each seed's
 * own estimate) and dashed vertical rules (0, the margin). The verdicts' chart and the arms' chart.
 */
export async function intervalChart(options: {
  intervals: readonly IntervalRow[];
  dots?: readonly { id: string; seed: number; value: number }[];
  colours: Record<string, string>;
  title: string;
  xTitle: string;
  rules: readonly number[];
}): Promise<string> {
  const { intervals, dots = [], colours, title, xTitle, rules } = options;
  if (intervals.length === 0) return "";
  const ids = intervals.map((row) => row.id);
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
          x: { field: "lower", type: "quantitative", title: xTitle },
          x2: { field: "upper" },
          color: {
            field: "status",
            type: "nominal",
            scale: { domain: Object.keys(colours), range: Object.values(colours) },
            title: null,
          },
        },
      },
      {
        data: { values: intervals },
        mark: { type: "tick", thickness: 2, color: "black" },
        encoding: { y, x: { field: "mean", type: "quantitative" } },
      },
      ...(dots.length > 0
        ? [
            {
              data: { values: dots },
              mark: { type: "circle", size: 45, color: "#1f3b73", opacity: 0.85, yOffset: 8 },
              encoding: {
                y,
                x: { field: "value", type: "quantitative" },
                tooltip: [{ field: "seed" }, { field: "value", format: "+.3f" }],
              },
            },
          ]
        : []),
      {
        data: { values: rules.map((x) => ({ x })) },
        mark: { type: "rule", strokeDash: [4, 3], color: "#555" },
        encoding: { x: { field: "x", type: "quantitative" } },
      },
    ],
  };
  return renderVegaLite(spec as TopLevelSpec);
}
