/**
 * Test helper, not used at run time: a synchronous verifier that never returns for the answer
 * "loop" (a verifier stuck on one input), right by exact match otherwise; and one that throws.
 */
import { ClassifiedError, infraFailure } from "../types/failure.ts";
import type { Task } from "../types/task.ts";

export function spinOnLoop(task: Task, answer: string | null): boolean {
  while (answer === "loop") {
    // busy: nothing on this thread runs again
  }
  return answer === task.answer;
}

export function throwsClassified(): boolean {
  throw new ClassifiedError(infraFailure("math-checker-error", "the checker broke"));
}
