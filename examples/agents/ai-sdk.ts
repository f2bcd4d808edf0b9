/**
 * An AI SDK agent: `generateText` with two zod tools (the world's search and calc, run as local
 * functions) and up to 8 steps, on `@ai-sdk/openai-compatible`. Unchanged from how one would write
 * it for any OpenAI-compatible server; agentrl only hands it a base URL, a key and a model.
 *
 *   npx agentrl eval --agent examples/agents/ai-sdk.ts --policy models/base-strong --tasks 20 --n 4
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, stepCountIs, tool } from "ai";
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
): Promise<string> {
  const world = worldTools(task);
  const provider = createOpenAICompatible({ name: "agentrl", baseURL, apiKey });
  const { text } = await generateText({
    model: provider(model),
    prompt: task.question,
    tools: {
      search: tool({
        description: "search the documents of the world",
        inputSchema: z.object({ query: z.string() }),
        execute: ({ query }) => world.call("search", { query }),
      }),
      calc: tool({
        description: "evaluate an arithmetic expression",
        inputSchema: z.object({ expression: z.string() }),
        execute: ({ expression }) => world.call("calc", { expression }),
      }),
    },
    stopWhen: stepCountIs(8),
    maxRetries: 0,
    abortSignal: signal,
  });
  return text;
}
