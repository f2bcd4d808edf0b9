/**
 * Measuring an orchestrator (any text policy, scripted or embedded) or the single agent on
 * orchestration tasks: accuracy, the MAS-Orchestra reward, sub-agent calls and parallel calls per
 * task, and execution errors. One episode per task; seeds are the task's index, so every contender
 * meets the same tasks and the same sub-agent error draws for the same calls.
 */
import { runEpisodes } from "../env/run-episodes.ts";
import type { Policy } from "../types/policy.ts";
import type { Task } from "../types/task.ts";
import { checkAnswer } from "../world/index.ts";
import {
  countCalls,
  type Degree,
  executionErrors,
  ORCHESTRA_BUDGETS,
  orchestraToolsFor,
  withOrchestraReward,
} from "./env.ts";
import { singleAgentAnswer } from "./sub-agents.ts";

export interface OrchestraScore {
  tasks: number;
  accuracy: number;
  reward: number;
  callsPerTask: number;
  parallelCallsPerTask: number;
  executionErrorRate: number;
}

export interface PolicyEvaluation {
  policy: Policy;
  degree: Degree;
  errorRate: number;
  tasks: readonly Task[];
  seed: number;
  batchSize?: number;
}

export async function evaluateOrchestrator(options: PolicyEvaluation): Promise<OrchestraScore> {
  const sampled = await runEpisodes({
    policy: options.policy,
    episodes: options.tasks.map((task, i) => ({ task, seed: options.seed * 100_003 + i })),
    tools: orchestraToolsFor({ degree: options.degree, errorRate: options.errorRate }),
    verify: checkAnswer,
    budgets: ORCHESTRA_BUDGETS,
    batchSize: options.batchSize ?? 64,
  });
  // Answers resolved (`result`) and rewarded: correctness is the resolved answer's.
  const trajectories = sampled.map((trajectory, i) => withOrchestraReward(trajectory, options.tasks[i]));
  const n = Math.max(1, trajectories.length);
  const sum = (f: (i: number) => number) => trajectories.reduce((total, _, i) => total + f(i), 0) / n;
  const calls = trajectories.map(countCalls);
  return {
    tasks: trajectories.length,
    accuracy: sum((i) => (trajectories[i].correct ? 1 : 0)),
    reward: sum((i) => trajectories[i].outcomeReward ?? 0),
    callsPerTask: sum((i) => calls[i].calls),
    parallelCallsPerTask: sum((i) => calls[i].parallel),
    executionErrorRate: sum((i) => (executionErrors(trajectories[i]) > 0 ? 1 : 0)),
  };
}

/** The single agent: the solver worker alone on each whole question (no orchestrator, no calls). */
export async function evaluateSingleAgent(
  tasks: readonly Task[],
  errorRate: number,
  seed: number,
): Promise<OrchestraScore> {
  let correct = 0;
  for (const [i, task] of tasks.entries()) {
    const result = await singleAgentAnswer(task, seed * 100_003 + i, errorRate);
    if (result.status !== "error" && checkAnswer(task, result.content.split(" or ")[0])) correct++;
  }
  const accuracy = correct / Math.max(1, tasks.length);
  return {
    tasks: tasks.length,
    accuracy,
    reward: 0.9 * accuracy + 0.1,
    callsPerTask: 0,
    parallelCallsPerTask: 0,
    executionErrorRate: 0,
  };
}
