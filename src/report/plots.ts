/**
 * SVG plots: small typed wrappers over vega-lite, rendered headless (`renderer: "none"`, `toSVG`),
 * so a report is a self-contained page with inline SVG and no scripts. The same input gives the
 * same SVG byte for byte (no ids, no timestamps; series keep the order given, colours follow it).
 *
 *   const svg = await lineChart({ series: [{ name: "base", points: [{ x: 1, y: 0.2 }] }],
 *                                 xLog: true, xLabel: "k", yLabel: "pass@k", title: "pass@k" });
 *
 * Text in the spec (titles, series names) is escaped by vega's SVG renderer, so untrusted labels
 * cannot inject markup.
 */
import type { TopLevelSpec } from "vega-lite";

/** One point of a line; `lower`/`upper` draw a confidence band around it when both are present. */
export interface LinePoint {
  x: number;
  y: number;
  lower?: number;
  upper?: number;
}

export interface LineSeries {
  name: string;
  points: readonly LinePoint[];
}

export interface ChartFrame {
  title?: string;
  /** Plot area in pixels (axes and legend come on top). Default 480 x 300. */
  width?: number;
  height?: number;
}

export interface LineChartOptions extends ChartFrame {
  series: readonly LineSeries[];
  xLabel: string;
  yLabel: string;
  /** Log-scale x axis (base 2 unless `logBase`); every x must then be positive. */
  xLog?: boolean;
  logBase?: number;
  /** Tick values of the x axis (default: every distinct x when log-scale, else automatic). */
  xTicks?: readonly number[];
  /** Fixed y range, e.g. [0, 1] for rates. */
  yDomain?: readonly [number, number];
  /** Draw a dot on every point (default true). */
  points?: boolean;
}

export interface Bar {
  category: string;
  value: number;
  /** Bars of one category with different groups stand side by side, coloured by group. */
  group?: string;
}

export interface BarChartOptions extends ChartFrame {
  bars: readonly Bar[];
  xLabel: string;
  yLabel: string;
  yDomain?: readonly [number, number];
}

export interface HistogramOptions extends ChartFrame {
  /** One or several samples; several are overlaid, coloured by name. */
  samples: readonly { name: string; values: readonly number[] }[];
  xLabel: string;
  yLabel?: string;
  /** Number of equal-width bins over the pooled range (default 20). */
  bins?: number;
}

const DEFAULT_WIDTH = 480;
const DEFAULT_HEIGHT = 300;
const SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json";

/**
 * Renders any vega-lite spec to an SVG string, headless. vega and vega-lite are loaded on the
 * first chart (about a second of startup): processes that import this module and draw nothing,
 * such as each recipe stage's child, do not pay for them.
 */
export async function renderVegaLite(spec: TopLevelSpec): Promise<string> {
  const [vega, { compile }] = await Promise.all([import("vega"), import("vega-lite")]);
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

function frame(options: ChartFrame) {
  return {
    $schema: SCHEMA,
    width: options.width ?? DEFAULT_WIDTH,
    height: options.height ?? DEFAULT_HEIGHT,
    ...(options.title ? { title: options.title } : {}),
    background: "white",
    config: { font: "sans-serif", legend: { orient: "right" as const } },
  };
}

function checkFinite(what: string, value: number | undefined): void {
  if (value !== undefined && !Number.isFinite(value)) throw new Error(`${what} must be finite, got ${value}`);
}

/** Lines (one per series) with optional confidence bands; the x axis may be log-scale. */
export async function lineChart(options: LineChartOptions): Promise<string> {
  const names = options.series.map((series) => series.name);
  if (new Set(names).size !== names.length)
    throw new Error(`lineChart: duplicate series names in ${names.join(", ")}`);
  const rows: { series: string; x: number; y: number; lower?: number; upper?: number }[] = [];
  for (const series of options.series) {
    for (const point of series.points) {
      checkFinite(`lineChart: x of "${series.name}"`, point.x);
      checkFinite(`lineChart: y of "${series.name}"`, point.y);
      checkFinite(`lineChart: lower of "${series.name}"`, point.lower);
      checkFinite(`lineChart: upper of "${series.name}"`, point.upper);
      if (options.xLog && point.x <= 0) throw new Error(`lineChart: log-scale x needs x > 0, got ${point.x}`);
      const hasBand = point.lower !== undefined && point.upper !== undefined;
      rows.push({
        series: series.name,
        x: point.x,
        y: point.y,
        ...(hasBand ? { lower: point.lower, upper: point.upper } : {}),
      });
    }
  }
  const distinctX = [...new Set(rows.map((row) => row.x))].sort((a, b) => a - b);
  const ticks = options.xTicks ?? (options.xLog ? distinctX : undefined);
  const x = {
    field: "x",
    type: "quantitative" as const,
    title: options.xLabel,
    scale: options.xLog ? { type: "log" as const, base: options.logBase ?? 2, nice: false } : { zero: false },
    axis: ticks ? { values: [...ticks], format: "~g" } : {},
  };
  const y = {
    field: "y",
    type: "quantitative" as const,
    title: options.yLabel,
    ...(options.yDomain ? { scale: { domain: [...options.yDomain] } } : {}),
  };
  const color = {
    field: "series",
    type: "nominal" as const,
    title: null,
    scale: { domain: names },
    sort: names,
  };
  const layers: object[] = [];
  if (rows.some((row) => row.lower !== undefined)) {
    layers.push({
      transform: [{ filter: "isValid(datum.lower)" }],
      mark: { type: "area", opacity: 0.15 },
      encoding: {
        x,
        y: { field: "lower", type: "quantitative", ...(y.scale ? { scale: y.scale } : {}) },
        y2: { field: "upper" },
        color: { ...color, legend: null },
      },
    });
  }
  layers.push({
    mark: { type: "line", point: options.points ?? true, strokeWidth: 2 },
    encoding: { x, y, color, order: { field: "x", type: "quantitative" } },
  });
  // Independent legends, so the legend shows the lines' symbols and not the translucent bands'.
  return renderVegaLite({
    ...frame(options),
    data: { values: rows },
    layer: layers,
    resolve: { legend: { color: "independent" } },
  } as TopLevelSpec);
}

/** Vertical bars per category; bars with groups stand side by side (one colour per group). */
export async function barChart(options: BarChartOptions): Promise<string> {
  const categories = [...new Set(options.bars.map((bar) => bar.category))];
  const groups = [...new Set(options.bars.flatMap((bar) => (bar.group === undefined ? [] : [bar.group])))];
  for (const bar of options.bars) checkFinite(`barChart: value of "${bar.category}"`, bar.value);
  const rows = options.bars.map((bar) => ({
    category: bar.category,
    value: bar.value,
    group: bar.group ?? "",
  }));
  const grouped = groups.length > 0;
  const spec = {
    ...frame(options),
    data: { values: rows },
    mark: { type: "bar" },
    encoding: {
      x: {
        field: "category",
        type: "nominal",
        title: options.xLabel,
        sort: categories,
        axis: { labelAngle: categories.length > 6 ? -30 : 0 },
      },
      y: {
        field: "value",
        type: "quantitative",
        title: options.yLabel,
        ...(options.yDomain ? { scale: { domain: [...options.yDomain] } } : {}),
      },
      ...(grouped
        ? {
            xOffset: { field: "group", type: "nominal", sort: groups, scale: { domain: groups } },
            color: { field: "group", type: "nominal", title: null, sort: groups, scale: { domain: groups } },
          }
        : {}),
    },
  };
  return renderVegaLite(spec as TopLevelSpec);
}

/** Equal-width bin edges over [min, max] (one bin of width 1 around a constant sample). */
export function binEdges(values: readonly number[], bins: number): number[] {
  if (!Number.isInteger(bins) || bins < 1)
    throw new Error(`histogram: bins must be a positive integer, got ${bins}`);
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const value of values) {
    checkFinite("histogram: value", value);
    min = Math.min(min, value);
    max = Math.max(max, value);
  }
  if (values.length === 0) return [0, 1];
  if (min === max) return [min - 0.5, max + 0.5];
  const width = (max - min) / bins;
  return Array.from({ length: bins + 1 }, (_, i) => (i === bins ? max : min + i * width));
}

/** Counts per bin; the last bin is closed on the right so the maximum is counted. */
export function binCounts(values: readonly number[], edges: readonly number[]): number[] {
  const bins = edges.length - 1;
  const counts = new Array<number>(bins).fill(0);
  const width = (edges[bins] - edges[0]) / bins;
  for (const value of values) {
    const i = Math.min(bins - 1, Math.max(0, Math.floor((value - edges[0]) / width)));
    counts[i]++;
  }
  return counts;
}

/**
 * Histogram of one or several samples over shared bins (computed here, so the plot matches the
 * numbers a caller can check); several samples are drawn as overlaid translucent bars.
 */
export async function histogram(options: HistogramOptions): Promise<string> {
  const pooled = options.samples.flatMap((sample) => sample.values);
  const edges = binEdges(pooled, options.bins ?? 20);
  const names = options.samples.map((sample) => sample.name);
  const rows = options.samples.flatMap((sample) =>
    binCounts(sample.values, edges).map((count, i) => ({
      name: sample.name,
      start: edges[i],
      end: edges[i + 1],
      count,
    })),
  );
  const spec = {
    ...frame(options),
    data: { values: rows },
    mark: { type: "bar", opacity: names.length > 1 ? 0.5 : 0.9, binSpacing: 0 },
    encoding: {
      x: { field: "start", type: "quantitative", title: options.xLabel, bin: { binned: true } },
      x2: { field: "end" },
      y: { field: "count", type: "quantitative", title: options.yLabel ?? "count", stack: null },
      color: { field: "name", type: "nominal", title: null, sort: names, scale: { domain: names } },
    },
  };
  return renderVegaLite(spec as TopLevelSpec);
}
