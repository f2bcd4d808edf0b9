/**
 * Outcome rewards: one scalar per episode. Every one returns null for an episode that ended in a
 * policy (endpoint) error or an infra failure: the policy never got to finish, or nothing judged
 * it, so the episode says nothing about it.
 */
import { isInfraFailure } from "../types/failure.ts";
import type { Task } from "../types/task.ts";
import { countToolCalls, type Trajectory } from "../types/trajectory.ts";
import { normalizeAnswerText } from "./normalize.ts";

export interface AnswerMatchOptions {
  /**
   * Recompute correctness from `finalAnswer` with this normaliser against `task.answer` and
   * `task.aliases`. Default: trust `trajectory.correct`, which the episode loop sets with the
   * world's `checkAnswer`.
   */
  normalize?: (text: string) => string;
  /** Recompute with the local `normalizeAnswerText` (tasks from files). */
  recompute?: boolean;
}

function unscorable(trajectory: Trajectory): boolean {
  // An infra failure (a verifier that crashed after a complete answer, too) says nothing about the policy.
  return trajectory.endReason === "policy-error" || isInfraFailure(trajectory);
}

function goldAnswers(task: Task, normalize: (text: string) => string): string[] {
  return [task.answer, ...(task.aliases ?? [])].map(normalize);
}

function normalizerOf(options: AnswerMatchOptions | undefined): ((text: string) => string) | null {
  if (options?.normalize) return options.normalize;
  return options?.recompute ? normalizeAnswerText : null;
}

/** Whether the final answer is correct (see `AnswerMatchOptions`). */
export function isCorrect(trajectory: Trajectory, task: Task, options?: AnswerMatchOptions): boolean {
  const normalize = normalizerOf(options);
  if (!normalize) return trajectory.correct;
  if (trajectory.finalAnswer === null) return false;
  return goldAnswers(task, normalize).includes(normalize(trajectory.finalAnswer));
}

/** Exact match: 1 when the final answer is correct, 0 otherwise (no answer is wrong). */
export function exactMatchReward(
  trajectory: Trajectory,
  task: Task,
  options?: AnswerMatchOptions,
): number | null {
  if (unscorable(trajectory)) return null;
  return isCorrect(trajectory, task, options) ? 1 : 0;
}

/**
 * 1 when a gold answer appears in the final answer as a whole-token run after normalisation
 * (MT-GRPO's "answer contained" reward, weighted 0.5 there), 0 otherwise.
 */
export function containsAnswerReward(
  trajectory: Trajectory,
  task: Task,
  options?: Pick<AnswerMatchOptions, "normalize">,
): number | null {
  if (unscorable(trajectory)) return null;
  if (trajectory.finalAnswer === null) return 0;
  const normalize = options?.normalize ?? normalizeAnswerText;
  const answer = ` ${normalize(trajectory.finalAnswer)} `;
  return goldAnswers(task, normalize).some((gold) => gold !== "" && answer.includes(` ${gold} `)) ? 1 : 0;
}

/** Format validity: 1 when no turn was a format error and the episode ended with an answer. */
export function formatReward(trajectory: Trajectory): number | null {
  if (unscorable(trajectory)) return null;
  const clean = trajectory.turns.every((turn) => turn.action.type !== "format-error");
  return clean && trajectory.endReason === "answer" ? 1 : 0;
}

/**
 * The DemyAgent reward (arXiv:2510.11701, released code): correct → +1; wrong →
 * `min(-0.6, -1 + 0.1 · tool_calls)`, so a wrong answer after more tool calls is punished less
 * (down to -0.6 from 4 calls on), which keeps a failing policy exploring with its tools.
 */
export function demyAgentReward(
  trajectory: Trajectory,
  task: Task,
  options?: AnswerMatchOptions,
): number | null {
  if (unscorable(trajectory)) return null;
  if (isCorrect(trajectory, task, options)) return 1;
  return Math.min(-0.6, -1 + 0.1 * countToolCalls(trajectory));
}
