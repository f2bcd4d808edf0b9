/**
 * Test fixture: an OpenAI Agents SDK agent written as a new user would, following the SDK's
 * documentation with the `baseURL` agentrl hands it: the global default client is set inside the
 * function, on every episode, and `run()` uses the SDK's default runner. The SDK's default provider
 * keeps the first client it was given for the life of the slot, so every later episode of the slot
 * calls the URL its first episode was handed.
 */
import { Agent, run, setDefaultOpenAIClient, setTracingDisabled, tool } from "@openai/agents";
import OpenAI from "openai";
import { z } from "zod";
import { worldTools } from "./public.ts";

setTracingDisabled(true);

interface Task {
  id: string;
  question: string;
  worldSeed?: number;
}

export default async function agent(
  task: Task,
  { baseURL, apiKey, model }: { baseURL: string; apiKey: string; model: string },
): Promise<string | undefined> {
  // This repository's `openai` (6.x) is older than the one @openai/agents brings: only the type differs.
  setDefaultOpenAIClient(
    new OpenAI({ baseURL, apiKey, maxRetries: 0 }) as unknown as Parameters<typeof setDefaultOpenAIClient>[0],
  );
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
  const result = await run(solver, task.question, { maxTurns: 8 });
  return result.finalOutput;
}
