/**
 * Scripted agents as generators. An agent is straight-line code that yields its next action and
 * receives the observation text of that action:
 *
 *   const observation = yield { kind: "search", query: "zenda" };
 *
 * `createScriptedPolicy` turns an agent into a stateless text-protocol `Policy`: for each context
 * it restarts the agent and replays the episode's observations into it, so the next action follows
 * from the task, the seed and what the agent has observed (never from `toolResult.status`, which a
 * real agent cannot see). Randomness comes from `createRng(context.seed)` forks, never Math.random,
 * so replaying reproduces every earlier decision.
 */
import { createRng, type Rng } from "../../core/random.ts";
import { renderAnswer, renderToolCall } from "../../env/protocol.ts";
import type { Policy, PolicyContext, PolicyStep } from "../../types/policy.ts";
import type { Task } from "../../types/task.ts";

export type AgentAction =
  | { kind: "search"; query: string }
  | { kind: "calc"; expression: string }
  | { kind: "answer"; answer: string };

/** Yields actions, receives each tool call's observation text; ends after yielding an answer. */
export type Agent = Generator<AgentAction, void, string>;

export interface AgentContext {
  task: Task;
  /** The episode seed's stream; agents fork it by label for independent decisions. */
  rng: Rng;
}

export type AgentFactory = (context: AgentContext) => Agent;

export function renderAction(action: AgentAction): string {
  switch (action.kind) {
    case "search":
      return renderToolCall("search", action.query);
    case "calc":
      return renderToolCall("calc", action.expression);
    case "answer":
      return renderAnswer(action.answer);
  }
}

/** The agent's next action in this episode (its past actions are replayed against the observations). */
export function nextAction(factory: AgentFactory, context: PolicyContext): AgentAction {
  const agent = factory({ task: context.task, rng: createRng(context.seed) });
  let step = agent.next();
  for (const turn of context.turns) {
    if (step.done) break;
    step = agent.next(turn.observation?.text ?? "");
  }
  if (step.done)
    throw new Error(`scripted agent finished before turn ${context.turns.length} of ${context.episodeId}`);
  return step.value;
}

export function createScriptedPolicy(id: string, factory: AgentFactory): Policy {
  return {
    id,
    protocol: "text",
    async act(contexts) {
      return contexts.map(
        (context): PolicyStep => ({
          text: renderAction(nextAction(factory, context)),
          tokenIds: [],
          logprobs: null,
          finishReason: "stop",
        }),
      );
    },
  };
}
