/**
 * The failure taxonomy of the trajectory contract. Every failed episode, and every failed call
 * inside one, is exactly one of:
 *
 * - `policy`: the model's own output failed (format error, wrong answer, a budget ran out). It is
 *   a sample of the policy: it counts in pass@k and takes part in RL groups.
 * - `agent`: a user's agent code threw, hung or printed no answer. It is a failure of that agent
 *   in pass@k (in the denominator), but it is never trained on as if the model wrote it.
 * - `tool`: a real tool error the policy must cope with. Injected noise keeps its own label
 *   (`ToolResult.injected`); both are part of the episode.
 * - `infra`: something outside the policy broke: the upstream was unreachable or answered 5xx, a
 *   sandbox process died, a verifier crashed or timed out, a write failed. Retried where that is
 *   safe; otherwise excluded from RL groups, from pass@k denominators and from SFT data, and
 *   counted and reported everywhere.
 *
 * A bug in our own code is neither: it throws, and the run stops with it.
 */
import type { Trajectory } from "./trajectory.ts";

export const FAILURE_CLASSES = ["policy", "agent", "tool", "infra"] as const;
export type FailureClass = (typeof FAILURE_CLASSES)[number];

/** Why an episode (or a call) failed, when the reason is not simply a wrong answer. */
export interface Failure {
  class: FailureClass;
  /** A stable kebab-case code (`upstream-5xx`, `sandbox-died`, `verifier-timeout`, `agent-threw`, …). */
  code: string;
  /** What happened, in words, as the failing component said it. */
  message: string;
  /** True when the fault harness (`AGENTRL_FAULTS`, core/faults.ts) caused it: tests check its class. */
  injected?: boolean;
}

/**
 * An error that names its failure class: thrown by infrastructure adapters (upstream clients,
 * sandboxes, verifiers, stores) so the episode loop records the class instead of guessing.
 */
export class ClassifiedError extends Error {
  readonly failure: Failure;

  constructor(failure: Failure, options?: { cause?: unknown }) {
    super(failure.message, options);
    this.name = "ClassifiedError";
    this.failure = failure;
  }
}

export function infraFailure(code: string, message: string): Failure {
  return { class: "infra", code, message };
}

/**
 * The class of an upstream's HTTP answer with status `status`: `infra` when the model server broke
 * (5xx) or was overloaded (408, 409, 429); undefined for a request it rejected (another 4xx), which
 * is the sender's own. The gateway and the OpenAI-compatible client share this rule.
 */
export function httpStatusFailure(status: number, message: string): Failure | undefined {
  if (status >= 500) return infraFailure("upstream-5xx", message);
  if (status === 408 || status === 409 || status === 429) return infraFailure("upstream-overloaded", message);
  return undefined;
}

/**
 * The class of an episode's failure: its recorded `failure`, else `policy` for any episode that
 * did not end correct, else null (a success).
 */
export function failureClass(trajectory: Pick<Trajectory, "failure" | "correct">): FailureClass | null {
  if (trajectory.failure) return trajectory.failure.class;
  return trajectory.correct ? null : "policy";
}

/** True when the episode failed for a reason outside the policy and the agent: never scored. */
export function isInfraFailure(trajectory: Pick<Trajectory, "failure">): boolean {
  return trajectory.failure?.class === "infra";
}

/** Counts of failed episodes by class (`ok` for successes). */
export function countFailures(
  trajectories: Iterable<Pick<Trajectory, "failure" | "correct">>,
): Record<FailureClass | "ok", number> {
  const counts: Record<FailureClass | "ok", number> = { ok: 0, policy: 0, agent: 0, tool: 0, infra: 0 };
  for (const trajectory of trajectories) counts[failureClass(trajectory) ?? "ok"]++;
  return counts;
}
