/**
 * Per-run key-value state for stage caching and resume bookkeeping (`last-step`, a stage's
 * output hash). Values are JSON (lossless, see json-codec.ts).
 */
import type { Database } from "./database.ts";
import { decodeJson, encodeJson } from "./json-codec.ts";

const SQL = {
  get: "SELECT value FROM state WHERE run_id = ? AND key = ?",
  upsert: `INSERT INTO state (run_id, key, value, updated_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
  delete: "DELETE FROM state WHERE run_id = ? AND key = ?",
  keys: "SELECT key FROM state WHERE run_id = ? ORDER BY key",
} as const;

export function getState(database: Database, runId: string, key: string): unknown {
  const row = database.statement(SQL.get).get(runId, key);
  return row === undefined ? undefined : decodeJson(String(row.value));
}

export function setState(database: Database, runId: string, key: string, value: unknown): void {
  if (value === undefined) throw new Error(`setState("${key}"): value is undefined; use deleteState`);
  database.statement(SQL.upsert).run(runId, key, encodeJson(value), new Date().toISOString());
}

export function deleteState(database: Database, runId: string, key: string): boolean {
  return Number(database.statement(SQL.delete).run(runId, key).changes) > 0;
}

export function stateKeys(database: Database, runId: string): string[] {
  return database
    .statement(SQL.keys)
    .all(runId)
    .map((row) => String(row.key));
}
