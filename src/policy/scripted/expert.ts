/**
 * The expert: follows the task's gold steps with the fewest calls. After each search it checks
 * that the observation holds the document of the entity it asked for (a `<name> : <type>` header);
 * after each calc that the observation holds the gold result. Otherwise (an error message, no
 * results, a timeout, a wrong document, a wrong number) it repeats the same call, up to
 * `maxRetries` times per step; after that it gives up with a guess of the answer's magnitude,
 * never with a fact it has not observed. Without tool noise it solves every world task.
 *
 * With `recovery: "adapt"` it recovers the way a real agent does instead of repeating blindly
 * (arXiv:2510.11701's real trajectories): after an error or timeout it retries the call once and
 * then rephrases the query; after "no results" it rephrases at once; after a wrong document it
 * searches again to re-check; after a wrong calculator result it recomputes. The SFT "real" data of
 * the recipe can then teach recovery rather than repetition.
 */
import type { Policy } from "../../types/policy.ts";
import type { GoldStep } from "../../types/task.ts";
import { type Agent, type AgentContext, createScriptedPolicy } from "./agent.ts";
import { findDocument, guessNumber, observationHasNumber } from "./skills.ts";

export const EXPERT_RECOVERIES = ["repeat", "adapt"] as const;
export type ExpertRecovery = (typeof EXPERT_RECOVERIES)[number];

export interface ExpertOptions {
  id?: string;
  /** Repeats of a failed call before giving up (default 4). */
  maxRetries?: number;
  /** How a failed call is followed: the same call again (default), or as a real agent would. */
  recovery?: ExpertRecovery;
}

/** Rephrasings of a search query (the entity name stays: search matches exact terms). */
const REPHRASINGS: readonly ((query: string) => string)[] = [
  (query) => `about ${query}`,
  (query) => `${query} facts`,
  (query) => `what is ${query}`,
];

/** An observation that says the tool failed to answer (as opposed to answering wrongly). */
function failureKind(observation: string): "error" | "empty" | null {
  if (/\berror\s*:/.test(observation)) return "error";
  if (/\bno results\b/.test(observation)) return "empty";
  return null;
}

export const DEFAULT_MAX_RETRIES = 4;

export function* expertAgent(
  { task, rng }: AgentContext,
  maxRetries = DEFAULT_MAX_RETRIES,
  recovery: ExpertRecovery = "repeat",
): Agent {
  if (!task.gold || task.gold.length === 0) {
    throw new Error(`expert policy: task ${task.id} has no gold steps (the expert only solves world tasks)`);
  }
  for (const step of task.gold) {
    if (step.type === "answer") {
      yield { kind: "answer", answer: step.answer };
      return;
    }
    let done = false;
    let query = step.type === "search" ? step.query : "";
    let rephrased = 0;
    let errors = 0;
    for (let attempt = 0; attempt <= maxRetries && !done; attempt++) {
      const observation = yield step.type === "search"
        ? { kind: "search", query }
        : { kind: "calc", expression: step.expression };
      done = succeeded(step, observation);
      if (done || recovery === "repeat" || step.type !== "search") continue;
      // adapt: a transient error is retried once, then the query changes; "no results" changes it
      // at once; a wrong document is re-checked with the same query (it may have been corrupted)
      const kind = failureKind(observation);
      if (kind === "error") errors++;
      if (kind === "empty" || (kind === "error" && errors > 1)) {
        query = REPHRASINGS[rephrased % REPHRASINGS.length](step.query);
        rephrased++;
      }
    }
    if (!done) {
      yield { kind: "answer", answer: guessNumber(task, rng.fork("give-up")) };
      return;
    }
  }
  throw new Error(`expert policy: the gold steps of task ${task.id} end without an answer`);
}

function succeeded(step: Exclude<GoldStep, { type: "answer" }>, observation: string): boolean {
  return step.type === "search"
    ? findDocument(observation, step.query) !== undefined
    : observationHasNumber(observation, step.result);
}

export function createExpertPolicy(options: ExpertOptions = {}): Policy {
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  if (!Number.isInteger(maxRetries) || maxRetries < 0) {
    throw new Error(`expert policy: maxRetries must be an integer >= 0, got ${maxRetries}`);
  }
  const recovery = options.recovery ?? "repeat";
  if (!(EXPERT_RECOVERIES as readonly string[]).includes(recovery)) {
    throw new Error(
      `expert policy: recovery must be one of ${EXPERT_RECOVERIES.join(", ")}, got ${recovery}`,
    );
  }
  return createScriptedPolicy(options.id ?? "expert", (context) =>
    expertAgent(context, maxRetries, recovery),
  );
}
