/**
 * Training tasks for datasets: world tasks of one split (train by default: SFT data never comes
 * from test worlds), drawn from consecutive worlds like `rolloutTasks`, with a template filter and
 * optional template shares, so a dataset can hold more of a rare template than the uniform
 * family → template draw gives (e.g. `sum3: 0.25`, the template the pretraining corpus withholds).
 */
import { hashString, mixSeeds } from "../core/random.ts";
import { cachedWorld } from "../env/task-set.ts";
import type { Task, TaskFamily } from "../types/task.ts";
import { findTemplate, generateTasks, splitOfWorld } from "../world/index.ts";

export interface DatasetTaskOptions {
  /** Number of tasks. */
  count: number;
  /** Seed of the selection: which worlds and which tasks. */
  seed: number;
  /** Default `train`. */
  split?: "train" | "test";
  family?: TaskFamily;
  /**
   * Several families in equal shares (the remainder to the first ones), each drawn with its own
   * seed; the other options apply to each share. Not with `family` or `templateShares`.
   */
  families?: readonly TaskFamily[];
  template?: string;
  /** Templates never drawn. */
  excludeTemplates?: readonly string[];
  /**
   * Template → fraction of `count` drawn from that template alone (rounded); the rest follows
   * `family`/`template`. Shares must sum to at most 1.
   */
  templateShares?: Readonly<Record<string, number>>;
  /** Tasks drawn from each world (default 10). */
  perWorld?: number;
}

/** Tasks for a dataset (deterministic in the options); ids are unique. */
export function datasetTasks(options: DatasetTaskOptions): Task[] {
  const { count, seed } = options;
  if (!Number.isInteger(count) || count < 1)
    throw new Error(`tasks: count must be an integer >= 1, got ${count}`);
  if (options.families) return familyShares(options);
  const shares = Object.entries(options.templateShares ?? {});
  let total = 0;
  for (const [template, share] of shares) {
    findTemplate(template);
    if (!(share >= 0 && share <= 1))
      throw new Error(`template share of ${template} must be in [0, 1], got ${share}`);
    total += share;
  }
  if (total > 1 + 1e-9) throw new Error(`template shares sum to ${Number(total.toFixed(6))}, more than 1`);
  const split = options.split ?? "train";
  const seen = new Set<string>();
  const tasks: Task[] = [];
  const add = (list: Task[]) => {
    for (const task of list) {
      if (seen.has(task.id)) continue;
      seen.add(task.id);
      tasks.push(task);
    }
  };
  let shared = 0;
  for (const [template, share] of shares) {
    const n = Math.round(share * count);
    if (n === 0) continue;
    shared += n;
    add(drawTasks(n, split, mixSeeds(seed, hashString(template)), options.perWorld, { template }, seen));
  }
  const rest = count - shared;
  if (rest > 0) {
    add(
      drawTasks(
        rest,
        split,
        seed,
        options.perWorld,
        {
          family: options.family,
          template: options.template,
          excludeTemplates: options.excludeTemplates,
        },
        seen,
      ),
    );
  }
  return tasks;
}

/** `datasetTasks` over several families in equal shares. */
function familyShares(options: DatasetTaskOptions): Task[] {
  const { families = [], count, seed } = options;
  if (families.length === 0) throw new Error("tasks: families must name at least one family");
  if (options.family || options.templateShares)
    throw new Error("tasks: give families, or family and templateShares, not both");
  const { families: _, ...rest } = options;
  return families.flatMap((family, i) => {
    const share = Math.floor(count / families.length) + (i < count % families.length ? 1 : 0);
    return share === 0
      ? []
      : datasetTasks({ ...rest, count: share, family, seed: mixSeeds(seed, hashString(family)) });
  });
}

function drawTasks(
  count: number,
  split: "train" | "test",
  seed: number,
  perWorld = 10,
  filter: { family?: TaskFamily; template?: string; excludeTemplates?: readonly string[] },
  exclude: ReadonlySet<string>,
): Task[] {
  const tasks: Task[] = [];
  let barren = 0;
  for (let worldSeed = mixSeeds(seed, 0x7a5c) % 1_000_000; tasks.length < count; worldSeed++) {
    if (splitOfWorld(worldSeed) !== split) continue;
    const drawn = generateTasks(cachedWorld(worldSeed), {
      count: Math.min(perWorld, count - tasks.length),
      split,
      seed: mixSeeds(seed, worldSeed),
      ...(filter.family ? { family: filter.family } : {}),
      ...(filter.template ? { template: filter.template } : {}),
      ...(filter.excludeTemplates ? { excludeTemplates: filter.excludeTemplates } : {}),
    }).filter((task) => !exclude.has(task.id));
    tasks.push(...drawn);
    barren = drawn.length === 0 ? barren + 1 : 0;
    if (barren > 200)
      throw new Error(`tasks: 200 worlds in a row gave no task for ${JSON.stringify(filter)}`);
  }
  return tasks;
}

/** The template of a world task id (`w17/arithmetic/sum3/3` → `sum3`), or null for other ids. */
export function templateOfTaskId(taskId: string): string | null {
  const match = /^w\d+\/[a-z]+\/([a-z0-9-]+)\/\d+$/.exec(taskId);
  return match ? match[1] : null;
}

/** Parses `sum3=0.25,diff2=0.1` (or `:` instead of `=`) into template shares. */
export function parseTemplateShares(text: string): Record<string, number> {
  const shares: Record<string, number> = {};
  for (const part of text
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)) {
    const match = /^([a-z0-9-]+)\s*[=:]\s*([0-9.]+)$/.exec(part);
    if (!match) throw new Error(`--template-share: "${part}" is not <template>=<fraction>`);
    findTemplate(match[1]);
    shares[match[1]] = Number(match[2]);
  }
  return shares;
}
