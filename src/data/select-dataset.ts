/**
 * `agentrl data select` as a library call: selects tasks with the current model and writes a
 * dataset directory holding the measuring rollouts (trajectories, group = task index), the
 * selection (`selection.json`: every selected task with its pass rate and bucket, plus the counts)
 * and the selected tasks as a task file (`tasks.jsonl`, one `Task` per line, `metadata.passRate`
 * and `metadata.difficulty` added) that RL and eval read back with `loadSelectedTasks`.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { EpisodeBudgets } from "../env/run-episodes.ts";
import type { ResolvePolicyOptions } from "../policy/resolve.ts";
import { writeJsonl } from "../store/index.ts";
import { finishRunAfterError } from "../store/run-failure.ts";
import type { Task } from "../types/task.ts";
import { createDatasetDirectory } from "./dataset.ts";
import { DEFAULT_MIX, type SelectionMix, type SelectionResult, selectTasksFor } from "./select.ts";
import { type DatasetTaskOptions, datasetTasks } from "./tasks.ts";

export const SELECTION_FILE = "selection.json";
export const SELECTED_TASKS_FILE = "tasks.jsonl";

export interface SelectDatasetOptions {
  /** The current model: checkpoint directory, scripted name or `openai:` endpoint. */
  policy: string;
  policyOptions?: ResolvePolicyOptions;
  tasks: DatasetTaskOptions;
  m: number;
  mix?: SelectionMix;
  count?: number;
  noise?: number;
  seed: number;
  recheck?: boolean;
  budgets?: Partial<EpisodeBudgets>;
  batchSize?: number;
  out?: string;
  runsRoot?: string;
  parentId?: string;
  onProgress?: (progress: { phase: "measure" | "recheck"; episodes: number }) => void;
}

export interface SelectDatasetResult {
  directory: string;
  runId: string;
  policyId: string;
  provenance: Record<string, unknown>;
  selection: Omit<SelectionResult, "selected"> & { selectedCount: number };
  tasks: Task[];
}

/** The summary of a selection without the selected task objects (for summaries and JSON output). */
function summarise(result: SelectionResult): SelectDatasetResult["selection"] {
  const { selected, ...rest } = result;
  return { ...rest, selectedCount: selected.length };
}

export async function selectDataset(options: SelectDatasetOptions): Promise<SelectDatasetResult> {
  const candidates = datasetTasks(options.tasks);
  const mix = options.mix ?? DEFAULT_MIX;
  const provenance = {
    policy: options.policy,
    ...(options.policyOptions?.temperature !== undefined
      ? { temperature: options.policyOptions.temperature }
      : {}),
    tasks: { split: "train", ...options.tasks },
    m: options.m,
    mix,
    ...(options.count !== undefined ? { count: options.count } : {}),
    noise: options.noise ?? 0,
    seed: options.seed,
    recheck: options.recheck ?? true,
  };
  const { directory, store, run } = createDatasetDirectory({
    source: "select",
    out: options.out,
    runsRoot: options.runsRoot,
    config: provenance,
    parentId: options.parentId,
  });
  const counters = { measure: 0, recheck: 0 };
  try {
    const { result, policyId } = await selectTasksFor(options.policy, options.policyOptions ?? {}, {
      tasks: candidates,
      m: options.m,
      seed: options.seed,
      noise: options.noise,
      mix,
      count: options.count,
      recheck: options.recheck,
      budgets: options.budgets,
      batchSize: options.batchSize,
      onEpisode: (trajectory, phase) => {
        if (phase === "measure")
          store.addTrajectory(run.id, { ...trajectory, info: { ...trajectory.info, source: "select" } });
        counters[phase]++;
        options.onProgress?.({ phase, episodes: counters[phase] });
      },
    });
    const tasks = result.selected.map((s) => ({
      ...s.task,
      metadata: { ...s.task.metadata, passRate: s.passRate, difficulty: s.difficulty },
    }));
    const selection = summarise(result);
    writeFileSync(
      join(directory, SELECTION_FILE),
      `${JSON.stringify({ version: 1, policyId, ...provenance, ...selection, selected: result.selected.map((s) => ({ id: s.task.id, passRate: s.passRate, passes: s.passes, rollouts: s.rollouts, difficulty: s.difficulty })) }, null, 2)}\n`,
    );
    await writeJsonl(join(directory, SELECTED_TASKS_FILE), tasks);
    store.addArtifact(run.id, { kind: "selection", path: SELECTION_FILE });
    store.addArtifact(run.id, { kind: "tasks", path: SELECTED_TASKS_FILE, meta: { count: tasks.length } });
    store.finishRun(run.id, "completed", { policyId, ...selection });
    return {
      directory,
      runId: run.id,
      policyId,
      provenance: { source: "select", ...provenance },
      selection,
      tasks,
    };
  } catch (error) {
    finishRunAfterError(store, run.id, error);
    throw error;
  } finally {
    store.close();
  }
}

/** The selected tasks of a `data select` directory (with `metadata.passRate` and `metadata.difficulty`). */
export function loadSelectedTasks(directory: string): Task[] {
  return readFileSync(join(directory, SELECTED_TASKS_FILE), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Task);
}
