/**
 * An eval's run: opened in memory (`persist: false`), resumed (the same config and task list, else
 * a clear error naming what differs), or created; and the state keys it keeps beside its episodes.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  createRunDirectory,
  DEFAULT_RUNS_ROOT,
  directoryRun,
  isAbandonedRunDirectory,
  isRunDirectory,
  openRunDirectory,
  openStore,
  type RunRecord,
  type Store,
} from "../store/index.ts";
import type { Task } from "../types/task.ts";
import type { EvalConfig, EvaluateOptions } from "./run-eval.ts";

/** State keys of an eval run. */
export const EVAL_TASKS_STATE_KEY = "eval/tasks";
export const EVAL_TOKENIZER_STATE_KEY = "eval/tokenizer";

/** Fields of two configs that differ, as `field: stored → new`. */
export function configDifferences(stored: EvalConfig, wanted: EvalConfig): string[] {
  const fields = Object.keys(wanted) as (keyof EvalConfig)[];
  // A field an older run did not record reads as null (its default).
  const show = (value: unknown) => JSON.stringify(value ?? null);
  return fields
    .filter((field) => show(stored[field]) !== show(wanted[field]))
    .map((field) => `${field}: ${show(stored[field])} → ${show(wanted[field])}`);
}

export interface OpenedRun {
  store: Store;
  run: RunRecord;
  directory: string | null;
}

/** Where and how an eval run is stored (the part of the options `openEvalRun` reads). */
export type EvalRunPlacement = Pick<
  EvaluateOptions,
  "persist" | "resume" | "runId" | "runsRoot" | "parentId"
>;

/**
 * Opens the eval's run: in memory (`persist: false`), resumed (same config and task list, else a
 * clear error), or new.
 */
export function openEvalRun(
  options: EvalRunPlacement,
  config: EvalConfig,
  tasks: readonly Task[],
): OpenedRun {
  if (options.persist === false) {
    if (options.resume) throw new Error("evaluate: resume needs a persisted run (persist: true)");
    const store = openStore(":memory:");
    const run = store.createRun({
      id: options.runId ?? "eval",
      kind: "eval",
      config,
      parentId: options.parentId,
    });
    return { store, run, directory: null };
  }
  const root = options.runsRoot ?? DEFAULT_RUNS_ROOT;
  const existing = options.resume ?? (options.runId ? join(root, options.runId) : undefined);
  // A folder a kill left before its run existed is created anew (createRunDirectory takes it over).
  if (
    existing !== undefined &&
    (options.resume !== undefined || (existsSync(existing) && !isAbandonedRunDirectory(existing)))
  ) {
    if (!isRunDirectory(existing)) throw new Error(`cannot resume ${existing}: it is not a run directory`);
    const store = openRunDirectory(existing);
    try {
      let run = directoryRun(store, existing);
      if (run.kind !== "eval")
        throw new Error(`cannot resume ${existing}: it is a ${run.kind} run, not an eval`);
      const differences = configDifferences(run.config as unknown as EvalConfig, config);
      if (differences.length > 0) {
        throw new Error(`cannot resume ${existing}: its config differs (${differences.join("; ")})`);
      }
      // No task list yet: killed right after the run was created; `evaluate` writes it.
      const storedTasks = store.getState<Task[]>(run.id, EVAL_TASKS_STATE_KEY);
      const storedIds = storedTasks?.map((task) => task.id).join("\n");
      if (storedTasks && storedIds !== tasks.map((task) => task.id).join("\n")) {
        throw new Error(`cannot resume ${existing}: its task list differs from the one asked for`);
      }
      if (run.status !== "running") run = store.reopenRun(run.id);
      return { store, run, directory: existing };
    } catch (error) {
      store.close();
      throw error;
    }
  }
  const created = createRunDirectory({
    kind: "eval",
    root,
    config,
    ...(options.runId ? { id: options.runId } : {}),
    ...(options.parentId ? { parentId: options.parentId } : {}),
  });
  return created;
}
