/**
 * The `determinism` check: is the environment a function of the seed? The same episodes (tasks,
 * seeds) run twice through the episode loop, tools (with their injected noise) and reward spec,
 * driven by a scripted policy that decides only from the task, the seed and what it observes (the
 * world's expert; on task files the panel's tool-spam member), so any difference between the runs
 * comes from the environment: a tool whose output, status or labels change, or a reward that does.
 * A non-deterministic environment makes GRPO's group baseline noise and a run impossible to resume
 * or reproduce.
 *
 * It also reports what the tools did across both runs: calls, latency (mean and p95 per tool), the
 * rate of the tool's own failures (error, empty, timeout: any status but ok, not injected) and, separately, of injected noise.
 */
import { DEFAULT_BUDGETS, type EpisodeBudgets, runEpisodes } from "../env/run-episodes.ts";
import { evalEpisodeSeed } from "../eval/run-eval.ts";
import { type RewardSpec, scoreTrajectory } from "../reward/spec.ts";
import type { Policy } from "../types/policy.ts";
import type { Task } from "../types/task.ts";
import type { AnyTool } from "../types/tool.ts";
import type { Trajectory } from "../types/trajectory.ts";
import type { DoctorCheck } from "./types.ts";
import type { Verify } from "./verifier-check.ts";

export interface DeterminismOptions {
  tasks: readonly Task[];
  tools: (task: Task, seed: number) => readonly AnyTool[];
  verify: Verify;
  reward: RewardSpec | string;
  /** A policy that is itself a function of the seed and its observations. */
  policy: Policy;
  budgets?: Partial<EpisodeBudgets>;
  seed?: number;
}

export interface ToolStats {
  tool: string;
  calls: number;
  meanLatencyMs: number;
  p95LatencyMs: number;
  /** Share of calls that failed on their own (not injected), and that noise injected. */
  failureRate: number;
  injectedRate: number;
}

/** What must repeat: each turn's action and tool result (latency excluded), the answer, the rewards. */
function fingerprint(trajectory: Trajectory, task: Task, reward: RewardSpec | string): string[] {
  const scores = scoreTrajectory(trajectory, task, reward);
  return [
    ...trajectory.turns.map((turn) => {
      const result = turn.toolResult;
      return JSON.stringify([
        turn.action,
        result
          ? [result.status, result.content, result.injected, result.refs ?? null, result.value ?? null]
          : null,
        scores.turns[turn.index] ?? null,
      ]);
    }),
    JSON.stringify([trajectory.finalAnswer, trajectory.correct, trajectory.endReason, scores.outcome]),
  ];
}

function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function round(value: number, digits = 3): number {
  return Math.round(value * 10 ** digits) / 10 ** digits;
}

export function toolStats(trajectories: readonly Trajectory[]): ToolStats[] {
  const byTool = new Map<string, { latencies: number[]; failures: number; injected: number }>();
  for (const trajectory of trajectories) {
    for (const turn of trajectory.turns) {
      if (turn.action.type !== "tool-call" || !turn.toolResult) continue;
      const entry = byTool.get(turn.action.tool) ?? { latencies: [], failures: 0, injected: 0 };
      byTool.set(turn.action.tool, entry);
      entry.latencies.push(turn.toolResult.latencyMs ?? 0);
      if (turn.toolResult.injected) entry.injected++;
      else if (turn.toolResult.status !== "ok") entry.failures++;
    }
  }
  return [...byTool.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([tool, entry]) => {
      const sorted = [...entry.latencies].sort((a, b) => a - b);
      const calls = sorted.length;
      return {
        tool,
        calls,
        meanLatencyMs: round(sorted.reduce((a, b) => a + b, 0) / calls, 2),
        p95LatencyMs: round(percentile(sorted, 0.95), 2),
        failureRate: round(entry.failures / calls),
        injectedRate: round(entry.injected / calls),
      };
    });
}

export async function checkDeterminism(options: DeterminismOptions): Promise<DoctorCheck> {
  const seed = options.seed ?? 1;
  const budgets = { ...DEFAULT_BUDGETS, ...options.budgets };
  const taskById = new Map(options.tasks.map((task) => [task.id, task]));
  const episodes = options.tasks.map((task) => ({ task, seed: evalEpisodeSeed(seed, task.id, 0) }));
  const run = () =>
    runEpisodes({
      policy: options.policy,
      episodes,
      tools: options.tools,
      verify: options.verify,
      budgets,
      batchSize: 64,
    });
  const first = await run();
  const second = await run();
  const differing: { taskId: string; turn: number }[] = [];
  for (let i = 0; i < first.length; i++) {
    const task = taskById.get(first[i].taskId)!;
    const a = fingerprint(first[i], task, options.reward);
    const b = fingerprint(second[i], task, options.reward);
    const at = a.findIndex((line, index) => line !== b[index]);
    if (at >= 0 || a.length !== b.length)
      differing.push({ taskId: first[i].taskId, turn: at >= 0 ? at : Math.min(a.length, b.length) });
  }
  const stats = toolStats([...first, ...second]);
  const calls = stats.reduce((sum, entry) => sum + entry.calls, 0);
  const statsText =
    stats.length === 0
      ? "the episodes called no tool, so only answers and rewards were compared"
      : stats
          .map(
            (entry) =>
              `${entry.tool}: ${entry.calls} calls, ${entry.meanLatencyMs} ms mean (p95 ${entry.p95LatencyMs} ms), ${Math.round(entry.failureRate * 100)}% failed on their own (error, empty or timeout), ${Math.round(entry.injectedRate * 100)}% injected noise`,
          )
          .join("; ");
  const ok = differing.length === 0;
  const detail = ok
    ? `${episodes.length} episodes run twice with the same seeds gave identical tool outputs, answers and rewards (${calls} tool calls). Tools: ${statsText}.`
    : `${differing.length} of ${episodes.length} episodes differ between two runs with the same seed (first at ${differing
        .slice(0, 4)
        .map((entry) => `${entry.taskId} turn ${entry.turn}`)
        .join(", ")}): a tool or the reward is not a function of the seed. Tools: ${statsText}.`;
  return {
    id: "determinism",
    ok,
    detail,
    changes: ok
      ? []
      : [
          {
            kind: "fix-environment",
            text: "make every tool and reward a function of the episode seed (seed any randomness from it, pin time-dependent results, cache external lookups): GRPO compares samples of one task, and an environment that changes under them turns the baseline into noise",
          },
        ],
    data: { episodes: episodes.length, policy: options.policy.id, differing, tools: stats },
  };
}
