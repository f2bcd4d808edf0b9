/**
 * Answer verifiers for tasks from files: a closed, typed name → function map. Each is
 * `(task, answer) => boolean | Promise<boolean>` with the `runEpisodes` `verify` signature (only
 * `code` is asynchronous; the others return a boolean as they always did); `answer` is the episode's
 * final answer (untrusted model text, read with bounded parsing) or null when there is none.
 *
 * - `math`: value and symbolic equivalence through a CAS, of a final value (math.ts);
 * - `choice`: one multiple-choice letter (choice.ts);
 * - `em`: SQuAD-normalised exact match with aliases (text.ts);
 * - `f1`: SQuAD token F1 with aliases, accepted at `DEFAULT_F1_THRESHOLD` with the shared words in
 *   the gold's order (text.ts; `f1Score` gives the score itself and `createF1Verifier(t)` another
 *   threshold);
 * - `code`: the answer's last fenced Python program passes every public and hidden test of a
 *   LiveCodeBench/APPS/TACO row in the Python sandbox (code.ts).
 */
import type { Task } from "../types/task.ts";
import { verifyCode } from "./code.ts";
import { codeTestsProblem } from "./code-tests.ts";
import { createWorkerVerifier } from "./worker-verifier.ts";

/**
 * `context.signal` aborts at the episode loop's verifier deadline (src/env/judge-answer.ts): an
 * asynchronous verifier stops its work then (`code` kills its sandbox).
 */
export type Verifier = (
  task: Task,
  answer: string | null,
  context?: { signal?: AbortSignal },
) => boolean | Promise<boolean>;

export const VERIFIER_NAMES = ["math", "choice", "em", "f1", "code"] as const;
export type VerifierName = (typeof VERIFIER_NAMES)[number];

/**
 * The named verifiers. The synchronous ones (`math`, `choice`, `em`, `f1`) run on a worker thread
 * each (worker-verifier.ts), so the episode loop's verifier deadline can terminate one stuck on
 * untrusted text; `code` runs its programs in a sandbox process the deadline kills. The functions
 * themselves (`verifyMath`, …) stay exported for direct, synchronous use.
 */
export const VERIFIERS: Readonly<Record<VerifierName, Verifier>> = {
  math: createWorkerVerifier(new URL("./math.ts", import.meta.url), "verifyMath"),
  choice: createWorkerVerifier(new URL("./choice.ts", import.meta.url), "verifyChoice"),
  em: createWorkerVerifier(new URL("./text.ts", import.meta.url), "verifyExactMatch"),
  f1: createWorkerVerifier(new URL("./text.ts", import.meta.url), "verifyF1"),
  code: verifyCode,
};

/**
 * Checks that every task can be judged by the verifier before a run: a malformed code task (no
 * readable tests) would otherwise score every answer 0 with nothing logged. Throws naming the
 * task, where it came from and the reason.
 */
export function checkTasksForVerifier(
  name: VerifierName,
  tasks: readonly Task[],
  source = "the task list",
): void {
  if (name !== "code") return;
  for (const task of tasks) {
    const problem = codeTestsProblem(task);
    if (problem)
      throw new Error(`${source}: task ${task.id} cannot be judged by the code verifier: ${problem}`);
  }
}

/** The verifier of a name; throws naming the valid ones (for `--verifier`). */
export function getVerifier(name: string): Verifier {
  if (!(VERIFIER_NAMES as readonly string[]).includes(name)) {
    throw new Error(`unknown verifier "${name}" (valid: ${VERIFIER_NAMES.join(", ")})`);
  }
  return VERIFIERS[name as VerifierName];
}

export { CHOICE_LETTERS, extractChoice, taskChoices, verifyChoice } from "./choice.ts";
export { type CodeVerdict, type CodeVerifierOptions, createCodeVerifier, verifyCode } from "./code.ts";
export {
  type CodeTest,
  type CodeTests,
  codeTestsProblem,
  extractProgram,
  returnMatches,
  stdoutMatches,
  taskCodeTests,
} from "./code-tests.ts";
export {
  boxedContents,
  MAX_ANSWER_CHARS,
  MAX_BOXED,
  MAX_RESPONSE_CHARS,
} from "./extract.ts";
export {
  extractMathAnswers,
  type MathAnswerSource,
  mathEqual,
  normalizeMathAnswer,
  RELATIVE_TOLERANCE,
  verifyMath,
} from "./math.ts";
export {
  createF1Verifier,
  DEFAULT_F1_THRESHOLD,
  exactMatch,
  f1Score,
  normalizeText,
  textAnswerCandidates,
  tokenF1,
  verifyExactMatch,
} from "./text.ts";
