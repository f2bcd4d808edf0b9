/**
 * A verifier's verdict on a final answer, with its failures classified. A verifier that throws did
 * not judge the answer: the episode is `infra` (`verifier-error`, or the class its
 * `ClassifiedError` names, e.g. `verifier-timeout`), never "wrong". `AGENTRL_FAULTS` injects the
 * verifier faults here, keyed by the episode id.
 */
import { injectFault, VERIFIER_FAULTS } from "../core/faults.ts";
import { ClassifiedError, type Failure, infraFailure } from "../types/failure.ts";
import type { Task } from "../types/task.ts";

export async function judgeAnswer(
  verify: (task: Task, answer: string) => boolean | Promise<boolean>,
  task: Task,
  answer: string,
  episodeId: string,
): Promise<{ correct: boolean; failure?: Failure }> {
  // Outside the try: a malformed AGENTRL_FAULTS is a configuration error, never a verifier's.
  const fault = injectFault(VERIFIER_FAULTS, `${episodeId}:verify`);
  if (fault) return { correct: false, failure: fault.failure };
  try {
    return { correct: await verify(task, answer) };
  } catch (error) {
    if (error instanceof ClassifiedError) return { correct: false, failure: error.failure };
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return { correct: false, failure: infraFailure("verifier-error", `the verifier threw ${message}`) };
  }
}
