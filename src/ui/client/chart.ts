/**
 * Line charts with vega-lite, drawn as SVG by vega (the libraries the static report uses, served
 * from node_modules). Data always goes in through the dataset `points` with fixed field names
 * (`series`, `x`, `y`, `raw`), never as field names or expressions in the spec, so a metric key or
 * run id is only ever shown as text. `update` swaps the data of a drawn chart in place, which is
 * how a live run's new steps appear without redrawing the page.
 */
import type * as VegaModule from "vega";
import type * as VegaLiteModule from "vega-lite";

declare const vega: typeof VegaModule;
declare const vegaLite: typeof VegaLiteModule;

export interface ChartPoint {
  series: string;
  x: number;
  /** Smoothed value (what the line shows). */
  y: number;
  /** Raw value (the faint line). */
  raw: number;
}

export interface ChartOptions {
  title: string;
  xTitle: string;
  yTitle: string;
  /** Log scale on x (pass@k over k). */
  logX?: boolean;
  /** Draw points on the line (few x values). */
  points?: boolean;
  width?: number;
}

export interface Chart {
  update(points: readonly ChartPoint[]): Promise<void>;
  dispose(): void;
}

function spec(options: ChartOptions): VegaLiteModule.TopLevelSpec {
  const x = {
    field: "x",
    type: "quantitative" as const,
    title: options.xTitle,
    axis: { tickMinStep: 1, format: "d" },
    scale: options.logX ? { type: "log" as const, base: 2 } : { zero: false },
  };
  const color = {
    field: "series",
    type: "nominal" as const,
    title: null,
    legend: { orient: "bottom" as const },
  };
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: { text: options.title, anchor: "start", fontSize: 13 },
    width: options.width ?? 420,
    height: 200,
    data: { name: "points" },
    layer: [
      {
        mark: { type: "line", opacity: 0.25, strokeWidth: 1 },
        encoding: { x, y: { field: "raw", type: "quantitative", title: options.yTitle }, color },
      },
      {
        mark: { type: "line", strokeWidth: 2, point: options.points ?? false, tooltip: true },
        encoding: { x, y: { field: "y", type: "quantitative", title: options.yTitle }, color },
      },
    ],
    config: {
      view: { stroke: null },
      axis: { labelFontSize: 10, titleFontSize: 11 },
      legend: { symbolOpacity: 1, symbolStrokeWidth: 2 },
    },
  };
}

export async function drawChart(
  container: HTMLElement,
  options: ChartOptions,
  points: readonly ChartPoint[],
): Promise<Chart> {
  const compiled = vegaLite.compile(spec(options)).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: "svg", container, hover: true });
  view.change("points", vega.changeset().insert([...points]));
  await view.runAsync();
  return {
    async update(next) {
      view.change(
        "points",
        vega
          .changeset()
          .remove(() => true)
          .insert([...next]),
      );
      await view.runAsync();
    },
    dispose() {
      view.finalize();
    },
  };
}
