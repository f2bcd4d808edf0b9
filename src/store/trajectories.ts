/**
 * Trajectories: the full record as lossless JSON plus the columns people filter on. Adding is
 * idempotent per `(run, key)`: `ON CONFLICT DO NOTHING` on that key only, so a resumed eval that
 * regenerates an episode keeps the first stored copy, while every other constraint (a missing run)
 * still fails loudly.
 */
import { countToolCalls, type Trajectory } from "../types/trajectory.ts";
import type { Database } from "./database.ts";
import { decodeJson, encodeJson } from "./json-codec.ts";
import type { AddTrajectoryOptions, StoredTrajectory, TrajectoryFilter } from "./types.ts";

// One WHERE clause serves every filter: an absent filter binds NULL and matches all rows.
const FILTER = `run_id = :run
  AND (:family IS NULL OR family = :family)
  AND (:task IS NULL OR task_id = :task)
  AND (:policy IS NULL OR policy_id = :policy)
  AND (:correct IS NULL OR correct = :correct)
  AND (:step IS NULL OR step = :step)`;

const SQL = {
  insert: `INSERT INTO trajectories (run_id, key, id, task_id, family, policy_id, seed, grp, correct,
             outcome_reward, end_reason, n_turns, n_tool_calls, step, created_at, json)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (run_id, key) DO NOTHING`,
  select: `SELECT seq, run_id, key, step, created_at, json FROM trajectories WHERE ${FILTER}
           ORDER BY seq LIMIT :limit OFFSET :offset`,
  count: `SELECT COUNT(*) AS n FROM trajectories WHERE ${FILTER}`,
  hasKey: "SELECT 1 AS found FROM trajectories WHERE run_id = ? AND key = ?",
  keys: "SELECT key FROM trajectories WHERE run_id = ? ORDER BY seq",
  deleteAfterStep: "DELETE FROM trajectories WHERE run_id = ? AND step > ?",
} as const;

/** The conventional idempotency key of an episode: task id and sample index (or seed). */
export function episodeKey(taskId: string, sample: number): string {
  return `${taskId}#${sample}`;
}

function checkInteger(name: string, value: number | undefined): void {
  if (value !== undefined && !Number.isSafeInteger(value)) {
    throw new Error(`${name} must be an integer, got ${value}`);
  }
}

/** Inserts one trajectory; returns false when its key was already stored (nothing written). */
export function insertTrajectory(
  database: Database,
  runId: string,
  trajectory: Trajectory,
  options: AddTrajectoryOptions = {},
): boolean {
  checkInteger("step", options.step);
  checkInteger("trajectory.seed", trajectory.seed);
  const result = database
    .statement(SQL.insert)
    .run(
      runId,
      options.key ?? trajectory.id,
      trajectory.id,
      trajectory.taskId,
      trajectory.family,
      trajectory.policyId,
      trajectory.seed,
      trajectory.group ?? null,
      trajectory.correct ? 1 : 0,
      trajectory.outcomeReward,
      trajectory.endReason,
      trajectory.turns.length,
      countToolCalls(trajectory),
      options.step ?? null,
      new Date().toISOString(),
      encodeJson(trajectory),
    );
  return Number(result.changes) > 0;
}

function filterParams(runId: string, filter: TrajectoryFilter) {
  return {
    run: runId,
    family: filter.family ?? null,
    task: filter.taskId ?? null,
    policy: filter.policyId ?? null,
    correct: filter.correct === undefined ? null : filter.correct ? 1 : 0,
    step: filter.step ?? null,
  };
}

function rowToStored(row: Record<string, unknown>): StoredTrajectory {
  return {
    seq: Number(row.seq),
    runId: String(row.run_id),
    key: String(row.key),
    step: row.step === null ? null : Number(row.step),
    createdAt: String(row.created_at),
    trajectory: decodeJson(String(row.json)) as Trajectory,
  };
}

/**
 * Matching trajectories in insertion order, read lazily (one row in memory at a time). While it is
 * open the connection holds a read transaction: it sees a snapshot taken at the first row.
 */
export function* iterateTrajectories(
  database: Database,
  runId: string,
  filter: TrajectoryFilter = {},
): Generator<StoredTrajectory> {
  const params = { ...filterParams(runId, filter), limit: filter.limit ?? -1, offset: filter.offset ?? 0 };
  // A fresh statement, not the cached one: two live iterations over one statement would reset
  // each other (a consumer may iterate one run while reading another).
  for (const row of database.connection.prepare(SQL.select).iterate(params)) yield rowToStored(row);
}

export function countTrajectories(database: Database, runId: string, filter: TrajectoryFilter = {}): number {
  return Number(database.statement(SQL.count).get(filterParams(runId, filter))?.n ?? 0);
}

export function hasEpisode(database: Database, runId: string, key: string): boolean {
  return database.statement(SQL.hasKey).get(runId, key) !== undefined;
}

/** Every stored key of a run, for a resume to skip finished episodes with one query. */
export function episodeKeys(database: Database, runId: string): Set<string> {
  return new Set(
    database
      .statement(SQL.keys)
      .all(runId)
      .map((row) => String(row.key)),
  );
}

/** Deletes trajectories of steps after `step` (a resume from the checkpoint of `step`). */
export function deleteTrajectoriesAfterStep(database: Database, runId: string, step: number): number {
  return Number(database.statement(SQL.deleteAfterStep).run(runId, step).changes);
}
