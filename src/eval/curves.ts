/**
 * pass@k curves of an eval (each point with pass^k beside it), overall and per family and
 * template, on one k grid, with bootstrap intervals over tasks; their stable metric keys; and the
 * plain-text table the CLI prints.
 */
import type { BootstrapOptions } from "./bootstrap.ts";
import { kGrid, type PassAtKCurve, passAtKCurve } from "./passk.ts";
import { groupCounts, type TaskCount } from "./task-counts.ts";

export interface PassAtKCurves {
  /** The k grid shared by every curve. */
  ks: number[];
  overall: PassAtKCurve;
  /** Per family, sorted by name. */
  families: Record<string, PassAtKCurve>;
  /** Per template (tasks that carry one), sorted by name. */
  templates: Record<string, PassAtKCurve>;
}

export interface CurveOptions {
  /** k values; default `kGrid` of the smallest n over the tasks. */
  ks?: readonly number[];
  /** Bootstrap intervals over tasks (default on, 1000 resamples, seed 0); false for none. */
  bootstrap?: BootstrapOptions | false;
}

/** Smallest n over the tasks (every k of a curve must be at most this). */
export function minSamples(counts: readonly TaskCount[]): number {
  if (counts.length === 0) throw new Error("pass@k curves: no tasks");
  return Math.min(...counts.map((count) => count.n));
}

/** Curves overall, per family and per template. Throws when a task has fewer samples than the largest k. */
export function passAtKCurves(counts: readonly TaskCount[], options: CurveOptions = {}): PassAtKCurves {
  const minN = minSamples(counts);
  if (minN < 1) {
    const empty = counts.find((count) => count.n === 0)!;
    throw new Error(`pass@k curves: task ${empty.taskId} has no samples`);
  }
  const ks = [...(options.ks ?? kGrid(minN))];
  const bootstrap = options.bootstrap === false ? undefined : (options.bootstrap ?? {});
  const curve = (rows: readonly TaskCount[]) =>
    passAtKCurve(rows, { ks, ...(bootstrap ? { bootstrap } : {}) });
  const byLabel = (by: (count: TaskCount) => string | undefined) =>
    Object.fromEntries([...groupCounts(counts, by)].map(([label, rows]) => [label, curve(rows)]));
  return {
    ks,
    overall: curve(counts),
    families: byLabel((count) => count.family),
    templates: byLabel((count) => count.template),
  };
}

/** pass@k of a curve at k, or undefined when k is not on it. */
export function curveValue(curve: PassAtKCurve, k: number): number | undefined {
  return curve.find((point) => point.k === k)?.passAtK;
}

/** pass^k of a curve at k, or undefined when k is not on it (or the curve predates pass^k). */
export function curveHatValue(curve: PassAtKCurve, k: number): number | undefined {
  return curve.find((point) => point.k === k)?.passHatK;
}

/**
 * Stable metric keys: `<prefix>/pass@<k>` overall and `<prefix>/<family>/pass@<k>` per family
 * (e.g. `eval/pass@1`, `eval/bridge/pass@64`), and pass^k beside them as `<prefix>/pass^<k>` and
 * `<prefix>/<family>/pass^<k>`.
 */
export function curveMetrics(curves: PassAtKCurves, prefix = "eval"): Record<string, number> {
  const metrics: Record<string, number> = {};
  const add = (curve: PassAtKCurve, at: string) => {
    for (const point of curve) {
      metrics[`${at}/pass@${point.k}`] = point.passAtK;
      if (point.passHatK !== undefined) metrics[`${at}/pass^${point.k}`] = point.passHatK;
    }
  };
  add(curves.overall, prefix);
  for (const [family, curve] of Object.entries(curves.families)) add(curve, `${prefix}/${family}`);
  return metrics;
}

/**
 * The curve table: one row per k, pass@k overall then each family, and pass^k overall last
 * (3 decimals; per-family pass^k is in the JSON and the metrics).
 */
export function formatCurveTable(curves: PassAtKCurves): string {
  const families = Object.keys(curves.families);
  const header = ["k", "all", ...families, "pass^k"];
  const widths = header.map((name) => Math.max(6, name.length));
  const pad = (cells: string[]) => cells.map((cell, i) => cell.padStart(widths[i])).join("  ");
  const lines = [pad(header)];
  curves.ks.forEach((k, i) => {
    const values = [curves.overall[i], ...families.map((family) => curves.families[family][i])];
    const hat = curves.overall[i].passHatK;
    lines.push(
      pad([
        String(k),
        ...values.map((point) => point.passAtK.toFixed(3)),
        hat === undefined ? "-" : hat.toFixed(3),
      ]),
    );
  });
  return lines.join("\n");
}
