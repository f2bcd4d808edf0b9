/**
 * Per-step metrics of an RL rollout batch, under stable keys (the same in the store, the progress
 * line and the report):
 *
 *   reward/mean, reward/std                 outcome reward over the scored episodes (population std)
 *   reward/mean_hops_<h>, reward/std_hops_<h>   the same per chain length (task hops)
 *   return/mean, return/std, return/mean_hops_<h>, return/std_hops_<h>
 *                                           the episode's return, outcome + Σ turn rewards (the
 *                                           `total` withRewards writes; neutral turns count 0), over
 *                                           the scored episodes: what turn-level estimators optimise
 *   rollout/pass@1                          fraction of episodes answered correctly
 *   rollout/episodes, rollout/turns_per_episode, rollout/policy_tokens_per_episode
 *   rollout/tool_calls_per_episode
 *   rollout/tool_error_rate/<status>        share of tool calls with that non-ok status
 *   rollout/tool_injected_rate              share of tool calls whose failure the noise injected
 *   rollout/retry_after_error_rate          share of failed tool calls followed by another tool call
 *                                           (absent when no call failed)
 *   rollout/format_failures                 format-error turns per episode
 *   rollout/end_<reason>                    share of episodes that ended that way
 */
import { rolloutStats } from "../eval/rollout-stats.ts";
import { TURN_REWARD_TOTAL } from "../reward/index.ts";
import type { Task } from "../types/task.ts";
import { TOOL_STATUSES } from "../types/tool.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { moments } from "./advantages/index.ts";

function populationStd(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return Math.sqrt(values.reduce((sum, value) => sum + (value - mean) ** 2, 0) / values.length);
}

export function rolloutMetrics(
  trajectories: readonly Trajectory[],
  taskOf: (taskId: string) => Task | undefined,
): Record<string, number> {
  const metrics: Record<string, number> = {};
  const scored = trajectories.filter((trajectory) => trajectory.outcomeReward !== null);
  const rewards = scored.map((trajectory) => trajectory.outcomeReward as number);
  metrics["reward/mean"] = moments(rewards).mean;
  metrics["reward/std"] = populationStd(rewards);
  const byHops = new Map<number, number[]>();
  for (const trajectory of scored) {
    const hops = taskOf(trajectory.taskId)?.hops;
    if (hops === undefined) continue;
    const list = byHops.get(hops) ?? [];
    list.push(trajectory.outcomeReward as number);
    byHops.set(hops, list);
  }
  for (const [hops, values] of [...byHops].sort((a, b) => a[0] - b[0])) {
    metrics[`reward/mean_hops_${hops}`] = moments(values).mean;
    metrics[`reward/std_hops_${hops}`] = populationStd(values);
  }
  const returns = scored.map(
    (trajectory) =>
      (trajectory.outcomeReward as number) +
      trajectory.turns.reduce((sum, turn) => sum + (turn.rewards[TURN_REWARD_TOTAL] ?? 0), 0),
  );
  metrics["return/mean"] = moments(returns).mean;
  metrics["return/std"] = populationStd(returns);
  const returnsByHops = new Map<number, number[]>();
  scored.forEach((trajectory, i) => {
    const hops = taskOf(trajectory.taskId)?.hops;
    if (hops === undefined) return;
    returnsByHops.set(hops, [...(returnsByHops.get(hops) ?? []), returns[i]]);
  });
  for (const [hops, values] of [...returnsByHops].sort((a, b) => a[0] - b[0])) {
    metrics[`return/mean_hops_${hops}`] = moments(values).mean;
    metrics[`return/std_hops_${hops}`] = populationStd(values);
  }
  const stats = rolloutStats(trajectories);
  metrics["rollout/episodes"] = stats.episodes;
  metrics["rollout/pass@1"] = stats.success_rate;
  metrics["rollout/turns_per_episode"] = stats.mean_turns;
  metrics["rollout/policy_tokens_per_episode"] = stats.mean_policy_tokens;
  metrics["rollout/tool_calls_per_episode"] = stats.mean_tool_calls;
  for (const status of TOOL_STATUSES) {
    if (status !== "ok") metrics[`rollout/tool_error_rate/${status}`] = stats.tool_status_rate[status];
  }
  metrics["rollout/tool_injected_rate"] = stats.tool_injected_rate;
  if (stats.retry_after_failure_rate !== null) {
    metrics["rollout/retry_after_error_rate"] = stats.retry_after_failure_rate;
  }
  metrics["rollout/format_failures"] = stats.format_errors_per_episode;
  for (const [reason, count] of Object.entries(stats.end_reasons)) {
    metrics[`rollout/end_${reason}`] = stats.episodes > 0 ? count / stats.episodes : 0;
  }
  return metrics;
}
