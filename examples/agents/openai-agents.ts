/**
 * An OpenAI Agents SDK agent on its default Responses API: an `Agent` with two zod tools (the
 * world's search and calc, run as local functions), run for up to 8 turns. Tracing is off (it
 * would send spans to OpenAI). agentrl's gateway speaks the Responses API, so nothing here changes
 * to be measured.
 *
 *   npx agentrl eval --agent examples/agents/openai-agents.ts --policy models/base-strong --tasks 20 --n 4
 */
import { Agent, OpenAIProvider, Runner, tool } from "@openai/agents";
import { z } from "zod";
// Outside this repository: import { worldTools } from "agentrl";
import { worldTools } from "../../src/agents/public.ts";

interface Task {
  id: string;
  question: string;
  worldSeed?: number;
}

export default async function agent(
  task: Task,
  { baseURL, apiKey, model, signal }: { baseURL: string; apiKey: string; model: string; signal: AbortSignal },
): Promise<string | undefined> {
  const world = worldTools(task);
  const solver = new Agent({
    name: "solver",
    model,
    tools: [
      tool({
        name: "search",
        description: "search the documents of the world",
        parameters: z.object({ query: z.string() }),
        execute: ({ query }) => world.call("search", { query }),
      }),
      tool({
        name: "calc",
        description: "evaluate an arithmetic expression",
        parameters: z.object({ expression: z.string() }),
        execute: ({ expression }) => world.call("calc", { expression }),
      }),
    ],
  });
  const runner = new Runner({
    modelProvider: new OpenAIProvider({ baseURL, apiKey }),
    tracingDisabled: true,
  });
  const result = await runner.run(solver, task.question, { maxTurns: 8, signal });
  return result.finalOutput;
}
