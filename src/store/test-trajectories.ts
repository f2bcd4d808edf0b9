/**
 * Hand-built trajectories for the store and export tests: every action type, every tool status,
 * injected noise, format errors, null log-probs and the numbers plain JSON loses (-0, NaN, ±Inf).
 * Token ids are arbitrary but distinct, so a lost or reordered id shows up.
 */

import { renderAnswer, renderObservation, renderPrompt, renderToolCall } from "../env/protocol.ts";
import type { ToolSpec } from "../types/policy.ts";
import type { ToolResult, ToolStatus } from "../types/tool.ts";
import type { Trajectory, Turn } from "../types/trajectory.ts";

export const TEST_TOOL_SPECS: readonly ToolSpec[] = [
  {
    name: "search",
    description: "Search the documents; returns the top matches.",
    parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
    textArgument: "query",
  },
  {
    name: "calc",
    description: "Evaluate an arithmetic expression.",
    parameters: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] },
    textArgument: "expression",
  },
];

function ids(start: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => start + i);
}

function toolTurn(
  index: number,
  tool: string,
  argument: string,
  result: { status: ToolStatus; content: string; injected?: boolean } & Partial<ToolResult>,
  logprobs: "known" | "null" = "known",
): Turn {
  const argumentName = tool === "calc" ? "expression" : "query";
  const text = renderToolCall(tool, argument);
  const tokenIds = ids(100 + index * 10, 4);
  const observation = renderObservation(result.content);
  return {
    index,
    text,
    tokenIds,
    logprobs: logprobs === "null" ? null : tokenIds.map((id) => -id / 1000),
    action: { type: "tool-call", tool, arguments: { [argumentName]: argument } },
    toolResult: { injected: false, ...result },
    observation: { text: observation, tokenIds: ids(500 + index * 10, 6) },
    rewards: { turn: result.status === "ok" ? 0.1 : -0, evidence: null },
  };
}

/** A search-search-calc-answer episode with every tool status along the way. */
export function richTrajectory(seed = 7): Trajectory {
  const turns: Turn[] = [
    toolTurn(0, "search", "zenda", {
      status: "ok",
      content: "zenda : city in ruritania . founded 1850 .",
      refs: ["c1"],
    }),
    toolTurn(1, "search", "orvik", {
      status: "timeout",
      content: "error : timeout",
      injected: true,
      latencyMs: 5000,
    }),
    toolTurn(2, "search", "orvik", { status: "empty", content: "no results" }, "null"),
    toolTurn(3, "search", "orvik city", {
      status: "corrupted",
      content: "talo : person .",
      injected: true,
      refs: ["p9"],
    }),
    toolTurn(4, "search", "orvik founded", { status: "error", content: "error : index unavailable" }),
    toolTurn(5, "calc", "1910 - 1850", { status: "ok", content: "60", value: 60 }),
    {
      index: 6,
      text: renderAnswer("60"),
      tokenIds: [7, 60, 8],
      logprobs: [-0, -0.25, Number.NEGATIVE_INFINITY],
      action: { type: "answer", answer: "60" },
      rewards: { turn: 1, overlong: -0 },
    },
  ];
  return {
    id: `w3/arithmetic/years-between/0#${seed}`,
    taskId: "w3/arithmetic/years-between/0",
    family: "arithmetic",
    policyId: "base-v1",
    seed,
    group: 2,
    prompt: {
      text: renderPrompt("how many years between the founding of zenda and of orvik ?"),
      tokenIds: ids(1, 12),
    },
    turns,
    finalAnswer: "60",
    correct: true,
    outcomeReward: 1,
    endReason: "answer",
    info: { noise: { timeout: 0.1 }, timingsMs: { total: 12.5 }, loss: Number.NaN },
  };
}

/** Two format errors (the second ends the episode); no group, unscorable outcome. */
export function formatErrorTrajectory(seed = 3): Trajectory {
  return {
    id: `w1/lookup/population/4#${seed}`,
    taskId: "w1/lookup/population/4",
    family: "lookup",
    policyId: "base-v1",
    seed,
    prompt: { text: renderPrompt("what is the population of zenda ?"), tokenIds: ids(1, 9) },
    turns: [
      {
        index: 0,
        text: " <search> zenda",
        tokenIds: [5, 40],
        logprobs: [-0.5, -1.5],
        action: { type: "format-error", error: "unclosed <search> tag" },
        observation: {
          text: renderObservation("format error : unclosed <search> tag"),
          tokenIds: [3, 90, 91, 4],
        },
        rewards: { format: -1 },
      },
      {
        index: 1,
        text: " the answer is 4213",
        tokenIds: [41, 42, 43, 4, 2, 1, 3],
        logprobs: null,
        action: { type: "format-error", error: "no action tag" },
        rewards: { format: -1 },
      },
    ],
    finalAnswer: null,
    correct: false,
    outcomeReward: null,
    endReason: "format-error",
  };
}

/** A chat-protocol episode: assistant text beside a tool call, a call id, no token ids. */
export function chatTrajectory(seed = 11): Trajectory {
  return {
    id: `file/qa/17#${seed}`,
    taskId: "file/qa/17",
    family: "file-qa",
    policyId: "openai:qwen3-8b",
    seed,
    group: 0,
    prompt: { text: renderPrompt("Who founded Zenda?"), tokenIds: [] },
    turns: [
      {
        index: 0,
        text: "Let me look that up.",
        tokenIds: [],
        logprobs: null,
        action: {
          type: "tool-call",
          tool: "search",
          arguments: { query: "Zenda founder" },
          callId: "call_abc123",
        },
        toolResult: {
          status: "ok",
          content: "zenda : founded by ilse vorn .",
          injected: false,
          refs: ["c1"],
        },
        observation: { text: "zenda : founded by ilse vorn .", tokenIds: [] },
        rewards: {},
      },
      {
        index: 1,
        text: "Ilse Vorn",
        tokenIds: [],
        logprobs: null,
        action: { type: "answer", answer: "Ilse Vorn" },
        rewards: {},
      },
    ],
    finalAnswer: "Ilse Vorn",
    correct: true,
    outcomeReward: 1,
    endReason: "answer",
  };
}

/** A deterministic, optionally large trajectory for bulk and crash tests (`i` names it). */
export function numberedTrajectory(i: number, tokensPerTurn = 8): Trajectory {
  const base = richTrajectory(i);
  return {
    ...base,
    id: `bulk/${i}`,
    taskId: `bulk/task-${i % 5}`,
    family: ["lookup", "bridge", "arithmetic"][i % 3],
    correct: i % 2 === 0,
    outcomeReward: i % 2 === 0 ? 1 : 0,
    turns: base.turns.map((turn) => ({
      ...turn,
      tokenIds: ids(i * 7 + turn.index, tokensPerTurn),
      logprobs: ids(i + turn.index, tokensPerTurn).map((v) => -v / 997),
    })),
  };
}
