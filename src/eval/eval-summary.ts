/**
 * The end of an eval: counts per task, totals, end reasons and pass@k curves of the stored episodes
 * (n per task; tasks whose every sample failed for an infra reason left out of the curves), their
 * metrics stored, the eval files written beside the run, and the run marked completed.
 */
import { episodeKey, type Store } from "../store/index.ts";
import type { Task } from "../types/task.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { type CurveOptions, curveMetrics, type PassAtKCurves, passAtKCurves } from "./curves.ts";
import { writeEvalFiles } from "./eval-files.ts";
import type { EvalConfig, EvalResult } from "./run-eval.ts";
import { countByTask, countTotals, type TaskCount } from "./task-counts.ts";

/**
 * Ends a finished eval's run: its summary and metrics (plus `extraMetrics`) stored, the eval files
 * written beside the run and registered, the run marked completed. Returns the eval's result.
 */
export async function completeEval(done: {
  store: Store;
  runId: string;
  directory: string | null;
  policyId: string;
  config: EvalConfig;
  tasks: readonly Task[];
  curves: CurveOptions | undefined;
  episodes: EvalResult["episodes"];
  extraMetrics?: Record<string, number>;
}): Promise<EvalResult> {
  const { store, runId, directory } = done;
  const summary = summarizeEval(store, runId, done.tasks, done.config.n, done.curves);
  const metrics = {
    ...curveMetrics(summary.curves),
    "eval/policy_errors": summary.totals.policyErrors,
    "eval/infra_failures": summary.totals.infraFailures,
    "eval/solved_fraction": summary.totals.solved / summary.totals.tasks,
    ...done.extraMetrics,
  };
  store.addMetrics(runId, 0, metrics);
  const result: EvalResult = {
    directory,
    runId,
    policyId: done.policyId,
    config: done.config,
    ...summary,
    episodes: done.episodes,
    metrics,
    files: null,
  };
  if (directory !== null) {
    result.files = await writeEvalFiles(directory, result);
    for (const path of Object.values(result.files))
      store.addArtifact(runId, { kind: "report", path: path.slice(directory.length + 1) });
  }
  store.finishRun(runId, "completed", {
    policyId: done.policyId,
    curves: result.curves,
    totals: result.totals,
    endReasons: result.endReasons,
    metrics,
  });
  return result;
}

/** The curves of an eval whose every sample failed for an infra reason: nothing was measured. */
const NO_CURVES: PassAtKCurves = { ks: [], overall: [], families: {}, templates: {} };

/**
 * The tasks pass@k can be estimated on: a task whose every sample failed for an infra reason has
 * no sample of the policy at all, so it is left out of the curves (its row and its count of infra
 * failures stay in `counts` and the totals). Tasks with some infra failures keep their other
 * samples: the curves' k grid then ends at the smallest n left.
 */
function scoredTasks(counts: readonly TaskCount[]): TaskCount[] {
  return counts.filter((count) => count.n > 0 || (count.infraFailures ?? 0) === 0);
}

/** Counts, totals, end reasons and pass@k curves of a finished eval's stored episodes (n per task). */
function summarizeEval(
  store: Store,
  runId: string,
  tasks: readonly Task[],
  n: number,
  curveOptions?: CurveOptions,
) {
  const wanted = new Set<string>();
  for (const task of tasks)
    for (let sample = 0; sample < n; sample++) wanted.add(episodeKey(task.id, sample));
  const endReasons: Record<string, number> = {};
  function* episodes(): Generator<Trajectory> {
    for (const stored of store.iterateTrajectories(runId)) {
      if (!wanted.has(stored.key)) continue;
      endReasons[stored.trajectory.endReason] = (endReasons[stored.trajectory.endReason] ?? 0) + 1;
      yield stored.trajectory;
    }
  }
  const counts = countByTask(episodes(), tasks);
  const short = counts.find((count) => count.n + (count.infraFailures ?? 0) !== n);
  if (short) throw new Error(`evaluate: task ${short.taskId} has ${short.n} stored samples, expected ${n}`);
  const scored = scoredTasks(counts);
  return {
    counts,
    totals: countTotals(counts),
    endReasons,
    curves: scored.length > 0 ? passAtKCurves(scored, curveOptions) : NO_CURVES,
  };
}
