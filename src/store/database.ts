/**
 * A thin wrapper over `node:sqlite`'s `DatabaseSync`: connection pragmas, a prepared-statement
 * cache and nestable transactions. The per-concept modules (runs, trajectories, metrics, ...) keep
 * their SQL text as constants and prepare it through `statement`, so each statement is compiled
 * once per connection.
 *
 * Durability: WAL journal. `synchronous=NORMAL` (the default here) never corrupts the database and
 * loses nothing when the process dies (SIGKILL, OOM, a crash): a committed transaction is in the
 * WAL file before `COMMIT` returns. Only an OS crash or power loss can drop the last few commits,
 * which a resumed run regenerates (episode keys make re-adding idempotent). `FULL` adds an fsync per
 * commit for power-loss durability, at a cost of milliseconds per episode on slow disks.
 */
import { DatabaseSync, type StatementSync } from "node:sqlite";

export interface DatabaseOptions {
  /** `normal` (default): safe against process crashes; `full`: also against power loss. */
  synchronous?: "normal" | "full";
  /** Milliseconds a writer waits for another process's write lock before failing (default 5000). */
  busyTimeoutMs?: number;
  readOnly?: boolean;
}

export class Database {
  readonly path: string;
  readonly connection: DatabaseSync;
  private readonly statements = new Map<string, StatementSync>();
  private depth = 0;

  constructor(path: string, options: DatabaseOptions = {}) {
    this.path = path;
    this.connection = new DatabaseSync(path, {
      readOnly: options.readOnly ?? false,
      enableForeignKeyConstraints: true,
      timeout: options.busyTimeoutMs ?? 5000,
    });
    if (!options.readOnly) this.connection.exec("PRAGMA journal_mode = WAL");
    this.connection.exec(`PRAGMA synchronous = ${options.synchronous === "full" ? "FULL" : "NORMAL"}`);
    this.connection.exec("PRAGMA foreign_keys = ON");
  }

  /** The prepared statement for `sql`, compiled on first use. */
  statement(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.connection.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /**
   * Runs `fn` in a transaction: all of its writes commit together or none do. Nested calls become
   * savepoints, so a caller can wrap several store calls (a step's trajectories, metrics and
   * state) into one atomic commit. The outer transaction is `BEGIN IMMEDIATE`: it takes the write
   * lock up front, so two processes never deadlock upgrading a read lock.
   */
  transaction<T>(fn: () => T): T {
    const savepoint = `sp${this.depth}`;
    this.connection.exec(this.depth === 0 ? "BEGIN IMMEDIATE" : `SAVEPOINT ${savepoint}`);
    this.depth++;
    let result: T;
    try {
      result = fn();
      if (result instanceof Promise)
        throw new Error("Database.transaction: the callback must be synchronous");
    } catch (error) {
      this.depth--;
      this.rollback(savepoint);
      throw error;
    }
    this.depth--;
    try {
      this.connection.exec(this.depth === 0 ? "COMMIT" : `RELEASE ${savepoint}`);
    } catch (error) {
      this.rollback(savepoint);
      throw error;
    }
    return result;
  }

  private rollback(savepoint: string): void {
    if (!this.connection.isTransaction) return;
    this.connection.exec(this.depth === 0 ? "ROLLBACK" : `ROLLBACK TO ${savepoint}; RELEASE ${savepoint}`);
  }

  close(): void {
    this.statements.clear();
    if (this.connection.isOpen) this.connection.close();
  }
}
