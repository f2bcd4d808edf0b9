/**
 * Per-task sample counts (n samples, c correct) from stored eval trajectories: the input of every
 * pass@k curve. A policy failure (`endReason: "policy-error"`) is a sample like any other: it is
 * counted in n as a failure (dropping it would bias pass@k upwards) and, separately, in
 * `policyErrors`, so a flaky endpoint is visible rather than silently flattering.
 *
 * An infra failure (`trajectory.failure.class === "infra"`: the upstream, a sandbox or the verifier
 * broke; types/failure.ts) is not a sample of the policy: it is left out of n and c and counted in
 * `infraFailures`, so pass@k over the other samples is what a fault-free run of them gives.
 */
import { isInfraFailure } from "../types/failure.ts";
import type { Task } from "../types/task.ts";
import type { Trajectory } from "../types/trajectory.ts";
import type { TaskSamples } from "./passk.ts";

export interface TaskCount extends TaskSamples {
  taskId: string;
  family: string;
  /** Template of world tasks, when known. */
  template?: string;
  /** Samples that ended with a policy error (included in n, never in c). */
  policyErrors: number;
  /** Episodes that failed for an infra reason (not samples: in neither n nor c). Absent: 0. */
  infraFailures?: number;
}

/** What a task needs to be counted: its id, family and optional template. */
export type TaskLabel = Pick<Task, "id" | "family" | "template">;

/**
 * Counts samples per task. With `tasks`, the result follows their order, holds a row for every
 * task (n = 0 when nothing was sampled) and ignores trajectories of other tasks; without, rows
 * come in order of first appearance with the trajectory's family.
 */
export function countByTask(trajectories: Iterable<Trajectory>, tasks?: readonly TaskLabel[]): TaskCount[] {
  const rows = new Map<string, TaskCount>();
  for (const task of tasks ?? []) {
    rows.set(task.id, {
      taskId: task.id,
      family: task.family,
      ...(task.template !== undefined ? { template: task.template } : {}),
      n: 0,
      c: 0,
      policyErrors: 0,
      infraFailures: 0,
    });
  }
  for (const trajectory of trajectories) {
    let row = rows.get(trajectory.taskId);
    if (!row) {
      if (tasks) continue;
      row = {
        taskId: trajectory.taskId,
        family: trajectory.family,
        n: 0,
        c: 0,
        policyErrors: 0,
        infraFailures: 0,
      };
      rows.set(trajectory.taskId, row);
    }
    if (isInfraFailure(trajectory)) {
      row.infraFailures = (row.infraFailures ?? 0) + 1;
      continue;
    }
    row.n++;
    if (trajectory.correct) row.c++;
    if (trajectory.endReason === "policy-error") row.policyErrors++;
  }
  return [...rows.values()];
}

/** Rows grouped by a label (family, template), groups sorted by name; rows without the label are skipped. */
export function groupCounts(
  counts: readonly TaskCount[],
  by: (count: TaskCount) => string | undefined,
): Map<string, TaskCount[]> {
  const groups = new Map<string, TaskCount[]>();
  for (const count of counts) {
    const label = by(count);
    if (label === undefined) continue;
    const list = groups.get(label) ?? [];
    list.push(count);
    groups.set(label, list);
  }
  return new Map([...groups.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export interface TaskTotals {
  tasks: number;
  samples: number;
  correct: number;
  policyErrors: number;
  /** Episodes left out of the samples for an infra failure. */
  infraFailures: number;
  /** Tasks solved at least once (c > 0). */
  solved: number;
}

/** Totals over rows: samples, correct samples, policy errors, infra failures, and tasks solved at least once. */
export function countTotals(counts: readonly TaskCount[]): TaskTotals {
  let samples = 0;
  let correct = 0;
  let policyErrors = 0;
  let infraFailures = 0;
  let solved = 0;
  for (const count of counts) {
    samples += count.n;
    correct += count.c;
    policyErrors += count.policyErrors;
    infraFailures += count.infraFailures ?? 0;
    if (count.c > 0) solved++;
  }
  return { tasks: counts.length, samples, correct, policyErrors, infraFailures, solved };
}
