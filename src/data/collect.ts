/**
 * Real end-to-end trajectories (arXiv:2510.11701's SFT data): a policy runs through the real
 * episode loop with noisy tools, so the trajectories hold what real interaction holds: tool
 * errors, empty results, timeouts, wrong documents, and the agent's retries and corrections.
 * Rejection sampling keeps those that pass a filter (by default: correct).
 *
 * Sampling: `samplesPerTask` episodes per task (seed: the collection seed, the task id and the
 * sample index), at most `maxKeptPerTask` of the passing ones kept, in sample order. Tasks are
 * processed in chunks and each chunk's kept trajectories are handed to `onKept` before the next
 * starts, so a crash loses at most one chunk.
 *
 * Resume: `collectDataset` commits each chunk's kept trajectories together with the progress (tasks
 * done, counts so far) in one transaction; run again with the same `out` and the same settings, it
 * continues after the last committed chunk. Episode seeds depend only on the task and sample, so
 * the resumed dataset is the one an uninterrupted run collects.
 */
import { existsSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { hashString, mixSeeds } from "../core/random.ts";
import { type EpisodeBudgets, runEpisodes } from "../env/run-episodes.ts";
import { worldToolsFor } from "../env/task-set.ts";
import { type ResolvePolicyOptions, resolvePolicy } from "../policy/resolve.ts";
import {
  type CreatedRunDirectory,
  decodeJson,
  directoryRun,
  encodeJson,
  openRunDirectory,
} from "../store/index.ts";
import { finishRunAfterError } from "../store/run-failure.ts";
import { toolSpec, uniformNoise } from "../tools/index.ts";
import { isInfraFailure } from "../types/failure.ts";
import type { Policy } from "../types/policy.ts";
import type { Task } from "../types/task.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { checkAnswer } from "../world/index.ts";
import { createDatasetDirectory } from "./dataset.ts";
import { type FilterCriterion, formatFilter, parseFilter, rejectionReason } from "./filter.ts";
import { type DatasetTaskOptions, datasetTasks } from "./tasks.ts";

export interface CollectOptions {
  policy: Policy;
  tasks: readonly Task[];
  /** Total tool failure rate, spread evenly over error/empty/timeout/corrupted (default 0.2). */
  noise?: number;
  /** Seed of the episodes (sampling and tool noise). */
  seed: number;
  /** Criteria a kept trajectory meets (default: correct). */
  filter?: readonly FilterCriterion[];
  /** Episodes run per task (default 1). */
  samplesPerTask?: number;
  /** Most passing episodes kept per task (default 1). */
  maxKeptPerTask?: number;
  budgets?: Partial<EpisodeBudgets>;
  /** Episodes advanced together (default 64). */
  batchSize?: number;
  /** Tasks per chunk (default 256). */
  chunkTasks?: number;
  /** Tasks already collected (a resume): collection starts after them. */
  tasksDone?: number;
  /** The counts of those tasks (a resume). */
  countsDone?: CollectCounts;
  /** Kept trajectories of a finished chunk, in task and sample order, with the progress after it. */
  onKept?: (trajectories: Trajectory[], progress: CollectProgress) => void | Promise<void>;
  onProgress?: (progress: { episodes: number; total: number; kept: number }) => void;
  signal?: AbortSignal;
}

/** How far a collection has come: tasks done (in order) and their counts. */
export interface CollectProgress {
  tasksDone: number;
  counts: CollectCounts;
}

export interface CollectCounts {
  tasks: number;
  episodes: number;
  kept: number;
  rejected: number;
  /** Rejected episodes by the first criterion they failed (`over-quota`: passed, but the task had enough). */
  rejections: Record<string, number>;
  /** Tasks with at least one kept trajectory. */
  tasksWithKept: number;
  /**
   * Episodes that failed for an infra reason (upstream, sandbox, verifier): never kept, whatever the
   * filter (also counted in `rejected`, as `infra-failure`).
   */
  infraFailures: number;
}

/** The counts of a collection that has not started. */
export function emptyCollectCounts(tasks: number): CollectCounts {
  return { tasks, episodes: 0, kept: 0, rejected: 0, rejections: {}, tasksWithKept: 0, infraFailures: 0 };
}

/** The rejection reason of an infra-failed episode: it is not the policy's, so never training data. */
export const INFRA_REJECTION = "infra-failure";

/**
 * Rejection sampling over each task's samples (one list per task): the trajectories that pass the
 * filter, at most `maxKept` per task, in order; the counts are updated (kept, rejections by
 * reason, `over-quota` for passing ones past the quota, `infra-failure` for infra-failed episodes
 * whatever the filter, tasks with a kept trajectory).
 */
export function keepPassing(
  bySample: readonly (readonly Trajectory[])[],
  filter: readonly FilterCriterion[],
  maxKept: number,
  counts: CollectCounts,
): Trajectory[] {
  const kept: Trajectory[] = [];
  for (const samples of bySample) {
    let keptOfTask = 0;
    for (const trajectory of samples) {
      const infra = isInfraFailure(trajectory);
      if (infra) counts.infraFailures++;
      const reason = infra
        ? INFRA_REJECTION
        : (rejectionReason(trajectory, filter) ?? (keptOfTask >= maxKept ? "over-quota" : null));
      if (reason) {
        counts.rejected++;
        counts.rejections[reason] = (counts.rejections[reason] ?? 0) + 1;
        continue;
      }
      keptOfTask++;
      kept.push(trajectory);
    }
    if (keptOfTask > 0) counts.tasksWithKept++;
  }
  counts.kept += kept.length;
  return kept;
}

/** Samples per task and kept per task (default 1 each), checked to be integers >= 1. */
export function sampleQuota(options: { samplesPerTask?: number; maxKeptPerTask?: number }): {
  samples: number;
  maxKept: number;
} {
  const samples = options.samplesPerTask ?? 1;
  const maxKept = options.maxKeptPerTask ?? 1;
  if (!Number.isInteger(samples) || samples < 1)
    throw new Error(`samplesPerTask must be an integer >= 1, got ${samples}`);
  if (!Number.isInteger(maxKept) || maxKept < 1)
    throw new Error(`maxKeptPerTask must be an integer >= 1, got ${maxKept}`);
  return { samples, maxKept };
}

/** Runs the episodes and applies the filter; returns the counts (trajectories go to `onKept`). */
export async function collectTrajectories(options: CollectOptions): Promise<CollectCounts> {
  const noise = options.noise ?? 0.2;
  const filter = options.filter ?? [{ type: "correct" }];
  const { samples, maxKept } = sampleQuota(options);
  const tools = worldToolsFor(noise > 0 ? { noise: uniformNoise(noise) } : {});
  const counts: CollectCounts = structuredClone(
    options.countsDone ?? emptyCollectCounts(options.tasks.length),
  );
  // Counts saved by a run from before infra failures were counted.
  counts.infraFailures ??= 0;
  const total = options.tasks.length * samples;
  const chunk = Math.max(1, options.chunkTasks ?? 256);
  for (let start = options.tasksDone ?? 0; start < options.tasks.length; start += chunk) {
    const tasks = options.tasks.slice(start, start + chunk);
    const episodes = tasks.flatMap((task) =>
      Array.from({ length: samples }, (_, sample) => ({
        task,
        seed: mixSeeds(mixSeeds(options.seed, hashString(task.id)), sample),
        id: `${task.id}#${sample}`,
      })),
    );
    const trajectories = await runEpisodes({
      policy: options.policy,
      episodes,
      tools,
      verify: checkAnswer,
      budgets: options.budgets,
      batchSize: options.batchSize ?? 64,
      signal: options.signal,
      onEpisode: () => {
        counts.episodes++;
        options.onProgress?.({ episodes: counts.episodes, total, kept: counts.kept });
      },
    });
    const bySample = tasks.map((_, t) => trajectories.slice(t * samples, (t + 1) * samples));
    const kept = keepPassing(bySample, filter, maxKept, counts).map((trajectory) => ({
      ...trajectory,
      info: { ...trajectory.info, source: "collect", noise },
    }));
    await options.onKept?.(kept, {
      tasksDone: Math.min(options.tasks.length, start + chunk),
      counts: structuredClone(counts),
    });
    options.onProgress?.({ episodes: counts.episodes, total, kept: counts.kept });
  }
  return counts;
}

export interface CollectDatasetOptions {
  /** Scripted policy name, checkpoint directory or `openai:<base-url>#<model>` (default `expert`). */
  policy?: string;
  /** Sampling options of a model policy. */
  policyOptions?: ResolvePolicyOptions;
  /** Which tasks (train worlds unless `split` says otherwise). */
  tasks: DatasetTaskOptions;
  noise?: number;
  seed: number;
  /** Filter spec (`correct`, `correct,no-format-error`, `all`…; default `correct`). */
  filter?: string;
  samplesPerTask?: number;
  maxKeptPerTask?: number;
  budgets?: Partial<EpisodeBudgets>;
  batchSize?: number;
  /** Tasks per committed chunk (default 256): a kill loses at most one chunk's episodes. */
  chunkTasks?: number;
  /**
   * Dataset directory (`runs/<id>`); default a new `<runsRoot>/dataset-<date>`. An existing one
   * that an interrupted collection with the same settings left is continued.
   */
  out?: string;
  runsRoot?: string;
  parentId?: string;
  onProgress?: CollectOptions["onProgress"];
  signal?: AbortSignal;
}

/** State key of a collection's progress (tasks done and counts, committed with each chunk). */
export const COLLECT_PROGRESS_STATE_KEY = "collect/progress";

export interface CollectDatasetResult extends CollectCounts {
  directory: string;
  runId: string;
  provenance: Record<string, unknown>;
}

/** Collects a dataset into a new dataset run directory with its provenance and counts. */
export async function collectDataset(options: CollectDatasetOptions): Promise<CollectDatasetResult> {
  const policySpec = options.policy ?? "expert";
  const filter = parseFilter(options.filter ?? "correct");
  const noise = options.noise ?? 0.2;
  const tasks = datasetTasks(options.tasks);
  const policy = await resolvePolicy(policySpec, options.policyOptions);
  const provenance = {
    policy: policySpec,
    policyId: policy.id,
    ...(options.policyOptions?.temperature !== undefined
      ? { temperature: options.policyOptions.temperature }
      : {}),
    ...(options.policyOptions?.topP !== undefined ? { topP: options.policyOptions.topP } : {}),
    noise,
    seed: options.seed,
    filter: formatFilter(filter),
    tasks: { split: "train", ...options.tasks },
    samplesPerTask: options.samplesPerTask ?? 1,
    maxKeptPerTask: options.maxKeptPerTask ?? 1,
    ...(options.budgets ? { budgets: options.budgets } : {}),
  };
  const { directory, store, run } = openCollection({
    out: options.out,
    runsRoot: options.runsRoot,
    config: provenance,
    parentId: options.parentId,
  });
  if (run.status === "completed") {
    store.close();
    await policy.close?.();
    return {
      directory,
      runId: run.id,
      provenance: { source: "collect", ...provenance },
      ...(run.summary as unknown as CollectCounts),
    };
  }
  const done = store.getState<CollectProgress>(run.id, COLLECT_PROGRESS_STATE_KEY);
  try {
    const tools = worldToolsFor(noise > 0 ? { noise: uniformNoise(noise) } : {});
    store.setToolSpecs(run.id, tools(tasks[0], options.seed).map(toolSpec));
    const counts = await collectTrajectories({
      policy,
      tasks,
      noise,
      seed: options.seed,
      filter,
      samplesPerTask: options.samplesPerTask,
      maxKeptPerTask: options.maxKeptPerTask,
      budgets: options.budgets,
      batchSize: options.batchSize,
      chunkTasks: options.chunkTasks,
      tasksDone: done?.tasksDone,
      countsDone: done?.counts,
      onKept: (kept, progress) => {
        store.transaction(() => {
          store.addTrajectories(run.id, kept);
          store.setState(run.id, COLLECT_PROGRESS_STATE_KEY, progress);
        });
      },
      onProgress: options.onProgress,
      signal: options.signal,
    });
    store.finishRun(run.id, "completed", counts);
    return { directory, runId: run.id, provenance: { source: "collect", ...provenance }, ...counts };
  } catch (error) {
    finishRunAfterError(store, run.id, error, options.signal);
    throw error;
  } finally {
    store.close();
    await policy.close?.();
  }
}

/**
 * A collection's dataset directory: `out` reopened when an earlier collection with the same
 * settings (`config`, the provenance) left it there, or a new one. Both `collectDataset` and
 * `data collect --agent` (src/agents/collect-agent.ts) continue from it.
 */
export function openCollection(options: {
  out?: string;
  runsRoot?: string;
  config: Record<string, unknown>;
  parentId?: string;
}): CreatedRunDirectory {
  return (
    (options.out && reopenCollection(options.out, { source: "collect", ...options.config })) ||
    createDatasetDirectory({
      source: "collect",
      out: options.out,
      runsRoot: options.runsRoot,
      config: options.config,
      parentId: options.parentId,
    })
  );
}

/**
 * The dataset directory `out` of an earlier collection with the same settings, reopened (its run
 * marked running again unless it completed); null when `out` does not exist. A folder holding
 * anything else is an error: a collection never mixes into another dataset.
 */
function reopenCollection(out: string, config: Record<string, unknown>): CreatedRunDirectory | null {
  if (!existsSync(out)) return null;
  const store = openRunDirectory(out);
  try {
    const run = directoryRun(store, out);
    if (run.kind !== "dataset" || !isDeepStrictEqual(run.config, decodeJson(encodeJson(config))))
      throw new Error(
        `data collect: ${out} already holds a run with other settings; give a new --out (or the same settings to continue it)`,
      );
    return { directory: out, store, run: run.status === "completed" ? run : store.reopenRun(run.id) };
  } catch (error) {
    store.close();
    throw error;
  }
}
