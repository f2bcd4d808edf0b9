/**
 * One episode of a user's agent through the gateway: the agent gets the episode's base URL and the
 * task's agent view, runs under a timeout, and its calls become the trajectory. An agent that
 * throws, times out or returns nothing usable is a recorded failed episode, never dropped.
 * `correct` comes from the verifier on the returned answer; the outcome reward is the agent's posted
 * reward when it posted one, else 1/0 from the verifier. On world tasks the tool results are checked
 * against the world's own tools (`withWorldToolResults`), so turn-level reward presets judge them.
 */
import { randomBytes } from "node:crypto";
import { judgeAnswer } from "../env/judge-answer.ts";
import type { Gateway } from "../gateway/server.ts";
import type { Failure } from "../types/failure.ts";
import type { Task } from "../types/task.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { agentTask } from "./task-view.ts";
import type { AgentFunction } from "./types.ts";
import { withWorldToolResults } from "./world-tools.ts";

export interface AgentEpisodeOptions {
  gateway: Gateway;
  agent: AgentFunction;
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
 * The class of an agent episode's failure: infra when the upstream broke (the gateway says so) or
 * the verifier did; else `agent` when the agent threw, ran past its deadline or returned no answer.
 */
function agentEpisodeFailure(
  infra: Failure | undefined,
  error: string | undefined,
  timedOut: boolean,
  finalAnswer: string | null,
): Failure | undefined {
  if (infra) return infra;
  if (error) return { class: "agent", code: timedOut ? "agent-timeout" : "agent-threw", message: error };
  if (finalAnswer === null)
    return { class: "agent", code: "agent-no-answer", message: "the agent returned no answer" };
  return undefined;
}

export async function runAgentEpisode(options: AgentEpisodeOptions): Promise<AgentEpisode> {
  const { gateway, task } = options;
  const episodeId = `ep-${randomBytes(8).toString("hex")}`;
  gateway.openEpisode(episodeId, { taskId: task.id, family: task.family, seed: options.seed });
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error(`the agent ran past ${options.timeoutMs} ms`));
  }, options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([controller.signal, options.signal]) : controller.signal;
  let finalAnswer: string | null = null;
  let error: string | undefined;
  try {
    const returned = options.agent(agentTask(task), {
      baseURL: gateway.episodeURL(episodeId),
      apiKey: options.apiKey,
      model: gateway.model,
      signal,
    });
    // An agent that ignores its signal still ends the episode at the deadline.
    const aborted = new Promise<never>((_, reject) => {
      if (signal.aborted) reject(signal.reason);
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
    finalAnswer = answerText(await Promise.race([returned, aborted]));
  } catch (caught) {
    error = timedOut
      ? `timeout: the agent ran past ${options.timeoutMs} ms`
      : `the agent threw: ${caught instanceof Error ? caught.message : String(caught)}`;
  } finally {
    clearTimeout(timer);
  }
  const built = gateway.finishEpisode(episodeId, { finalAnswer, ...(error ? { error } : {}) });
  const trajectory = await withWorldToolResults(built.trajectory, task);
  const verdict =
    trajectory.endReason === "answer" && finalAnswer !== null
      ? await judgeAnswer(options.verify, task, finalAnswer, options.key)
      : { correct: false };
  const failure = agentEpisodeFailure(trajectory.failure ?? verdict.failure, error, timedOut, finalAnswer);
  return {
    trajectory: {
      ...trajectory,
      id: options.key,
      correct: verdict.correct,
      outcomeReward:
        failure?.class === "infra" ? null : (trajectory.outcomeReward ?? (verdict.correct ? 1 : 0)),
      ...(failure ? { failure } : {}),
    },
    prefixBreaks: built.prefixBreaks,
  };
}
