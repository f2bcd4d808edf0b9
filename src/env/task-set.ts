/**
 * Task sets over the embedded world: tasks drawn from many worlds of one split (a model must use
 * its tools rather than memorise one world), and the tool factory that builds each episode's tools
 * over its task's world with per-episode seeded noise. Worlds and their search indexes are cached.
 */
import { mixSeeds } from "../core/random.ts";
import { type NoiseConfig, worldTools } from "../tools/index.ts";
import type { Task, TaskFamily } from "../types/task.ts";
import type { AnyTool } from "../types/tool.ts";
import { generateTasks, generateWorld, type World, worldSeeds } from "../world/index.ts";

export interface TaskSetOptions {
  split: "train" | "test";
  count: number;
  /** Seed of the selection: which worlds and which tasks. */
  seed: number;
  /** Only this family (all families when absent, in equal shares). */
  family?: TaskFamily;
  /** Tasks drawn from each world. */
  perWorld?: number;
}

const worldCache = new Map<number, World>();

/** The world of a seed, generated once per process. */
export function cachedWorld(seed: number): World {
  let world = worldCache.get(seed);
  if (!world) {
    if (worldCache.size > 256) worldCache.clear();
    world = generateWorld(seed);
    worldCache.set(seed, world);
  }
  return world;
}

/** `count` tasks of one split, `perWorld` from each of consecutive worlds after an offset set by `seed`. */
export function rolloutTasks(options: TaskSetOptions): Task[] {
  const perWorld = Math.max(1, options.perWorld ?? 10);
  const worlds = Math.ceil(options.count / perWorld);
  const start = mixSeeds(options.seed, 0x7a5c) % 1_000_000;
  const tasks: Task[] = [];
  for (const worldSeed of worldSeeds(options.split, worlds, start)) {
    const world = cachedWorld(worldSeed);
    const want = Math.min(perWorld, options.count - tasks.length);
    tasks.push(
      ...generateTasks(world, {
        count: want,
        split: options.split,
        seed: mixSeeds(options.seed, worldSeed),
        ...(options.family ? { family: options.family } : {}),
      }),
    );
  }
  return tasks;
}

export interface ToolFactoryOptions {
  noise?: NoiseConfig;
  topK?: number;
}

/** A tool factory for `runEpisodes`: the task's world's tools, noise seeded by the episode. */
export function worldToolsFor(
  options: ToolFactoryOptions = {},
): (task: Task, seed: number) => readonly AnyTool[] {
  return (task, seed) => {
    if (task.worldSeed === undefined)
      throw new Error(`task ${task.id} has no worldSeed: it is not a world task`);
    return worldTools(cachedWorld(task.worldSeed), {
      topK: options.topK,
      ...(options.noise ? { noise: options.noise, seed: mixSeeds(seed, task.worldSeed) } : {}),
    });
  };
}
