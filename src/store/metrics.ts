/**
 * Metrics: one number per (run, key, step), keys namespaced as in STYLE.md (`rollout/success_rate`,
 * `loss/policy`). Logging a key again at the same step replaces the value, so a run resumed from
 * an earlier checkpoint overwrites the steps it repeats instead of duplicating them.
 */
import type { Database } from "./database.ts";
import type { MetricPoint } from "./types.ts";

const SQL = {
  upsert: `INSERT INTO metrics (run_id, step, key, value, created_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (run_id, key, step) DO UPDATE SET value = excluded.value, created_at = excluded.created_at`,
  all: "SELECT step, key, value, created_at FROM metrics WHERE run_id = ? ORDER BY step, key",
  byKey: "SELECT step, key, value, created_at FROM metrics WHERE run_id = ? AND key = ? ORDER BY step",
  keys: "SELECT DISTINCT key FROM metrics WHERE run_id = ? ORDER BY key",
  deleteAfterStep: "DELETE FROM metrics WHERE run_id = ? AND step > ?",
} as const;

export function addMetrics(
  database: Database,
  runId: string,
  step: number,
  record: Readonly<Record<string, number>>,
): void {
  if (!Number.isSafeInteger(step)) throw new Error(`metrics step must be an integer, got ${step}`);
  const createdAt = new Date().toISOString();
  const insert = database.statement(SQL.upsert);
  database.transaction(() => {
    for (const [key, value] of Object.entries(record)) {
      if (typeof value !== "number") throw new Error(`metric "${key}" must be a number, got ${typeof value}`);
      // SQLite turns NaN into NULL; it is read back as NaN.
      insert.run(runId, step, key, Number.isNaN(value) ? null : value, createdAt);
    }
  });
}

function rowToPoint(row: Record<string, unknown>): MetricPoint {
  return {
    step: Number(row.step),
    key: String(row.key),
    value: row.value === null ? Number.NaN : Number(row.value),
    createdAt: String(row.created_at),
  };
}

/** Every point of the run ordered by step then key, or one key's series ordered by step. */
export function metrics(database: Database, runId: string, key?: string): MetricPoint[] {
  const rows =
    key === undefined
      ? database.statement(SQL.all).all(runId)
      : database.statement(SQL.byKey).all(runId, key);
  return rows.map(rowToPoint);
}

export function metricKeys(database: Database, runId: string): string[] {
  return database
    .statement(SQL.keys)
    .all(runId)
    .map((row) => String(row.key));
}

export function deleteMetricsAfterStep(database: Database, runId: string, step: number): number {
  return Number(database.statement(SQL.deleteAfterStep).run(runId, step).changes);
}
