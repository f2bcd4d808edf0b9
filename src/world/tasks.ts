/**
 * Tasks of a world. A task is template + index in a world: its id `w<seed>/<family>/<template>/<i>`
 * names it for good (rebuild it with `taskFromId`).
 *
 * `generateTasks` samples without replacement: it picks a family uniformly among those left, a
 * template uniformly within the family, then an unused valid index of that template uniformly.
 * Families or templates whose tasks run out drop out, so fewer than `count` tasks come back only
 * when the world has no more (a 20-country world has at most 20 capital-pop tasks).
 *
 * Splits: a task's split is its world's split (`splitOfWorld`); asking a train world for test
 * tasks (or the other way round) is an error, so test tasks only come from test worlds.
 */
import { createRng, hashString, mixSeeds, type Rng } from "../core/random.ts";
import { TASK_FAMILIES, type Task, type TaskFamily } from "../types/task.ts";
import { findTemplate, TEMPLATES } from "./catalogue.ts";
import { generateWorld } from "./generate.ts";
import type { PlanChain, TaskPlan, TaskTemplate } from "./templates.ts";
import { ATTRIBUTES, ENTITY_TYPES, type World, type WorldConfig, type WorldSplit } from "./types.ts";
import { indexWorld } from "./world-index.ts";

export interface TaskOptions {
  /** Only this family (default: all). */
  family?: TaskFamily;
  /** Only this template (must belong to `family` when both are given). */
  template?: string;
  /** Never these templates (a corpus that withholds `sum3`). */
  excludeTemplates?: readonly string[];
  count: number;
  /** Must equal the world's split when given. */
  split?: WorldSplit;
  /** Sampling seed (default 0); the same world, options and seed give the same tasks. */
  seed?: number;
}

/** Family, template and hop count of every template, in catalogue order. */
export const TASK_TEMPLATES: readonly { family: TaskFamily; template: string; hops: number }[] =
  TEMPLATES.map((template) => ({ family: template.family, template: template.name, hops: template.hops }));

export function taskId(world: World, template: TaskTemplate, index: number): string {
  return `w${world.seed}/${template.family}/${template.name}/${index}`;
}

/** The task at `index` of a template in a world, or null when that index makes no valid task. */
export function buildTask(world: World, template: TaskTemplate | string, index: number): Task | null {
  const spec = typeof template === "string" ? findTemplate(template) : template;
  const draft = spec.build(indexWorld(world), index);
  if (!draft) return null;
  return {
    id: taskId(world, spec, index),
    question: draft.question,
    answer: String(draft.answer),
    family: spec.family,
    template: spec.name,
    hops: spec.hops,
    worldSeed: world.seed,
    split: world.split,
    gold: draft.gold,
    evidence: draft.evidence,
    metadata: { plan: draft.plan, worldConfig: world.config },
  };
}

/** Rebuilds a task from its id; `config` must be the config of the world it came from (default config by default). */
export function taskFromId(id: string, config: Partial<WorldConfig> = {}): Task {
  const match = /^w(\d+)\/([a-z]+)\/([a-z0-9-]+)\/(\d+)$/.exec(id);
  if (!match) throw new Error(`task id "${id}" is not of the form w<seed>/<family>/<template>/<index>`);
  const template = findTemplate(match[3]);
  if (template.family !== match[2])
    throw new Error(`task id "${id}": template ${template.name} is in family ${template.family}`);
  const task = buildTask(generateWorld(Number(match[1]), config), template, Number(match[4]));
  if (!task) throw new Error(`task id "${id}" names no valid task in that world`);
  return task;
}

/** Draws the unused valid indices of one template in random order. */
interface IndexSampler {
  next(): Task | null;
}

// Index spaces up to this size are enumerated and shuffled; larger ones (sum3) are rejection-sampled.
const ENUMERATE_LIMIT = 4096;
const REJECTION_TRIES = 2000;

function indexSampler(world: World, template: TaskTemplate, rng: Rng): IndexSampler {
  const size = template.size(indexWorld(world));
  if (size <= ENUMERATE_LIMIT) {
    const order = rng.shuffle(Array.from({ length: size }, (_, i) => i));
    let position = 0;
    return {
      next() {
        while (position < order.length) {
          const task = buildTask(world, template, order[position++]);
          if (task) return task;
        }
        return null;
      },
    };
  }
  const used = new Set<number>();
  return {
    next() {
      for (let tries = 0; tries < REJECTION_TRIES; tries++) {
        const index = rng.int(size);
        if (used.has(index)) continue;
        used.add(index);
        const task = buildTask(world, template, index);
        if (task) return task;
      }
      return null;
    },
  };
}

export function generateTasks(world: World, options: TaskOptions): Task[] {
  const { count, family, template, split } = options;
  if (!Number.isInteger(count) || count < 0)
    throw new Error(`generateTasks: count must be an integer >= 0, got ${count}`);
  if (family !== undefined && !TASK_FAMILIES.includes(family)) {
    throw new Error(`generateTasks: unknown family "${family}" (valid: ${TASK_FAMILIES.join(", ")})`);
  }
  if (template !== undefined) {
    const spec = findTemplate(template);
    if (family !== undefined && spec.family !== family) {
      throw new Error(`generateTasks: template ${template} is in family ${spec.family}, not ${family}`);
    }
  }
  for (const name of options.excludeTemplates ?? []) findTemplate(name);
  if (split !== undefined && split !== world.split) {
    throw new Error(
      `generateTasks: world ${world.seed} is a ${world.split} world, so it has no ${split} tasks ` +
        `(test worlds are the seeds with splitOfWorld(seed) === "test"; list them with worldSeeds)`,
    );
  }
  const excluded = new Set(options.excludeTemplates ?? []);
  const chosen = TEMPLATES.filter(
    (spec) =>
      (family === undefined || spec.family === family) &&
      (template === undefined || spec.name === template) &&
      !excluded.has(spec.name),
  );
  const rng = createRng(mixSeeds(hashString(`agentrl/tasks/${world.seed}`), options.seed ?? 0));
  const pools = new Map<TaskFamily, { template: TaskTemplate; sampler?: IndexSampler }[]>();
  for (const spec of chosen) {
    pools.set(spec.family, [...(pools.get(spec.family) ?? []), { template: spec }]);
  }
  const tasks: Task[] = [];
  while (tasks.length < count && pools.size > 0) {
    const familyName = rng.pick([...pools.keys()]);
    const entries = pools.get(familyName)!;
    const entry = rng.pick(entries);
    entry.sampler ??= indexSampler(world, entry.template, rng.fork(entry.template.name));
    const task = entry.sampler.next();
    if (task) {
      tasks.push(task);
      continue;
    }
    entries.splice(entries.indexOf(entry), 1);
    if (entries.length === 0) pools.delete(familyName);
  }
  return tasks;
}

/** The plan of a world task (`metadata.plan`), checked; null for tasks without one. */
export function taskPlan(task: Task): TaskPlan | null {
  const plan = task.metadata?.plan as TaskPlan | undefined;
  if (!plan || !Array.isArray(plan.chains) || !["none", "diff", "sum"].includes(plan.combine)) return null;
  const valid = (chain: PlanChain) =>
    typeof chain.start === "string" &&
    (ENTITY_TYPES as readonly string[]).includes(chain.type) &&
    Array.isArray(chain.reads) &&
    chain.reads.length > 0 &&
    chain.reads.every((read) => read in ATTRIBUTES);
  return plan.chains.length > 0 && plan.chains.every(valid) ? plan : null;
}

/** The world config a task was generated with (`metadata.worldConfig`), if recorded. */
export function taskWorldConfig(task: Task): Partial<WorldConfig> | undefined {
  const config = task.metadata?.worldConfig;
  return config && typeof config === "object" ? (config as Partial<WorldConfig>) : undefined;
}
