/**
 * An eval's tasks: where they come from (world tasks drawn by recipe, or an explicit list such as a
 * task file's), checked once (non-empty, unique ids), and how the source is recorded in the run's
 * config so a resume asks for the same list.
 */
import { rolloutTasks } from "../env/task-set.ts";
import type { Task, TaskFamily } from "../types/task.ts";

/** World tasks of one split, drawn as `rolloutTasks` draws them. */
export interface WorldTaskSource {
  type: "world";
  split: "train" | "test";
  count: number;
  /** Seed of the task selection (kept apart from the sampling seed so evals of several models share tasks). */
  seed: number;
  family?: TaskFamily;
}

/** An explicit task list (file tasks: pass their `tools` and `verify` too). */
export interface GivenTaskSource {
  type: "given";
  tasks: readonly Task[];
  /** Name of the set (a file path), recorded in the config. */
  name?: string;
}

export type EvalTaskSource = WorldTaskSource | GivenTaskSource;

/** How an eval's tasks are recorded in its config (`EvalConfig.tasks`). */
export type EvalTaskConfig =
  | { type: "world"; split: "train" | "test"; count: number; seed: number; family: TaskFamily | null }
  | { type: "given"; name: string | null; count: number };

/** The tasks of a source, checked: non-empty, unique ids. */
export function resolveEvalTasks(source: EvalTaskSource): Task[] {
  const tasks =
    source.type === "world"
      ? rolloutTasks({
          split: source.split,
          count: source.count,
          seed: source.seed,
          ...(source.family ? { family: source.family } : {}),
        })
      : [...source.tasks];
  if (tasks.length === 0) throw new Error("evaluate: the task set is empty");
  const seen = new Set<string>();
  for (const task of tasks) {
    if (seen.has(task.id)) throw new Error(`evaluate: duplicate task id ${task.id}`);
    seen.add(task.id);
  }
  return tasks;
}

/** How an eval's tasks are recorded in its config (world tasks by their recipe, given ones by name). */
export function taskSourceConfig(source: EvalTaskSource, tasks: readonly Task[]): EvalTaskConfig {
  return source.type === "world"
    ? {
        type: "world",
        split: source.split,
        count: source.count,
        seed: source.seed,
        family: source.family ?? null,
      }
    : { type: "given", name: source.name ?? null, count: tasks.length };
}

/** How errors name a task source: its file when it has one. */
export function taskSourceName(tasks: EvalTaskConfig): string {
  return tasks.type === "given" && tasks.name ? tasks.name : "the task list";
}
