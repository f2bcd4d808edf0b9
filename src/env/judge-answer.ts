/**
 * A verifier's verdict on a final answer, with its failures classified. A verifier that throws did
 * not judge the answer: the episode is `infra` (`verifier-error`, or the class its
 * `ClassifiedError` names), never "wrong". `AGENTRL_FAULTS` injects the verifier faults here, keyed
 * by the episode id.
 *
 * The verdict has a deadline of its own (`timeoutMs`, the episode budget `verifierTimeoutMs`): a
 * verifier that gives none in time is `infra` `verifier-timeout`, and the loop goes on. How real
 * the cut is depends on where the verifier runs:
 * - the wait always ends at the deadline, and the verifier is handed an AbortSignal that aborts
 *   then, so one that honours it stops its work: the `code` verifier kills its Python sandbox
 *   process; the named synchronous verifiers (`math`, `choice`, `em`, `f1`) run on worker threads
 *   (src/verify/worker-verifier.ts) and the stuck thread is terminated;
 * - a synchronous function called on this thread (the embedded lab's world check, bounded by its
 *   small answers; a library caller's own) cannot be pre-empted: one that returns after the
 *   deadline has its verdict discarded and is classed `verifier-timeout` like the rest, so a late
 *   verdict is never scored either way.
 */
import { injectFault, VERIFIER_FAULTS } from "../core/faults.ts";
import { ClassifiedError, type Failure, infraFailure } from "../types/failure.ts";
import type { Task } from "../types/task.ts";

/** What a verifier is handed besides the task and answer: aborted at the loop's deadline. */
export interface VerifyContext {
  signal: AbortSignal;
}

/** The episode loop's default deadline for a verdict: above any sane code-verifier run. */
export const DEFAULT_VERIFIER_TIMEOUT_MS = 120_000;

export async function judgeAnswer(
  verify: (task: Task, answer: string, context: VerifyContext) => boolean | Promise<boolean>,
  task: Task,
  answer: string,
  episodeId: string,
  timeoutMs: number = DEFAULT_VERIFIER_TIMEOUT_MS,
): Promise<{ correct: boolean; failure?: Failure }> {
  // Outside the try: a malformed AGENTRL_FAULTS is a configuration error, never a verifier's.
  const fault = injectFault(VERIFIER_FAULTS, `${episodeId}:verify`);
  if (fault) return { correct: false, failure: fault.failure };
  const timedOut = () =>
    new ClassifiedError(infraFailure("verifier-timeout", `the verifier gave no verdict in ${timeoutMs} ms`));
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort(timedOut());
      reject(timedOut());
    }, timeoutMs);
  });
  const started = performance.now();
  try {
    const correct = await Promise.race([
      Promise.resolve().then(() => verify(task, answer, { signal: controller.signal })),
      deadline,
    ]);
    // A synchronous verifier overran the deadline on this thread: its verdict is not trusted either.
    if (performance.now() - started > timeoutMs) throw timedOut();
    return { correct };
  } catch (error) {
    if (error instanceof ClassifiedError) return { correct: false, failure: error.failure };
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return { correct: false, failure: infraFailure("verifier-error", `the verifier threw ${message}`) };
  } finally {
    clearTimeout(timer);
    deadline.catch(() => {});
  }
}
