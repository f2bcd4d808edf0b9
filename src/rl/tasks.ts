/**
 * Where an RL run's tasks come from: fresh world tasks of the train split (families in equal
 * shares, new worlds every step), or a fixed list of task ids (model-aware selection,
 * `agentrl data select`). Every draw is a function of (seed, step, round) only, so a resumed run
 * draws exactly the tasks an uninterrupted one would have: no cursor to save.
 */
import { readFileSync } from "node:fs";
import { basename, extname } from "node:path";
import { createRng, mixSeeds } from "../core/random.ts";
import { rolloutTasks } from "../env/task-set.ts";
import { rowToTask } from "../tasks/index.ts";
import type { Task, TaskFamily } from "../types/task.ts";
import { taskFromId } from "../world/index.ts";

export interface TaskSampler {
  /** `count` tasks for round `round` of step `step` (distinct within the draw when the pool allows). */
  draw(step: number, round: number, count: number): Task[];
  /** What the tasks are, for logs. */
  readonly description: string;
}

/**
 * Reads an RL run's task list (`--tasks`): the tasks.jsonl `agentrl data select` writes (task rows,
 * read by the task-file reader's own row conversion, `rowToTask`), a JSON list of world task ids
 * or rows, or one world task id per line (`#` comments). A row with an id but no question is that
 * world task.
 */
export function readTaskList(path: string): Task[] {
  const text = readFileSync(path, "utf8");
  const stem = basename(path, extname(path));
  const fromEntry = (entry: unknown, position: number, where: string): Task => {
    if (typeof entry === "string") return taskFromId(entry);
    if (entry && typeof entry === "object" && typeof (entry as Task).id === "string") {
      return typeof (entry as Task).question === "string"
        ? rowToTask(entry, { stem, position, where: `${path} ${where}` })
        : taskFromId((entry as Task).id);
    }
    throw new Error(`${path}: ${where} is neither a task id nor a task`);
  };
  const trimmed = text.trim();
  if (trimmed.startsWith("[")) {
    const list = JSON.parse(trimmed) as unknown[];
    return list.map((entry, i) => fromEntry(entry, i + 1, `entry ${i}`));
  }
  return trimmed
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line, i) => fromEntry(line.startsWith("{") ? JSON.parse(line) : line, i + 1, `line ${i + 1}`));
}

/** Draws from a fixed pool: uniformly without replacement within a draw (with replacement past the pool). */
export function listSampler(tasks: readonly Task[], seed: number, description: string): TaskSampler {
  if (tasks.length === 0) throw new Error("rl tasks: the task list is empty");
  for (const task of tasks) {
    if (task.worldSeed === undefined)
      throw new Error(`rl tasks: ${task.id} is not a world task (no worldSeed)`);
  }
  return {
    description,
    draw(step, round, count) {
      const rng = createRng(mixSeeds(mixSeeds(seed, step), round + 0x51));
      const out: Task[] = [];
      while (out.length < count) out.push(...rng.shuffle(tasks).slice(0, count - out.length));
      return out;
    },
  };
}

/** Fresh world tasks of the families, in equal shares (the remainder to random families). */
export function worldSampler(
  families: readonly TaskFamily[],
  perWorld: number,
  seed: number,
  split: "train" | "test" = "train",
): TaskSampler {
  return {
    description: `world ${split} tasks (${families.join(", ")})`,
    draw(step, round, count) {
      const drawSeed = mixSeeds(mixSeeds(seed, step), round + 0x77);
      const rng = createRng(drawSeed);
      const shares = new Map<TaskFamily, number>();
      const base = Math.floor(count / families.length);
      for (const family of families) shares.set(family, base);
      for (const family of rng.shuffle(families).slice(0, count - base * families.length)) {
        shares.set(family, (shares.get(family) ?? 0) + 1);
      }
      const tasks: Task[] = [];
      for (const [family, share] of shares) {
        if (share === 0) continue;
        tasks.push(
          ...rolloutTasks({
            split,
            count: share,
            seed: mixSeeds(drawSeed, tasks.length + 1),
            family,
            perWorld,
          }),
        );
      }
      return rng.shuffle(tasks);
    },
  };
}

/** The sampler a config asks for. */
export function taskSamplerFor(options: {
  families: readonly TaskFamily[];
  taskIds?: readonly string[];
  taskFile?: string;
  perWorld: number;
  seed: number;
}): TaskSampler {
  if (options.taskIds) {
    return listSampler(
      options.taskIds.map((id) => taskFromId(id)),
      options.seed,
      `${options.taskIds.length} listed tasks`,
    );
  }
  if (options.taskFile) {
    const tasks = readTaskList(options.taskFile);
    return listSampler(tasks, options.seed, `${tasks.length} tasks of ${options.taskFile}`);
  }
  return worldSampler(options.families, options.perWorld, options.seed);
}
