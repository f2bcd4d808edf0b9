/**
 * An OpenAI Agents SDK agent written as its documentation shows: the SDK's global default client set
 * once at module level (`setDefaultOpenAIClient(new OpenAI())`, configured from the environment),
 * then `run(agent, question, { stream: true })` with two tools, the stream consumed to the end.
 * Under `--agent` each concurrent episode runs in its own slot, with its own copy of that global and
 * an environment pointing at its own gateway URL, so concurrent episodes never share a client.
 *
 *   npx agentrl eval --agent examples/agents/openai-agents-global.ts --policy models/base-strong --tasks 20 --n 4
 */
import { Agent, run, setDefaultOpenAIClient, setTracingDisabled, tool } from "@openai/agents";
import OpenAI from "openai";
import { z } from "zod";
// Outside this repository: import { worldTools } from "agentrl";
import { worldTools } from "../../src/agents/public.ts";

// @openai/agents 0.15 and later bring their own `openai` 7.x (this repository pins 0.14, which
// shares its `openai` 6.x: 7.x needs Node 22): the client works with either, only its type
// differs, hence the cast.
setDefaultOpenAIClient(
  new OpenAI({ maxRetries: 0 }) as unknown as Parameters<typeof setDefaultOpenAIClient>[0],
);
// Tracing would send spans to OpenAI.
setTracingDisabled(true);
const model = process.env.AGENTRL_MODEL ?? "gpt-4.1-mini";

interface Task {
  id: string;
  question: string;
  worldSeed?: number;
}

export default async function agent(task: Task): Promise<string | undefined> {
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
  const result = await run(solver, task.question, { stream: true, maxTurns: 8 });
  // Consuming the events is what a streaming UI does; the run ends when they do.
  for await (const _event of result) {
  }
  await result.completed;
  return result.finalOutput;
}
