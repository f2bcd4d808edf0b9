/**
 * The store's schema, as an ordered list of migrations. A store records which migrations it has
 * applied in `migrations`; opening a store applies the missing ones, each in its own transaction.
 * Never edit a released migration: append a new one.
 *
 * Trajectories keep the full record as JSON (`json`, lossless, see json-codec.ts) plus the columns
 * people filter on. `key` makes episodes idempotent: `(run_id, key)` is unique and re-adding a key
 * is a no-op, so a resumed eval can re-add what it regenerates.
 */
import type { Database } from "./database.ts";

interface Migration {
  version: number;
  name: string;
  sql: string;
}

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "initial",
    sql: `
      CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        status TEXT NOT NULL,
        parent_id TEXT REFERENCES runs(id),
        config TEXT NOT NULL,
        summary TEXT,
        created_at TEXT NOT NULL,
        finished_at TEXT
      );

      CREATE TABLE trajectories (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        family TEXT NOT NULL,
        policy_id TEXT NOT NULL,
        seed INTEGER NOT NULL,
        grp INTEGER,
        correct INTEGER NOT NULL,
        outcome_reward REAL,
        end_reason TEXT NOT NULL,
        n_turns INTEGER NOT NULL,
        n_tool_calls INTEGER NOT NULL,
        step INTEGER,
        created_at TEXT NOT NULL,
        json TEXT NOT NULL,
        UNIQUE (run_id, key)
      );
      CREATE INDEX trajectories_task ON trajectories (run_id, task_id);
      CREATE INDEX trajectories_family ON trajectories (run_id, family);
      CREATE INDEX trajectories_step ON trajectories (run_id, step);

      CREATE TABLE metrics (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        step INTEGER NOT NULL,
        key TEXT NOT NULL,
        value REAL,
        created_at TEXT NOT NULL,
        UNIQUE (run_id, key, step)
      );

      CREATE TABLE artifacts (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        path TEXT NOT NULL,
        step INTEGER,
        meta TEXT,
        created_at TEXT NOT NULL
      );
      CREATE INDEX artifacts_kind ON artifacts (run_id, kind);

      CREATE TABLE state (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
      );
    `,
  },
];

/** Schema version this code writes. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;

/**
 * Applies missing migrations; refuses a store written by a newer schema. A read-only connection
 * cannot migrate: it only checks that the store is current. Returns the version.
 */
export function migrate(database: Database, options: { readOnly?: boolean } = {}): number {
  const connection = database.connection;
  if (options.readOnly) {
    const table = connection.prepare("SELECT 1 AS found FROM sqlite_master WHERE name = 'migrations'").get();
    if (!table) throw new Error(`${database.path} is not an agentrl store (no migrations table)`);
  } else {
    connection.exec(
      "CREATE TABLE IF NOT EXISTS migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
    );
  }
  const appliedVersion = () =>
    Number(connection.prepare("SELECT MAX(version) AS version FROM migrations").get()?.version ?? 0);
  const current = appliedVersion();
  if (current > SCHEMA_VERSION) {
    throw new Error(
      `store ${database.path} has schema version ${current}, newer than ${SCHEMA_VERSION} known to this agentrl: upgrade agentrl`,
    );
  }
  if (options.readOnly && current < SCHEMA_VERSION) {
    throw new Error(
      `store ${database.path} has schema version ${current}; open it once writable to migrate it`,
    );
  }
  for (const migration of MIGRATIONS) {
    if (migration.version <= current) continue;
    database.transaction(() => {
      // Another process may have migrated while this one waited for the write lock.
      if (appliedVersion() >= migration.version) return;
      connection.exec(migration.sql);
      connection
        .prepare("INSERT INTO migrations (version, name, applied_at) VALUES (?, ?, ?)")
        .run(migration.version, migration.name, new Date().toISOString());
    });
  }
  return SCHEMA_VERSION;
}
