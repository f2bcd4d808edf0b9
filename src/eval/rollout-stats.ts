/**
 * Summary statistics of a set of trajectories: what `agentrl rollout` prints and the RL trainer
 * logs. Rates are over episodes unless the name says otherwise; tool error rates are over tool
 * calls, split by status (`injected` failures counted separately so noise is visible as such).
 */
import { TOOL_STATUSES, type ToolStatus } from "../types/tool.ts";
import type { Trajectory } from "../types/trajectory.ts";

export interface RolloutStats {
  episodes: number;
  success_rate: number;
  mean_turns: number;
  mean_tool_calls: number;
  /** Tool calls per status, as a fraction of all tool calls. */
  tool_status_rate: Record<ToolStatus, number>;
  /** Fraction of tool calls whose status is not `ok` (0 when there were no calls). */
  tool_failure_rate: number;
  /** Fraction of tool calls whose failure was injected by the noise wrapper. */
  tool_injected_rate: number;
  /** Fraction of tool failures (status ≠ ok) that the policy followed with another tool call. */
  retry_after_failure_rate: number | null;
  /** Format-error turns per episode. */
  format_errors_per_episode: number;
  end_reasons: Record<string, number>;
  /** Mean policy tokens per episode (0 for token-less policies). */
  mean_policy_tokens: number;
}

export function rolloutStats(trajectories: readonly Trajectory[]): RolloutStats {
  const n = trajectories.length;
  const statusCounts = Object.fromEntries(TOOL_STATUSES.map((status) => [status, 0])) as Record<
    ToolStatus,
    number
  >;
  let toolCalls = 0;
  let injected = 0;
  let turns = 0;
  let correct = 0;
  let formatErrors = 0;
  let failures = 0;
  let retries = 0;
  let policyTokens = 0;
  const endReasons: Record<string, number> = {};
  for (const trajectory of trajectories) {
    if (trajectory.correct) correct++;
    turns += trajectory.turns.length;
    endReasons[trajectory.endReason] = (endReasons[trajectory.endReason] ?? 0) + 1;
    trajectory.turns.forEach((turn, i) => {
      policyTokens += turn.tokenIds.length;
      if (turn.action.type === "format-error") formatErrors++;
      if (!turn.toolResult) return;
      toolCalls++;
      statusCounts[turn.toolResult.status]++;
      if (turn.toolResult.injected) injected++;
      if (turn.toolResult.status !== "ok") {
        failures++;
        if (trajectory.turns[i + 1]?.action.type === "tool-call") retries++;
      }
    });
  }
  const perCall = (count: number) => (toolCalls === 0 ? 0 : count / toolCalls);
  const perEpisode = (count: number) => (n === 0 ? 0 : count / n);
  return {
    episodes: n,
    success_rate: perEpisode(correct),
    mean_turns: perEpisode(turns),
    mean_tool_calls: perEpisode(toolCalls),
    tool_status_rate: Object.fromEntries(
      TOOL_STATUSES.map((status) => [status, perCall(statusCounts[status])]),
    ) as Record<ToolStatus, number>,
    tool_failure_rate: perCall(failures),
    tool_injected_rate: perCall(injected),
    retry_after_failure_rate: failures === 0 ? null : retries / failures,
    format_errors_per_episode: perEpisode(formatErrors),
    end_reasons: endReasons,
    mean_policy_tokens: perEpisode(policyTokens),
  };
}

/** Stats overall and per family. */
export function rolloutStatsByFamily(trajectories: readonly Trajectory[]): {
  overall: RolloutStats;
  families: Record<string, RolloutStats>;
} {
  const byFamily = new Map<string, Trajectory[]>();
  for (const trajectory of trajectories) {
    const list = byFamily.get(trajectory.family) ?? [];
    list.push(trajectory);
    byFamily.set(trajectory.family, list);
  }
  return {
    overall: rolloutStats(trajectories),
    families: Object.fromEntries(
      [...byFamily.entries()].sort().map(([family, list]) => [family, rolloutStats(list)]),
    ),
  };
}
