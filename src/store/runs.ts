/** Runs: one row per run, with its config and final summary. */
import type { Database } from "./database.ts";
import { decodeJson, encodeJson } from "./json-codec.ts";
import { type CreateRunOptions, RUN_KINDS, RUN_STATUSES, type RunRecord, type RunStatus } from "./types.ts";

const SQL = {
  insert: `INSERT INTO runs (id, kind, status, parent_id, config, summary, created_at, finished_at)
           VALUES (?, ?, 'running', ?, ?, NULL, ?, NULL)`,
  get: "SELECT * FROM runs WHERE id = ?",
  exists: "SELECT 1 AS found FROM runs WHERE id = ?",
  list: "SELECT * FROM runs ORDER BY created_at, rowid",
  finish: "UPDATE runs SET status = ?, summary = ?, finished_at = ? WHERE id = ?",
  reopen: "UPDATE runs SET status = 'running', finished_at = NULL WHERE id = ?",
} as const;

/** `<kind>-<yyyymmdd>-<hhmmss>` in UTC. */
export function defaultRunId(kind: string, now: Date = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `${kind}-${stamp}`;
}

function rowToRun(row: Record<string, unknown>): RunRecord {
  return {
    id: String(row.id),
    kind: row.kind as RunRecord["kind"],
    status: row.status as RunStatus,
    parentId: row.parent_id === null ? null : String(row.parent_id),
    config: decodeJson(String(row.config)) as Record<string, unknown>,
    summary: row.summary === null ? null : (decodeJson(String(row.summary)) as Record<string, unknown>),
    createdAt: String(row.created_at),
    finishedAt: row.finished_at === null ? null : String(row.finished_at),
  };
}

export function runExists(database: Database, id: string): boolean {
  return database.statement(SQL.exists).get(id) !== undefined;
}

export function createRun(database: Database, options: CreateRunOptions): RunRecord {
  if (!RUN_KINDS.includes(options.kind)) {
    throw new Error(`unknown run kind "${options.kind}"; valid kinds: ${RUN_KINDS.join(", ")}`);
  }
  return database.transaction(() => {
    let id = options.id;
    if (id === undefined) {
      const base = defaultRunId(options.kind);
      id = base;
      for (let n = 2; runExists(database, id); n++) id = `${base}-${n}`;
    } else if (runExists(database, id)) {
      throw new Error(`run "${id}" already exists in ${database.path}`);
    }
    if (options.parentId !== undefined && !runExists(database, options.parentId)) {
      throw new Error(`parent run "${options.parentId}" does not exist in ${database.path}`);
    }
    const createdAt = new Date().toISOString();
    database
      .statement(SQL.insert)
      .run(id, options.kind, options.parentId ?? null, encodeJson(options.config ?? {}), createdAt);
    return getRun(database, id)!;
  });
}

export function getRun(database: Database, id: string): RunRecord | undefined {
  const row = database.statement(SQL.get).get(id);
  return row === undefined ? undefined : rowToRun(row);
}

/** The run, or an error that lists the runs the store holds. */
export function requireRun(database: Database, id: string): RunRecord {
  const run = getRun(database, id);
  if (run) return run;
  const known = listRuns(database).map((item) => item.id);
  throw new Error(`no run "${id}" in ${database.path}; runs: ${known.join(", ") || "(none)"}`);
}

export function listRuns(database: Database): RunRecord[] {
  return database.statement(SQL.list).all().map(rowToRun);
}

export function finishRun(
  database: Database,
  id: string,
  status: Exclude<RunStatus, "running">,
  summary?: object,
): RunRecord {
  const final = RUN_STATUSES.filter((item) => item !== "running");
  if (!(final as string[]).includes(status)) {
    throw new Error(`finishRun: invalid status "${status}"; valid: ${final.join(", ")}`);
  }
  requireRun(database, id);
  database.statement(SQL.finish).run(status, encodeJson(summary ?? {}), new Date().toISOString(), id);
  return getRun(database, id)!;
}

/** Marks a finished or crashed run `running` again, for a resume. Keeps its summary. */
export function reopenRun(database: Database, id: string): RunRecord {
  requireRun(database, id);
  database.statement(SQL.reopen).run(id);
  return getRun(database, id)!;
}
