/**
 * Reading a finished (or partial) eval run back from its directory: config, tasks, per-task
 * counts recomputed from the stored trajectories (the source of truth, so a partial run reads
 * correctly too), the policy tokenizer it recorded, and a deterministic sample of its correct
 * trajectories.
 */
import { basename } from "node:path";
import { hashString } from "../core/random.ts";
import { directoryRun, episodeKey, openRunDirectory, type RunStatus, type Store } from "../store/index.ts";
import type { Task } from "../types/task.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { EVAL_TASKS_STATE_KEY, EVAL_TOKENIZER_STATE_KEY } from "./eval-run.ts";
import type { EvalTaskSource } from "./eval-tasks.ts";
import type { EvalConfig } from "./run-eval.ts";
import { countByTask, type TaskCount } from "./task-counts.ts";
import type { TokenizerInfo } from "./tokenizer-fingerprint.ts";

export interface EvalRunData {
  /** Name in reports: the policy spec, or the folder name. */
  label: string;
  directory: string;
  runId: string;
  status: RunStatus;
  config: EvalConfig;
  /** Policy id of the stored trajectories (null when none is stored). */
  policyId: string | null;
  tasks: Task[];
  counts: TaskCount[];
  tokenizer: TokenizerInfo | null;
}

function withStore<T>(directory: string, read: (store: Store) => T): T {
  const store = openRunDirectory(directory, { readOnly: true });
  try {
    return read(store);
  } finally {
    store.close();
  }
}

/** The stored config and task list of an eval run (what `--resume` needs), without reading trajectories. */
export function readEvalRunConfig(directory: string): { runId: string; config: EvalConfig; tasks: Task[] } {
  return withStore(directory, (store) => {
    const { run, config, tasks } = evalRunOf(store, directory);
    return { runId: run.id, config, tasks };
  });
}

/**
 * The task source a resumed eval draws from, rebuilt from what the run recorded (the inverse of
 * `taskSourceConfig`): world tasks by their recipe, given tasks from the stored list.
 */
export function recordedTaskSource(recorded: EvalConfig["tasks"], tasks: readonly Task[]): EvalTaskSource {
  return recorded.type === "world"
    ? {
        type: "world",
        split: recorded.split,
        count: recorded.count,
        seed: recorded.seed,
        ...(recorded.family ? { family: recorded.family } : {}),
      }
    : { type: "given", tasks, ...(recorded.name !== null ? { name: recorded.name } : {}) };
}

function evalRunOf(store: Store, directory: string) {
  const run = directoryRun(store, directory);
  if (run.kind !== "eval") throw new Error(`${directory} holds a ${run.kind} run, not an eval run`);
  const tasks = store.getState<Task[]>(run.id, EVAL_TASKS_STATE_KEY);
  if (!tasks) throw new Error(`${directory}: the eval run recorded no task list`);
  return { run, config: run.config as unknown as EvalConfig, tasks };
}

/** Reads an eval run directory; throws when it is not an eval run. */
export function loadEvalRun(directory: string): EvalRunData {
  return withStore(directory, (store) => {
    const { run, config, tasks } = evalRunOf(store, directory);
    const wanted = new Set<string>();
    for (const task of tasks)
      for (let sample = 0; sample < config.n; sample++) wanted.add(episodeKey(task.id, sample));
    let policyId: string | null = null;
    function* episodes(): Generator<Trajectory> {
      for (const stored of store.iterateTrajectories(run.id)) {
        if (!wanted.has(stored.key)) continue;
        policyId ??= stored.trajectory.policyId;
        yield stored.trajectory;
      }
    }
    const counts = countByTask(episodes(), tasks);
    return {
      label: config.policy ?? basename(directory),
      directory,
      runId: run.id,
      status: run.status,
      config,
      policyId,
      tasks,
      counts,
      tokenizer: store.getState<TokenizerInfo>(run.id, EVAL_TOKENIZER_STATE_KEY) ?? null,
    };
  });
}

/** Gives runs unique labels: a repeated label gets its run id appended. */
export function uniqueLabels(runs: readonly EvalRunData[]): string[] {
  const seen = new Map<string, number>();
  for (const run of runs) seen.set(run.label, (seen.get(run.label) ?? 0) + 1);
  return runs.map((run) => ((seen.get(run.label) ?? 0) > 1 ? `${run.label} (${run.runId})` : run.label));
}

/**
 * Up to `limit` correct trajectories of the given tasks, chosen by a seeded hash of their key, so
 * the choice does not depend on the order episodes were stored in (a resumed run picks the same).
 */
export function readCorrectTrajectories(
  directory: string,
  taskIds: ReadonlySet<string>,
  limit: number,
  seed = 0,
): Trajectory[] {
  return withStore(directory, (store) => {
    const run = directoryRun(store, directory);
    let kept: { rank: number; key: string; trajectory: Trajectory }[] = [];
    const trim = () => {
      kept.sort((x, y) => x.rank - y.rank || (x.key < y.key ? -1 : 1));
      kept = kept.slice(0, limit);
    };
    for (const stored of store.iterateTrajectories(run.id, { correct: true })) {
      if (!taskIds.has(stored.trajectory.taskId)) continue;
      kept.push({
        rank: hashString(`${seed}:${stored.key}`),
        key: stored.key,
        trajectory: stored.trajectory,
      });
      if (kept.length >= 2 * limit + 64) trim();
    }
    trim();
    return kept.map((entry) => entry.trajectory);
  });
}

/** One correct trajectory of each listed task (the first stored), for example solutions in reports. */
export function firstCorrectTrajectories(
  directory: string,
  taskIds: readonly string[],
): Map<string, Trajectory> {
  return withStore(directory, (store) => {
    const run = directoryRun(store, directory);
    const found = new Map<string, Trajectory>();
    for (const taskId of taskIds) {
      const [trajectory] = store.trajectories(run.id, { taskId, correct: true, limit: 1 });
      if (trajectory) found.set(taskId, trajectory);
    }
    return found;
  });
}
