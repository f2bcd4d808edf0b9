/**
 * The store: runs, trajectories, metrics, artifacts and per-run state in one SQLite file
 * (`node:sqlite`, WAL; see database.ts for the durability choice). `Store` is a facade over the
 * per-concept modules, which each keep their SQL in one place.
 *
 *   const store = openStore("runs/eval-1/store.sqlite");
 *   const run = store.createRun({ id: "eval-1", kind: "eval", config });
 *   store.addTrajectory(run.id, trajectory, { key: episodeKey(task.id, sample) });
 *   store.addMetrics(run.id, 0, { "eval/pass@1": 0.42 });
 *   store.finishRun(run.id, "completed", { "eval/pass@1": 0.42 });
 *
 * Writes outside `transaction` commit one call at a time; `addTrajectories` and `addMetrics`
 * commit their whole batch at once. A write naming an unknown run throws. A trajectory write that
 * failed for an infra reason is retried (write-retry.ts).
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type { ToolSpec } from "../types/policy.ts";
import type { Trajectory } from "../types/trajectory.ts";
import * as artifactTable from "./artifacts.ts";
import { Database, type DatabaseOptions } from "./database.ts";
import * as metricTable from "./metrics.ts";
import * as runTable from "./runs.ts";
import { migrate } from "./schema.ts";
import * as stateTable from "./state.ts";
import * as trajectoryTable from "./trajectories.ts";
import type {
  AddTrajectoryOptions,
  ArtifactInput,
  ArtifactRecord,
  CreateRunOptions,
  MetricPoint,
  RunRecord,
  RunStatus,
  StoredTrajectory,
  TrajectoryFilter,
} from "./types.ts";
import { retryingWrite } from "./write-retry.ts";

/** State key under which a run keeps the tool specs its policy saw (used by exports). */
export const TOOL_SPECS_STATE_KEY = "tool-specs";

export type StoreOptions = DatabaseOptions;

/**
 * Opens the store file at `path` and migrates it, creating it and its parent folders if needed.
 * `readOnly` opens an existing, current store for reading only (an export beside a live run).
 */
export function openStore(path: string, options: StoreOptions = {}): Store {
  if (path !== ":memory:" && !options.readOnly) mkdirSync(dirname(path), { recursive: true });
  const database = new Database(path, options);
  try {
    migrate(database, { readOnly: options.readOnly });
  } catch (error) {
    database.close();
    throw error;
  }
  return new Store(database);
}

export class Store {
  readonly database: Database;

  constructor(database: Database) {
    this.database = database;
  }

  get path(): string {
    return this.database.path;
  }

  /** Runs `fn` atomically (see `Database.transaction`); store calls inside it join the transaction. */
  transaction<T>(fn: () => T): T {
    return this.database.transaction(fn);
  }

  close(): void {
    this.database.close();
  }

  /** `["ok"]` for a healthy file, otherwise SQLite's list of problems. */
  integrityCheck(): string[] {
    const rows = this.database.connection.prepare("PRAGMA integrity_check").all();
    return rows.map((row) => String(Object.values(row)[0]));
  }

  // ---- runs -------------------------------------------------------------------------------

  createRun(options: CreateRunOptions): RunRecord {
    return runTable.createRun(this.database, options);
  }

  getRun(id: string): RunRecord | undefined {
    return runTable.getRun(this.database, id);
  }

  /** The run, or an error listing the runs this store holds. */
  requireRun(id: string): RunRecord {
    return runTable.requireRun(this.database, id);
  }

  listRuns(filter: { kind?: string; parentId?: string } = {}): RunRecord[] {
    return runTable
      .listRuns(this.database)
      .filter(
        (run) =>
          (filter.kind === undefined || run.kind === filter.kind) &&
          (filter.parentId === undefined || run.parentId === filter.parentId),
      );
  }

  finishRun(id: string, status: Exclude<RunStatus, "running">, summary?: object): RunRecord {
    return runTable.finishRun(this.database, id, status, summary);
  }

  reopenRun(id: string): RunRecord {
    return runTable.reopenRun(this.database, id);
  }

  // ---- trajectories -----------------------------------------------------------------------

  /** Stores one episode; false when its key was already stored (first write wins). */
  addTrajectory(runId: string, trajectory: Trajectory, options: AddTrajectoryOptions = {}): boolean {
    const key = `${runId}/${options.key ?? trajectory.id}`;
    return retryingWrite(`storing trajectory ${key}`, key, () =>
      this.writing(runId, () => trajectoryTable.insertTrajectory(this.database, runId, trajectory, options)),
    );
  }

  /** Stores a batch in one transaction; returns how many were new. */
  addTrajectories(
    runId: string,
    trajectories: readonly Trajectory[],
    options: { step?: number; key?: (trajectory: Trajectory, index: number) => string } = {},
  ): number {
    const key = `${runId}/${trajectories[0]?.id ?? ""}+${trajectories.length}`;
    return retryingWrite(`storing ${trajectories.length} trajectories of run ${runId}`, key, () =>
      this.writing(runId, () =>
        this.database.transaction(() => {
          let added = 0;
          trajectories.forEach((trajectory, index) => {
            const key = options.key?.(trajectory, index);
            if (
              trajectoryTable.insertTrajectory(this.database, runId, trajectory, { step: options.step, key })
            ) {
              added++;
            }
          });
          return added;
        }),
      ),
    );
  }

  /** Matching trajectories in insertion order. */
  trajectories(runId: string, filter: TrajectoryFilter = {}): Trajectory[] {
    return Array.from(this.iterateTrajectories(runId, filter), (stored) => stored.trajectory);
  }

  /**
   * Matching trajectories with their key, step and sequence number, read lazily. Until the
   * iterator finishes (or `return` is called), this connection reads a snapshot: rows committed
   * meanwhile by others are not seen.
   */
  iterateTrajectories(runId: string, filter: TrajectoryFilter = {}): Generator<StoredTrajectory> {
    return trajectoryTable.iterateTrajectories(this.database, runId, filter);
  }

  countTrajectories(runId: string, filter: TrajectoryFilter = {}): number {
    return trajectoryTable.countTrajectories(this.database, runId, filter);
  }

  hasEpisode(runId: string, key: string): boolean {
    return trajectoryTable.hasEpisode(this.database, runId, key);
  }

  episodeKeys(runId: string): Set<string> {
    return trajectoryTable.episodeKeys(this.database, runId);
  }

  // ---- metrics ----------------------------------------------------------------------------

  /** Logs a record of namespaced metrics at `step` (one transaction; same key and step replaces). */
  addMetrics(runId: string, step: number, record: Readonly<Record<string, number>>): void {
    this.writing(runId, () => metricTable.addMetrics(this.database, runId, step, record));
  }

  metrics(runId: string, key?: string): MetricPoint[] {
    return metricTable.metrics(this.database, runId, key);
  }

  metricKeys(runId: string): string[] {
    return metricTable.metricKeys(this.database, runId);
  }

  // ---- artifacts --------------------------------------------------------------------------

  addArtifact(runId: string, artifact: ArtifactInput): ArtifactRecord {
    return this.writing(runId, () => artifactTable.addArtifact(this.database, runId, artifact));
  }

  artifacts(runId: string, kind?: string): ArtifactRecord[] {
    return artifactTable.artifacts(this.database, runId, kind);
  }

  /** The last registered artifact of `kind` (the checkpoint to resume from), if any. */
  latestArtifact(runId: string, kind: string): ArtifactRecord | undefined {
    return this.artifacts(runId, kind).at(-1);
  }

  // ---- state ------------------------------------------------------------------------------

  /** The stored value, or undefined. The type parameter is the caller's claim, not checked. */
  getState<T = unknown>(runId: string, key: string): T | undefined {
    return stateTable.getState(this.database, runId, key) as T | undefined;
  }

  setState(runId: string, key: string, value: unknown): void {
    this.writing(runId, () => stateTable.setState(this.database, runId, key, value));
  }

  deleteState(runId: string, key: string): boolean {
    return stateTable.deleteState(this.database, runId, key);
  }

  stateKeys(runId: string): string[] {
    return stateTable.stateKeys(this.database, runId);
  }

  /** Records the tool specs the run's policy saw, for exports (OpenAI `tools`). */
  setToolSpecs(runId: string, tools: readonly ToolSpec[]): void {
    this.setState(runId, TOOL_SPECS_STATE_KEY, tools);
  }

  toolSpecs(runId: string): ToolSpec[] | undefined {
    return this.getState<ToolSpec[]>(runId, TOOL_SPECS_STATE_KEY);
  }

  // ---- resume -----------------------------------------------------------------------------

  /**
   * Forgets everything a run recorded for steps after `step` (trajectories, metrics, artifact
   * entries), atomically: a run resumed from the checkpoint of `step` then rewrites those steps
   * without mixing two histories. Rows without a step are kept.
   */
  truncateAfterStep(
    runId: string,
    step: number,
  ): { trajectories: number; metrics: number; artifacts: number } {
    return this.database.transaction(() => ({
      trajectories: trajectoryTable.deleteTrajectoriesAfterStep(this.database, runId, step),
      metrics: metricTable.deleteMetricsAfterStep(this.database, runId, step),
      artifacts: artifactTable.deleteArtifactsAfterStep(this.database, runId, step),
    }));
  }

  /** Runs a write and turns SQLite's bare foreign-key failure into an error that names the run. */
  private writing<T>(runId: string, write: () => T): T {
    try {
      return write();
    } catch (error) {
      if (error instanceof Error && /FOREIGN KEY constraint failed/.test(error.message)) {
        this.requireRun(runId);
      }
      throw error;
    }
  }
}
