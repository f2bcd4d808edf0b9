/** pass@k curves as an SVG line chart: log-scale k, pass@k in [0, 1], bootstrap bands where present. */
import { type LineSeries, lineChart } from "../report/plots.ts";
import type { PassAtKCurve } from "./passk.ts";

export interface NamedCurve {
  name: string;
  curve: PassAtKCurve;
  /** Draw the curve's bootstrap interval as a band (default true). */
  band?: boolean;
}

export function curveSeries({ name, curve, band = true }: NamedCurve): LineSeries {
  return {
    name,
    points: curve.map((point) => ({
      x: point.k,
      y: point.passAtK,
      ...(band && point.lower !== undefined && point.upper !== undefined
        ? { lower: point.lower, upper: point.upper }
        : {}),
    })),
  };
}

export function passAtKChart(curves: readonly NamedCurve[], title: string): Promise<string> {
  return lineChart({
    series: curves.map(curveSeries),
    xLog: true,
    xLabel: "k (samples)",
    yLabel: "pass@k",
    yDomain: [0, 1],
    title,
  });
}
