/**
 * One episode of a user's agent through the gateway: the agent runs in a slot (slot.ts) on the
 * task's agent view, with the episode's own base URL (and, for a slot with a fixed URL, the slot
 * bound to this episode while it runs and unbound before the episode ends), under a timeout; its calls become the trajectory. An agent
 * that throws, times out, crashes its slot or returns nothing usable is a recorded failed episode
 * with an `agent` failure, never dropped; its stderr (worker and command slots) is kept in
 * `info.agentStderr`. `correct` comes from the verifier on the returned answer; the outcome reward
 * is the agent's posted reward when it posted one, else 1/0 from the verifier. On world tasks the
 * tool results are checked against the world's own tools (`withWorldToolResults`), so turn-level
 * reward presets judge them.
 */
import { randomBytes } from "node:crypto";
import { judgeAnswer } from "../env/judge-answer.ts";
import type { Gateway } from "../gateway/server.ts";
import type { Failure } from "../types/failure.ts";
import type { Task } from "../types/task.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { functionSlot } from "./function-slot.ts";
import type { AgentSlot } from "./slot.ts";
import { agentTask } from "./task-view.ts";
import type { AgentFunction } from "./types.ts";
import { withWorldToolResults } from "./world-tools.ts";

export interface AgentEpisodeOptions {
  gateway: Gateway;
  /** The agent, run in process (a function slot); or give `slot`. */
  agent?: AgentFunction;
  slot?: AgentSlot;
  /** The gateway slot whose URL the slot's environment names: bound to this episode while it runs. */
  slotId?: string;
  /** The world's tools URL of this task (for agents that cannot import them). */
  toolsURL?: (task: Task) => string | undefined;
  task: Task;
  /** Stored trajectory id (the eval's episode key). */
  key: string;
  seed: number;
  verify: (task: Task, answer: string | null) => boolean | Promise<boolean>;
  /** Key the agent sends (the gateway's token). */
  apiKey: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface AgentEpisode {
  trajectory: Trajectory;
  prefixBreaks: number;
}

/** The answer an agent returned, as text (null: none). */
export function answerText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value) ?? null;
}

/**
 * The class of an agent episode's failure: infra when the upstream or the verifier broke (the
 * gateway or the judge says so), else the slot's own `agent` failure (threw, timed out, exited, out
 * of memory), else an answer-less episode is the agent's; undefined for an answered episode.
 */
function agentEpisodeFailure(
  candidates: readonly (Failure | undefined)[],
  slotFailure: Failure | undefined,
  finalAnswer: string | null,
): Failure | undefined {
  const infra = candidates.find((failure) => failure?.class === "infra");
  if (infra) return infra;
  if (slotFailure) return slotFailure;
  const recorded = candidates.find((failure) => failure !== undefined);
  if (recorded) return recorded;
  if (finalAnswer === null)
    return { class: "agent", code: "agent-no-answer", message: "the agent returned no answer" };
  return undefined;
}

export async function runAgentEpisode(options: AgentEpisodeOptions): Promise<AgentEpisode> {
  const { gateway, task } = options;
  const slot = options.slot ?? (options.agent ? functionSlot(options.agent) : null);
  if (!slot) throw new Error("runAgentEpisode: give the agent or the slot it runs in");
  const episodeId = `ep-${randomBytes(8).toString("hex")}`;
  gateway.openEpisode(episodeId, { taskId: task.id, family: task.family, seed: options.seed });
  if (options.slotId !== undefined) gateway.bindSlot(options.slotId, episodeId);
  const toolsURL = options.toolsURL?.(task);
  let outcome: Awaited<ReturnType<AgentSlot["run"]>>;
  try {
    outcome = await slot.run({
      task: agentTask(task),
      episodeId,
      baseURL: gateway.episodeURL(episodeId),
      apiKey: options.apiKey,
      model: gateway.model,
      timeoutMs: options.timeoutMs,
      ...(toolsURL ? { toolsURL } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } finally {
    if (options.slotId !== undefined) gateway.bindSlot(options.slotId, null);
  }
  const slotFailure = "failure" in outcome ? outcome.failure : undefined;
  const finalAnswer = "answer" in outcome ? answerText(outcome.answer) : null;
  const built = gateway.finishEpisode(episodeId, {
    finalAnswer,
    ...(slotFailure ? { error: slotFailure.message } : {}),
  });
  const trajectory = await withWorldToolResults(built.trajectory, task);
  const verdict =
    trajectory.endReason === "answer" && finalAnswer !== null
      ? await judgeAnswer(options.verify, task, finalAnswer, options.key)
      : { correct: false };
  const failure = agentEpisodeFailure([trajectory.failure, verdict.failure], slotFailure, finalAnswer);
  return {
    trajectory: {
      ...trajectory,
      id: options.key,
      correct: verdict.correct,
      outcomeReward:
        failure?.class === "infra" ? null : (trajectory.outcomeReward ?? (verdict.correct ? 1 : 0)),
      ...(failure ? { failure } : {}),
      ...(outcome.stderr ? { info: { ...trajectory.info, agentStderr: outcome.stderr } } : {}),
    },
    prefixBreaks: built.prefixBreaks,
  };
}
