/**
 * pass@k curves as an SVG line chart: log-scale k, pass@k in [0, 1], bootstrap bands where present;
 * or, with `measure: "pass^k"`, the same curves' pass^k (every one of k samples correct), drawn as
 * its own chart beside the pass@k one (pass@k rises with k, pass^k falls: one axis would crowd them).
 */
import { type LineSeries, lineChart } from "../report/plots.ts";
import type { PassAtKCurve } from "./passk.ts";

/** Which value of a curve's points to draw. */
export type CurveMeasure = "pass@k" | "pass^k";

export interface NamedCurve {
  name: string;
  curve: PassAtKCurve;
  /** Draw the curve's bootstrap interval as a band (default true). */
  band?: boolean;
}

export function curveSeries(
  { name, curve, band = true }: NamedCurve,
  measure: CurveMeasure = "pass@k",
): LineSeries {
  if (measure === "pass^k") {
    return {
      name,
      // Curves stored before pass^k was kept have none: no points.
      points: curve.flatMap((point) =>
        point.passHatK === undefined
          ? []
          : [
              {
                x: point.k,
                y: point.passHatK,
                ...(band && point.passHatKLower !== undefined && point.passHatKUpper !== undefined
                  ? { lower: point.passHatKLower, upper: point.passHatKUpper }
                  : {}),
              },
            ],
      ),
    };
  }
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

/** True when every point of every curve carries pass^k (curves computed since it was kept). */
export function hasPassHatK(curves: readonly NamedCurve[]): boolean {
  return (
    curves.length > 0 && curves.every(({ curve }) => curve.every((point) => point.passHatK !== undefined))
  );
}

export function passAtKChart(
  curves: readonly NamedCurve[],
  title: string,
  measure: CurveMeasure = "pass@k",
): Promise<string> {
  return lineChart({
    series: curves.map((curve) => curveSeries(curve, measure)),
    xLog: true,
    xLabel: "k (samples)",
    yLabel: measure,
    yDomain: [0, 1],
    title,
  });
}
