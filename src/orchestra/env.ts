/**
 * The orchestrator's environment: the episode loop of src/env with sub-agents as its tools.
 *
 * - Low degree: the orchestrator may delegate to at most one sub-agent per episode. The first call
 *   runs; every later call is rejected (`error : one call only`) without reaching a sub-agent.
 * - High degree: any number of calls, plus `parallel`, whose payload is a plan of independent calls
 *   (`searcher : population of zenda ; searcher : employees of kelto`). They run concurrently; the
 *   observation lists their results in plan order (`1 : 4213 ; 2 : 340`), whatever order they end
 *   in. A malformed plan (an unknown agent, a missing question, a nested `parallel`, more than
 *   `MAX_PARALLEL_CALLS` calls) runs nothing and is recorded as `error : invalid plan`.
 * - A malformed action (no tag, an unknown sub-agent tag) is the loop's own format-error turn.
 * - Sub-agents of an episode share a blackboard, so a reference (`part 1 step 2`, `part 1 + part 2`)
 *   takes its input from earlier calls: the edges of the multi-agent system (references.ts).
 *
 * Reward (MAS-Orchestra): 0.9 · correct + 0.1 · (the episode executed without error), where an
 * execution error is the orchestrator's fault: a format-error turn, a rejected call or plan, a
 * question a sub-agent cannot parse, a reference whose input is missing, or no answer at all. A sub-agent's own failures (its
 * competence) are not execution errors.
 */
import { z } from "zod";
import { mixSeeds } from "../core/random.ts";
import type { EpisodeBudgets } from "../env/run-episodes.ts";
import { callTool } from "../tools/index.ts";
import type { Task } from "../types/task.ts";
import type { AnyTool, Tool, ToolResult, ToolStatus } from "../types/tool.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { checkAnswer } from "../world/index.ts";
import {
  createSubAgents,
  SUB_AGENT_MESSAGES,
  SUB_AGENTS,
  type SubAgentName,
  type SubAgentOptions,
} from "./sub-agents.ts";

export const DEGREES = ["low", "high"] as const;
export type Degree = (typeof DEGREES)[number];

export const MAX_PARALLEL_CALLS = 8;

export const ORCHESTRA_MESSAGES = {
  oneCallOnly: "error : one call only",
  invalidPlan: "error : invalid plan",
} as const;

/** Budgets of orchestration episodes: a parallel plan needs longer turns than a world action. */
export const ORCHESTRA_BUDGETS: Partial<EpisodeBudgets> = { maxTurns: 12, maxTurnTokens: 64, maxTokens: 192 };

export interface OrchestraEnvOptions extends SubAgentOptions {
  degree: Degree;
  /** Sub-agents offered (default all). */
  agents?: readonly SubAgentName[];
}

/** A tool factory for `runEpisodes` / `trainRl`: the sub-agents of the task, per degree. */
export function orchestraToolsFor(options: OrchestraEnvOptions): (task: Task, seed: number) => AnyTool[] {
  const offered = options.agents ?? SUB_AGENTS;
  for (const name of offered) {
    if (!(SUB_AGENTS as readonly string[]).includes(name)) {
      throw new Error(`orchestra: unknown sub-agent "${name}"; valid: ${SUB_AGENTS.join(", ")}`);
    }
  }
  if (!(DEGREES as readonly string[]).includes(options.degree)) {
    throw new Error(`orchestra: degree must be one of ${DEGREES.join(", ")}, got "${options.degree}"`);
  }
  return (task, seed) => {
    const agents = createSubAgents(task, mixSeeds(seed, 0x0c), options).filter((agent) =>
      offered.includes(agent.name as SubAgentName),
    );
    return options.degree === "low" ? oneCallOnly(agents) : [...agents, parallelTool(agents)];
  };
}

function rejected(content: string): ToolResult {
  return { status: "error", content, injected: false };
}

/** Wraps the agents so that, together, they run at most one call. */
function oneCallOnly(agents: Tool<{ question: string }>[]): AnyTool[] {
  let used = false;
  return agents.map((agent) => ({
    ...agent,
    async call(args, options) {
      if (used) return rejected(ORCHESTRA_MESSAGES.oneCallOnly);
      used = true;
      return agent.call(args, options);
    },
  }));
}

export interface PlannedCall {
  agent: SubAgentName;
  question: string;
}

/** A `parallel` payload as calls, or null when it is malformed. */
export function parsePlan(payload: string, agents: readonly string[]): PlannedCall[] | null {
  const parts = payload.split(";").map((part) => part.trim());
  if (parts.length === 0 || parts.length > MAX_PARALLEL_CALLS) return null;
  const calls: PlannedCall[] = [];
  for (const part of parts) {
    const colon = part.indexOf(":");
    if (colon < 0) return null;
    const agent = part.slice(0, colon).trim();
    const question = part.slice(colon + 1).trim();
    if (!agents.includes(agent) || question === "") return null;
    calls.push({ agent: agent as SubAgentName, question });
  }
  return calls;
}

const STATUS_ORDER: ToolStatus[] = ["error", "timeout", "empty", "corrupted", "ok"];

function parallelTool(agents: Tool<{ question: string }>[]): Tool<{ calls: string }> {
  const names = agents.map((agent) => agent.name);
  return {
    name: "parallel",
    description: `runs independent sub-agent calls concurrently: "agent : question ; agent : question" (at most ${MAX_PARALLEL_CALLS}); results come back in the same order`,
    schema: z.object({ calls: z.string().min(1) }),
    textArgument: "calls",
    async call({ calls }, options) {
      const plan = parsePlan(calls, names);
      if (!plan) return rejected(ORCHESTRA_MESSAGES.invalidPlan);
      const results = await Promise.all(
        plan.map((planned) =>
          callTool(
            agents.find((agent) => agent.name === planned.agent)!,
            { question: planned.question },
            options,
          ),
        ),
      );
      const status =
        STATUS_ORDER.find((candidate) => results.some((result) => result.status === candidate)) ?? "ok";
      return {
        status,
        content: results.map((result, i) => `${i + 1} : ${result.content}`).join(" ; "),
        injected: false,
      };
    },
  };
}

/** Results that are the orchestrator's fault (see the header). */
const EXECUTION_ERRORS: readonly string[] = [
  ORCHESTRA_MESSAGES.oneCallOnly,
  ORCHESTRA_MESSAGES.invalidPlan,
  SUB_AGENT_MESSAGES.notALookup,
  SUB_AGENT_MESSAGES.notASum,
  SUB_AGENT_MESSAGES.notFound,
  SUB_AGENT_MESSAGES.missingInput,
];

/** Execution errors of an episode: format errors, rejected or unparseable calls, no answer. */
export function executionErrors(trajectory: Trajectory): number {
  let errors = trajectory.endReason === "answer" ? 0 : 1;
  for (const turn of trajectory.turns) {
    if (turn.action.type === "format-error") errors++;
    const content = turn.toolResult?.content ?? "";
    if (
      turn.toolResult?.status === "error" &&
      (EXECUTION_ERRORS.includes(content) || content.includes("argument"))
    )
      errors++;
    else if (turn.action.type === "tool-call" && turn.action.tool === "parallel") {
      errors += EXECUTION_ERRORS.filter((message) => content.includes(message)).length;
    }
  }
  return errors;
}

export const CORRECT_WEIGHT = 0.9;
export const EXECUTION_WEIGHT = 0.1;

/** The answer that means "what the last sub-agent call returned": the system's output. */
export const RESULT_ANSWER = "result";

/**
 * The episode's answer with `result` resolved: as in MAS-Orchestra, the multi-agent system's
 * output is its last agent's output, so the orchestrator may end with `<answer> result </answer>`
 * instead of copying it. `result` is the last value a sub-agent call returned (the last of a
 * parallel plan; the first of conflicting values); null when the last call failed or none ran.
 */
export function resolveAnswer(trajectory: Trajectory): string | null {
  const answer = trajectory.finalAnswer;
  if (answer === null || answer.trim() !== RESULT_ANSWER) return answer;
  const last = trajectory.turns.findLast((turn) => turn.action.type === "tool-call" && turn.toolResult);
  if (!last?.toolResult) return null;
  const items = last.toolResult.content.split(" ; ");
  const content = (items.at(-1) ?? "").replace(/^\d+ : /, "");
  if (content === "" || content.startsWith("error")) return null;
  return content.split(" or ")[0].trim();
}

/**
 * The trajectory with `result` resolved (correctness re-checked) and the MAS-Orchestra reward
 * 0.9 · correct + 0.1 · (no execution error) as its outcome reward.
 */
export function withOrchestraReward(trajectory: Trajectory, task: Task): Trajectory {
  const answer = resolveAnswer(trajectory);
  const correct = answer !== null && checkAnswer(task, answer);
  const reward =
    CORRECT_WEIGHT * (correct ? 1 : 0) + EXECUTION_WEIGHT * (executionErrors(trajectory) === 0 ? 1 : 0);
  return { ...trajectory, finalAnswer: answer, correct, outcomeReward: reward };
}

/** Sub-agent calls of an episode (a parallel plan counts each of its calls) and the parallel ones. */
export function countCalls(trajectory: Trajectory): { calls: number; parallel: number } {
  let calls = 0;
  let parallel = 0;
  for (const turn of trajectory.turns) {
    if (turn.action.type !== "tool-call") continue;
    if (turn.action.tool !== "parallel") {
      if (!turn.toolResult?.content.startsWith(ORCHESTRA_MESSAGES.oneCallOnly)) calls++;
      continue;
    }
    if (turn.toolResult?.content === ORCHESTRA_MESSAGES.invalidPlan) continue;
    const n = (turn.toolResult?.content.match(/(?:^| ; )\d+ : /g) ?? []).length;
    calls += n;
    parallel += n;
  }
  return { calls, parallel };
}
