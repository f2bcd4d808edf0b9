/**
 * The trajectory list of the dashboard: one summary row per stored episode, filtered by the
 * indexed columns of the store's `trajectories` table (task, family, correctness, end reason,
 * step) and by tool status, which lives in the JSON record and is matched with SQLite's JSON
 * functions so that a page of rows never decodes the episodes it skips. Read-only SQL.
 */
import type { Store } from "../store/index.ts";
import { TOOL_STATUSES, type ToolStatus } from "../types/tool.ts";
import { END_REASONS, type EndReason } from "../types/trajectory.ts";

export interface TrajectoryQuery {
  taskId?: string;
  family?: string;
  correct?: boolean;
  endReason?: EndReason;
  step?: number;
  /** Episodes with at least one tool result of this status. */
  toolStatus?: ToolStatus;
  /** Only episodes with at least one injected tool failure. */
  injected?: boolean;
  limit: number;
  offset: number;
}

export interface TrajectorySummary {
  seq: number;
  key: string;
  taskId: string;
  family: string;
  policyId: string;
  seed: number;
  group: number | null;
  step: number | null;
  correct: boolean;
  outcomeReward: number | null;
  endReason: string;
  turns: number;
  toolCalls: number;
  /** Tool status of each tool call in order, `*` after an injected one (`ok timeout* empty`). */
  toolStatuses: string;
}

export interface TrajectoryFacets {
  total: number;
  families: string[];
  endReasons: string[];
  steps: number[];
  tasks: number;
  /** Episodes whose failure class is infra (types/failure.ts): never scored, shown as a count. */
  infraFailures: number;
}

// `trajectories.json`, qualified: json_each has a hidden column of its own named `json`.
const FILTER = `run_id = :run
  AND (:task IS NULL OR task_id = :task)
  AND (:family IS NULL OR family = :family)
  AND (:correct IS NULL OR correct = :correct)
  AND (:end IS NULL OR end_reason = :end)
  AND (:step IS NULL OR step = :step)
  AND (:status IS NULL OR EXISTS (SELECT 1 FROM json_each(trajectories.json, '$.turns') AS turn
        WHERE json_extract(turn.value, '$.toolResult.status') = :status))
  AND (:injected IS NULL OR EXISTS (SELECT 1 FROM json_each(trajectories.json, '$.turns') AS turn
        WHERE json_extract(turn.value, '$.toolResult.injected') = 1))`;

const STATUSES = `(SELECT group_concat(json_extract(turn.value, '$.toolResult.status') ||
    CASE WHEN json_extract(turn.value, '$.toolResult.injected') = 1 THEN '*' ELSE '' END, ' ')
  FROM json_each(trajectories.json, '$.turns') AS turn WHERE json_extract(turn.value, '$.toolResult') IS NOT NULL)`;

const SQL = {
  page: `SELECT seq, key, task_id, family, policy_id, seed, grp, step, correct, outcome_reward, end_reason,
           n_turns, n_tool_calls, ${STATUSES} AS statuses
         FROM trajectories WHERE ${FILTER} ORDER BY seq LIMIT :limit OFFSET :offset`,
  count: `SELECT COUNT(*) AS n FROM trajectories WHERE ${FILTER}`,
  families: "SELECT DISTINCT family FROM trajectories WHERE run_id = ? ORDER BY family",
  endReasons: "SELECT DISTINCT end_reason FROM trajectories WHERE run_id = ? ORDER BY end_reason",
  steps: "SELECT DISTINCT step FROM trajectories WHERE run_id = ? AND step IS NOT NULL ORDER BY step",
  tasks: "SELECT COUNT(DISTINCT task_id) AS n FROM trajectories WHERE run_id = ?",
  total: "SELECT COUNT(*) AS n FROM trajectories WHERE run_id = ?",
  infra:
    "SELECT COUNT(*) AS n FROM trajectories WHERE run_id = ? AND json_extract(json, '$.failure.class') = 'infra'",
  sameTask: `SELECT seq, correct, step, grp FROM trajectories WHERE run_id = ? AND task_id = ? AND seq != ?
             ORDER BY seq LIMIT 200`,
  bySeq: "SELECT seq, key, step, created_at, json FROM trajectories WHERE run_id = ? AND seq = ?",
} as const;

/** Parses the list's URL query; a bad value throws an error naming it and the valid values. */
export function parseTrajectoryQuery(params: Record<string, string | undefined>): TrajectoryQuery {
  const query: TrajectoryQuery = { limit: 50, offset: 0 };
  const integer = (name: string, min: number, max: number): number | undefined => {
    const raw = params[name];
    if (raw === undefined || raw === "") return undefined;
    const value = Number(raw);
    if (!Number.isSafeInteger(value) || value < min || value > max) {
      throw new QueryError(`${name} must be an integer in [${min}, ${max}], got "${raw}"`);
    }
    return value;
  };
  if (params.task) query.taskId = params.task;
  if (params.family) query.family = params.family;
  if (params.correct) {
    if (params.correct !== "true" && params.correct !== "false") {
      throw new QueryError(`correct must be true or false, got "${params.correct}"`);
    }
    query.correct = params.correct === "true";
  }
  if (params.end) {
    if (!(END_REASONS as readonly string[]).includes(params.end)) {
      throw new QueryError(`end must be one of ${END_REASONS.join(", ")}; got "${params.end}"`);
    }
    query.endReason = params.end as EndReason;
  }
  if (params.tool) {
    if (!(TOOL_STATUSES as readonly string[]).includes(params.tool)) {
      throw new QueryError(`tool must be one of ${TOOL_STATUSES.join(", ")}; got "${params.tool}"`);
    }
    query.toolStatus = params.tool as ToolStatus;
  }
  if (params.injected === "true") query.injected = true;
  const step = integer("step", Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  if (step !== undefined) query.step = step;
  query.limit = integer("limit", 1, 500) ?? query.limit;
  query.offset = integer("offset", 0, Number.MAX_SAFE_INTEGER) ?? query.offset;
  return query;
}

/** A request the client got wrong (HTTP 400). */
export class QueryError extends Error {}

function bindings(runId: string, query: TrajectoryQuery) {
  return {
    run: runId,
    task: query.taskId ?? null,
    family: query.family ?? null,
    correct: query.correct === undefined ? null : query.correct ? 1 : 0,
    end: query.endReason ?? null,
    step: query.step ?? null,
    status: query.toolStatus ?? null,
    injected: query.injected ? 1 : null,
  };
}

const nullableNumber = (value: unknown) => (value === null ? null : Number(value));

export function listTrajectories(
  store: Store,
  runId: string,
  query: TrajectoryQuery,
): { total: number; rows: TrajectorySummary[] } {
  const connection = store.database;
  const bound = bindings(runId, query);
  const total = Number(connection.statement(SQL.count).get(bound)?.n ?? 0);
  const rows = connection
    .statement(SQL.page)
    .all({ ...bound, limit: query.limit, offset: query.offset })
    .map(
      (row): TrajectorySummary => ({
        seq: Number(row.seq),
        key: String(row.key),
        taskId: String(row.task_id),
        family: String(row.family),
        policyId: String(row.policy_id),
        seed: Number(row.seed),
        group: nullableNumber(row.grp),
        step: nullableNumber(row.step),
        correct: Number(row.correct) === 1,
        outcomeReward: nullableNumber(row.outcome_reward),
        endReason: String(row.end_reason),
        turns: Number(row.n_turns),
        toolCalls: Number(row.n_tool_calls),
        toolStatuses: row.statuses === null ? "" : String(row.statuses),
      }),
    );
  return { total, rows };
}

export function trajectoryFacets(store: Store, runId: string): TrajectoryFacets {
  const database = store.database;
  const column = (sql: string, name: string) =>
    database
      .statement(sql)
      .all(runId)
      .map((row) => row[name]);
  return {
    total: Number(database.statement(SQL.total).get(runId)?.n ?? 0),
    families: column(SQL.families, "family").map(String),
    endReasons: column(SQL.endReasons, "end_reason").map(String),
    steps: column(SQL.steps, "step").map(Number),
    tasks: Number(database.statement(SQL.tasks).get(runId)?.n ?? 0),
    infraFailures: Number(database.statement(SQL.infra).get(runId)?.n ?? 0),
  };
}

/** Other episodes of the same task in the run (for the side-by-side view), first 200 by seq. */
export function sameTaskEpisodes(
  store: Store,
  runId: string,
  taskId: string,
  seq: number,
): { seq: number; correct: boolean; step: number | null; group: number | null }[] {
  return store.database
    .statement(SQL.sameTask)
    .all(runId, taskId, seq)
    .map((row) => ({
      seq: Number(row.seq),
      correct: Number(row.correct) === 1,
      step: nullableNumber(row.step),
      group: nullableNumber(row.grp),
    }));
}

/** The raw stored row of one episode (JSON still encoded), or undefined. */
export function storedEpisodeRow(store: Store, runId: string, seq: number) {
  return store.database.statement(SQL.bySeq).get(runId, seq);
}
