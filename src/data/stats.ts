/**
 * Dataset statistics (`agentrl data stats`): size, families and templates, turns, tool failures,
 * retries and diversity. Definitions:
 *
 * - tool-failure rate: tool calls whose status is not `ok` over all tool calls (injected failures
 *   included; `corrupted` counts, since the noise wrapper labels it);
 * - retry: a tool call identical (tool and arguments) to the call just before it;
 *   `retry_after_failure_rate`: failed calls followed by another tool call (src/eval/rollout-stats);
 * - action sequence: the trajectory's actions in order, tools by name (`search>search>calc>answer`,
 *   a format error as `format-error`); diversity counts distinct sequences, with and without the
 *   arguments, and the mean number of distinct search queries per task (over all its trajectories).
 */
import { rolloutStats } from "../eval/rollout-stats.ts";
import type { ToolStatus } from "../types/tool.ts";
import type { Trajectory, Turn } from "../types/trajectory.ts";
import { templateOfTaskId } from "./tasks.ts";

export interface DatasetStats {
  trajectories: number;
  tasks: number;
  correct_rate: number;
  families: Record<string, number>;
  templates: Record<string, number>;
  /** `info.source` of the trajectories (collect, stitch, …). */
  sources: Record<string, number>;
  turns: { mean: number; min: number; max: number; histogram: Record<string, number> };
  tool_calls: { total: number; mean: number; by_tool: Record<string, number> };
  tool_failure_rate: number;
  tool_status_rate: Record<ToolStatus, number>;
  /** Fraction of trajectories with at least one failed tool call. */
  trajectories_with_failure: number;
  retries: {
    total: number;
    per_trajectory: number;
    trajectories_with_retry: number;
    retry_after_failure_rate: number | null;
  };
  format_errors_per_trajectory: number;
  end_reasons: Record<string, number>;
  diversity: {
    distinct_action_sequences: number;
    distinct_call_sequences: number;
    top_action_sequences: { sequence: string; count: number }[];
    distinct_queries_per_task: number;
  };
}

function actionName(turn: Turn): string {
  return turn.action.type === "tool-call" ? turn.action.tool : turn.action.type;
}

function callKey(turn: Turn): string | null {
  return turn.action.type === "tool-call"
    ? `${turn.action.tool}(${JSON.stringify(turn.action.arguments)})`
    : null;
}

function increment(record: Record<string, number>, key: string) {
  record[key] = (record[key] ?? 0) + 1;
}

export function datasetStats(trajectories: readonly Trajectory[]): DatasetStats {
  const n = trajectories.length;
  const base = rolloutStats(trajectories);
  const families: Record<string, number> = {};
  const templates: Record<string, number> = {};
  const sources: Record<string, number> = {};
  const histogram: Record<string, number> = {};
  const byTool: Record<string, number> = {};
  const actionSequences = new Map<string, number>();
  const callSequences = new Set<string>();
  const queriesByTask = new Map<string, Set<string>>();
  let minTurns = Number.POSITIVE_INFINITY;
  let maxTurns = 0;
  let retries = 0;
  let withRetry = 0;
  let withFailure = 0;
  for (const trajectory of trajectories) {
    increment(families, trajectory.family);
    increment(templates, templateOfTaskId(trajectory.taskId) ?? "(none)");
    increment(sources, String(trajectory.info?.source ?? "(unknown)"));
    const turns = trajectory.turns.length;
    increment(histogram, String(turns));
    minTurns = Math.min(minTurns, turns);
    maxTurns = Math.max(maxTurns, turns);
    const sequence = trajectory.turns.map(actionName).join(">");
    actionSequences.set(sequence, (actionSequences.get(sequence) ?? 0) + 1);
    callSequences.add(trajectory.turns.map((turn) => callKey(turn) ?? actionName(turn)).join(">"));
    const queries = queriesByTask.get(trajectory.taskId) ?? new Set<string>();
    queriesByTask.set(trajectory.taskId, queries);
    let previous: string | null = null;
    let retried = false;
    let failed = false;
    for (const turn of trajectory.turns) {
      const key = callKey(turn);
      if (turn.action.type === "tool-call") {
        increment(byTool, turn.action.tool);
        if (turn.action.tool === "search") queries.add(String(turn.action.arguments.query ?? ""));
      }
      if (turn.toolResult && turn.toolResult.status !== "ok") failed = true;
      if (key !== null && key === previous) {
        retries++;
        retried = true;
      }
      previous = key;
    }
    if (retried) withRetry++;
    if (failed) withFailure++;
  }
  const perTrajectory = (count: number) => (n === 0 ? 0 : count / n);
  const totalCalls = Object.values(byTool).reduce((a, b) => a + b, 0);
  return {
    trajectories: n,
    tasks: queriesByTask.size,
    correct_rate: base.success_rate,
    families,
    templates,
    sources,
    turns: {
      mean: base.mean_turns,
      min: n === 0 ? 0 : minTurns,
      max: maxTurns,
      histogram,
    },
    tool_calls: { total: totalCalls, mean: perTrajectory(totalCalls), by_tool: byTool },
    tool_failure_rate: base.tool_failure_rate,
    tool_status_rate: base.tool_status_rate,
    trajectories_with_failure: perTrajectory(withFailure),
    retries: {
      total: retries,
      per_trajectory: perTrajectory(retries),
      trajectories_with_retry: perTrajectory(withRetry),
      retry_after_failure_rate: base.retry_after_failure_rate,
    },
    format_errors_per_trajectory: base.format_errors_per_episode,
    end_reasons: base.end_reasons,
    diversity: {
      distinct_action_sequences: actionSequences.size,
      distinct_call_sequences: callSequences.size,
      top_action_sequences: [...actionSequences]
        .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
        .slice(0, 5)
        .map(([sequence, count]) => ({ sequence, count })),
      distinct_queries_per_task:
        queriesByTask.size === 0
          ? 0
          : [...queriesByTask.values()].reduce((sum, set) => sum + set.size, 0) / queriesByTask.size,
    },
  };
}
