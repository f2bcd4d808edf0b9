/**
 * The embedded world's tools for agents that run them as their own local functions:
 *
 *   const tools = agentWorldTools(task);          // task.worldSeed names the world
 *   await tools.call("search", { query: "zenda" }) // → the tool's text, as the episode loop shows it
 *   tools.openai                                   // OpenAI function-tool specs of search and calc
 */
import { cachedWorld } from "../env/task-set.ts";
import type { GatewayInfo } from "../gateway/trajectory.ts";
import { toolSpecsToOpenAi } from "../store/openai-chat.ts";
import { callTool, toolSpec, worldTools } from "../tools/index.ts";
import type { Task } from "../types/task.ts";
import type { AnyTool } from "../types/tool.ts";
import type { Trajectory, Turn } from "../types/trajectory.ts";
import type { AgentTask } from "./types.ts";

export interface AgentWorldTools {
  /** `search` and `calc` in the OpenAI `tools` format. */
  readonly openai: ReturnType<typeof toolSpecsToOpenAi>;
  readonly names: readonly string[];
  /** Runs a tool; failures (unknown tool, bad arguments) come back as text, never thrown. */
  call(name: string, args: unknown): Promise<string>;
}

export function agentWorldTools(task: Pick<AgentTask, "id" | "worldSeed">): AgentWorldTools {
  if (task.worldSeed === undefined)
    throw new Error(`task ${task.id} has no worldSeed: it is not a world task`);
  const tools = worldTools(cachedWorld(task.worldSeed));
  return {
    openai: toolSpecsToOpenAi(tools.map(toolSpec)),
    names: tools.map((tool) => tool.name),
    async call(name, args) {
      const tool = tools.find((candidate) => candidate.name === name);
      if (!tool) return `error : unknown tool ${name}`;
      const record = typeof args === "object" && args !== null ? (args as Record<string, unknown>) : {};
      const result = await callTool(tool, record);
      return result.content;
    },
  };
}

/** The text of a tool message as the agent's SDK may have sent it (a JSON string is unquoted). */
function observedText(content: string): string {
  const trimmed = content.trim();
  if (trimmed.startsWith('"')) {
    try {
      const parsed: unknown = JSON.parse(trimmed);
      if (typeof parsed === "string") return parsed.trim();
    } catch (error) {
      // Text that merely starts with a quote is kept as written; anything but a JSON syntax error is a bug.
      if (!(error instanceof SyntaxError)) throw error;
    }
  }
  return trimmed;
}

async function checkTurns(turns: readonly Turn[], tools: readonly AnyTool[], counts: WorldToolCheck) {
  return Promise.all(
    turns.map(async (turn) => {
      const action = turn.action;
      if (action.type !== "tool-call" || !turn.toolResult) return turn;
      const tool = tools.find((candidate) => candidate.name === action.tool);
      if (!tool) return turn;
      counts.checked++;
      const own = await callTool(tool, action.arguments);
      if (observedText(turn.toolResult.content) !== own.content.trim()) return turn;
      counts.matched++;
      const { latencyMs: _, ...result } = own;
      // What the agent saw, with what the world's tool knows of it (status, refs, value).
      return { ...turn, toolResult: { ...result, content: turn.toolResult.content } };
    }),
  );
}

/** How many of a trajectory's tool results were checked against the world's tools, and agreed. */
export interface WorldToolCheck {
  checked: number;
  matched: number;
}

/**
 * A gateway trajectory of a world task with its tool results as the in-process loop records them:
 * each call to `search` or `calc` is rerun on the same arguments in the task's world, and when the
 * result the agent observed is exactly that tool's output, the turn's result takes the tool's
 * status, `refs` (documents found) and `value` (calc), which the turn-level rewards (`evidence`,
 * `calc-correct`, and their noise-aware forms) judge. A result that differs (the agent ran other
 * tools, or changed the output) keeps the gateway's plain `ok`/`empty` and earns no evidence or calc
 * credit. Counts go to `info.worldTools`. Tasks without a world seed are returned unchanged.
 */
export async function withWorldToolResults(trajectory: Trajectory, task: Task): Promise<Trajectory> {
  if (task.worldSeed === undefined) return trajectory;
  const tools = worldTools(cachedWorld(task.worldSeed));
  const counts: WorldToolCheck = { checked: 0, matched: 0 };
  const turns = await checkTurns(trajectory.turns, tools, counts);
  const info = trajectory.info?.gateway as GatewayInfo | undefined;
  const gateway = info
    ? {
        ...info,
        segments: await Promise.all(
          info.segments.map(async (segment) => ({
            ...segment,
            turns: await checkTurns(segment.turns, tools, { checked: 0, matched: 0 }),
          })),
        ),
      }
    : undefined;
  return {
    ...trajectory,
    turns,
    info: { ...trajectory.info, ...(gateway ? { gateway } : {}), worldTools: counts },
  };
}
