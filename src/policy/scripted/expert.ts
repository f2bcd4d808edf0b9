/**
 * The expert: follows the task's gold steps with the fewest calls. After each search it checks
 * that the observation holds the document of the entity it asked for (a `<name> : <type>` header);
 * after each calc that the observation holds the gold result. Otherwise (an error message, no
 * results, a timeout, a wrong document, a wrong number) it repeats the same call, up to
 * `maxRetries` times per step; after that it gives up with a guess of the answer's magnitude,
 * never with a fact it has not observed. Without tool noise it solves every world task.
 */
import type { Policy } from "../../types/policy.ts";
import type { GoldStep } from "../../types/task.ts";
import { type Agent, type AgentContext, createScriptedPolicy } from "./agent.ts";
import { findDocument, guessNumber, observationHasNumber } from "./skills.ts";

export interface ExpertOptions {
  id?: string;
  /** Repeats of a failed call before giving up (default 4). */
  maxRetries?: number;
}

export const DEFAULT_MAX_RETRIES = 4;

export function* expertAgent({ task, rng }: AgentContext, maxRetries = DEFAULT_MAX_RETRIES): Agent {
  if (!task.gold || task.gold.length === 0) {
    throw new Error(`expert policy: task ${task.id} has no gold steps (the expert only solves world tasks)`);
  }
  for (const step of task.gold) {
    if (step.type === "answer") {
      yield { kind: "answer", answer: step.answer };
      return;
    }
    let done = false;
    for (let attempt = 0; attempt <= maxRetries && !done; attempt++) {
      const observation = yield step.type === "search"
        ? { kind: "search", query: step.query }
        : { kind: "calc", expression: step.expression };
      done = succeeded(step, observation);
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
  return createScriptedPolicy(options.id ?? "expert", (context) => expertAgent(context, maxRetries));
}
