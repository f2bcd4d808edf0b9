/** Records the store reads and writes. Every field is plain JSON data. */
import type { Trajectory } from "../types/trajectory.ts";

/** What a run does. A recipe run is the parent of its stage runs. */
export const RUN_KINDS = ["rollout", "eval", "pretrain", "sft", "rl", "dataset", "recipe", "doctor"] as const;
export type RunKind = (typeof RUN_KINDS)[number];

/** `running` until `finishRun`; a run left `running` by a dead process is resumable. */
export const RUN_STATUSES = ["running", "completed", "failed", "interrupted"] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export interface RunRecord {
  id: string;
  kind: RunKind;
  status: RunStatus;
  /** The run that started this one (a recipe's stages), or null. */
  parentId: string | null;
  /** The validated config the run was started with. */
  config: Record<string, unknown>;
  /** What `finishRun` recorded (final metrics, error message), or null while running. */
  summary: Record<string, unknown> | null;
  /** ISO 8601 times. */
  createdAt: string;
  finishedAt: string | null;
}

export interface CreateRunOptions {
  /** Default: `<kind>-<yyyymmdd>-<hhmmss>` (UTC), with `-2`, `-3`, ... appended on a clash. */
  id?: string;
  kind: RunKind;
  /** Any JSON-serialisable object (a command's validated config); read back as a plain record. */
  config?: object;
  parentId?: string;
}

export interface AddTrajectoryOptions {
  /** RL step (or SFT epoch) the episode belongs to; null/absent outside training. */
  step?: number;
  /**
   * Idempotency key, unique within a run; default `trajectory.id`. A resumable eval passes
   * `episodeKey(task.id, sampleIndex)` so that regenerating an episode after a crash is a no-op.
   */
  key?: string;
}

export interface TrajectoryFilter {
  family?: string;
  taskId?: string;
  policyId?: string;
  correct?: boolean;
  step?: number;
  /** Only the first `limit` matches, in insertion order. */
  limit?: number;
  /** Skip that many matches first. */
  offset?: number;
}

/** A stored trajectory with the bookkeeping the store adds. */
export interface StoredTrajectory {
  /** Insertion order within the store (monotonic, never reused). */
  seq: number;
  runId: string;
  key: string;
  step: number | null;
  createdAt: string;
  trajectory: Trajectory;
}

export interface MetricPoint {
  step: number;
  key: string;
  /** NaN when a NaN was logged (SQLite stores it as NULL). */
  value: number;
  createdAt: string;
}

export interface ArtifactInput {
  /** e.g. `checkpoint`, `report`, `dataset`. */
  kind: string;
  /** Relative to the run directory, so a run directory can be moved as a whole. */
  path: string;
  step?: number;
  meta?: Record<string, unknown>;
}

export interface ArtifactRecord {
  seq: number;
  runId: string;
  kind: string;
  path: string;
  step: number | null;
  meta: Record<string, unknown> | null;
  createdAt: string;
}
