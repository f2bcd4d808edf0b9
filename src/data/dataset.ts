/**
 * Dataset run directories: a run of kind `dataset` whose config is the dataset's provenance
 * (`source`: collect, stitch or select, and every option that made it), whose summary holds the
 * counts, and whose trajectories are the data. Tool specs are recorded with the run, so exports
 * describe the tools exactly.
 */
import { basename, dirname } from "node:path";
import {
  type CreatedRunDirectory,
  createRunDirectory,
  DEFAULT_RUNS_ROOT,
  directoryRun,
  openRunDirectory,
  type TrajectoryFilter,
} from "../store/index.ts";
import type { ToolSpec } from "../types/policy.ts";
import type { Trajectory } from "../types/trajectory.ts";

export type DatasetSource = "collect" | "stitch" | "select";

/** Creates the dataset directory `out` (`runs/<id>`), or `<runs>/<source>-<date>` when absent. */
export function createDatasetDirectory(options: {
  source: DatasetSource;
  out?: string;
  runsRoot?: string;
  config: Record<string, unknown>;
  parentId?: string;
}): CreatedRunDirectory {
  const config = { source: options.source, ...options.config };
  if (options.out) {
    return createRunDirectory({
      kind: "dataset",
      root: dirname(options.out),
      id: basename(options.out),
      config,
      ...(options.parentId ? { parentId: options.parentId } : {}),
    });
  }
  return createRunDirectory({
    kind: "dataset",
    root: options.runsRoot ?? DEFAULT_RUNS_ROOT,
    config,
    ...(options.parentId ? { parentId: options.parentId } : {}),
  });
}

export interface LoadedDataset {
  directory: string;
  runId: string;
  /** The run's config: the dataset's provenance (`source`, policy, noise, seed, filter…). */
  provenance: Record<string, unknown>;
  /** What the producing command recorded when it finished (counts), or null. */
  summary: Record<string, unknown> | null;
  trajectories: Trajectory[];
  tools: ToolSpec[] | undefined;
}

/** Reads a dataset (or any run) directory: its trajectories in insertion order and its provenance. */
export function loadDataset(directory: string, filter: TrajectoryFilter = {}): LoadedDataset {
  const store = openRunDirectory(directory, { readOnly: true });
  try {
    const run = directoryRun(store, directory);
    return {
      directory,
      runId: run.id,
      provenance: run.config,
      summary: run.summary,
      trajectories: store.trajectories(run.id, filter),
      tools: store.toolSpecs(run.id),
    };
  } finally {
    store.close();
  }
}
