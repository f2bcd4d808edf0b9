/**
 * Hand-built trajectories for reward and advantage tests: a turn per call, with just the fields
 * the rewards read. Not used at run time.
 */
import type { Task } from "../types/task.ts";
import type { ToolResult, ToolStatus } from "../types/tool.ts";
import type { EndReason, Trajectory, Turn } from "../types/trajectory.ts";

export interface TurnSketch {
  /** `search:zenda`, `calc:4213-1850`, `answer:42`, or `format-error`. */
  act: string;
  status?: ToolStatus;
  injected?: boolean;
  refs?: string[];
  value?: number;
  /** Number of policy tokens of the turn (default 3). */
  tokens?: number;
}

export function sketchTurn(sketch: TurnSketch, index: number): Turn {
  const tokenIds = Array.from({ length: sketch.tokens ?? 3 }, (_, i) => 10 + i);
  const [head, ...rest] = sketch.act.split(":");
  const payload = rest.join(":");
  const base = { index, text: sketch.act, tokenIds, logprobs: null, rewards: {} };
  if (head === "answer") return { ...base, action: { type: "answer", answer: payload } };
  if (head === "format-error") return { ...base, action: { type: "format-error", error: "unclosed tag" } };
  const toolResult: ToolResult = {
    status: sketch.status ?? "ok",
    content: `result of ${payload}`,
    injected: sketch.injected ?? false,
    ...(sketch.refs ? { refs: sketch.refs } : {}),
    ...(sketch.value !== undefined ? { value: sketch.value } : {}),
  };
  return {
    ...base,
    action: { type: "tool-call", tool: head, arguments: { query: payload } },
    toolResult,
    observation: { text: toolResult.content, tokenIds: [1, 2] },
  };
}

export function sketchTrajectory(
  turns: TurnSketch[],
  options: { correct?: boolean; endReason?: EndReason; finalAnswer?: string | null; group?: number } = {},
): Trajectory {
  const built = turns.map(sketchTurn);
  const last = built[built.length - 1];
  const answered = last?.action.type === "answer" ? last.action.answer : null;
  return {
    id: "t0",
    taskId: "w1/bridge/0",
    family: "bridge",
    policyId: "sketch",
    seed: 0,
    group: options.group,
    prompt: { text: "<q> question </q>", tokenIds: [5, 6, 7] },
    turns: built,
    finalAnswer: options.finalAnswer !== undefined ? options.finalAnswer : answered,
    correct: options.correct ?? false,
    outcomeReward: null,
    endReason: options.endReason ?? (answered !== null ? "answer" : "max-turns"),
  };
}

/** A bridge task: two searches (zenda's country, then its capital) and an answer. */
export const SKETCH_TASK: Task = {
  id: "w1/bridge/0",
  question: "what is the population of the capital of the country where zenda lives ?",
  answer: "4213",
  family: "bridge",
  evidence: ["p-zenda", "c-ruritania"],
  gold: [
    { type: "search", query: "zenda", entity: "p-zenda" },
    { type: "search", query: "ruritania", entity: "c-ruritania" },
    { type: "calc", expression: "2020 - 1850", result: "170" },
    { type: "answer", answer: "4213" },
  ],
};
