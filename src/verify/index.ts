/**
 * Answer verifiers for tasks from files: a closed, typed name → function map. Each is
 * `(task, answer) => boolean` with the `runEpisodes` `verify` signature; `answer` is the episode's
 * final answer (untrusted model text, read with bounded parsing) or null when there is none.
 *
 * - `math`: value and symbolic equivalence through a CAS (math.ts);
 * - `choice`: one multiple-choice letter (choice.ts);
 * - `em`: SQuAD-normalised exact match with aliases (text.ts);
 * - `f1`: SQuAD token F1 with aliases, accepted at `DEFAULT_F1_THRESHOLD` (text.ts; `f1Score` gives
 *   the score itself and `createF1Verifier(t)` another threshold).
 */
import type { Task } from "../types/task.ts";
import { verifyChoice } from "./choice.ts";
import { verifyMath } from "./math.ts";
import { createF1Verifier, verifyExactMatch } from "./text.ts";

export type Verifier = (task: Task, answer: string | null) => boolean;

export const VERIFIER_NAMES = ["math", "choice", "em", "f1"] as const;
export type VerifierName = (typeof VERIFIER_NAMES)[number];

export const VERIFIERS: Readonly<Record<VerifierName, Verifier>> = {
  math: verifyMath,
  choice: verifyChoice,
  em: verifyExactMatch,
  f1: createF1Verifier(),
};

/** The verifier of a name; throws naming the valid ones (for `--verifier`). */
export function getVerifier(name: string): Verifier {
  if (!(VERIFIER_NAMES as readonly string[]).includes(name)) {
    throw new Error(`unknown verifier "${name}" (valid: ${VERIFIER_NAMES.join(", ")})`);
  }
  return VERIFIERS[name as VerifierName];
}

export { CHOICE_LETTERS, extractChoice, taskChoices, verifyChoice } from "./choice.ts";
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
