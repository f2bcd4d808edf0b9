/**
 * The embedded world's tools for agents that run them as their own local functions:
 *
 *   const tools = agentWorldTools(task);          // task.worldSeed names the world
 *   await tools.call("search", { query: "zenda" }) // → the tool's text, as the episode loop shows it
 *   tools.openai                                   // OpenAI function-tool specs of search and calc
 */
import { cachedWorld } from "../env/task-set.ts";
import { toolSpecsToOpenAi } from "../store/openai-chat.ts";
import { callTool, toolSpec, worldTools } from "../tools/index.ts";
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
