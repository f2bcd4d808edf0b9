/**
 * A plain `openai` agent: a chat loop with two function tools (the world's search and calc, run as
 * local functions), up to 8 steps. Nothing in it knows about agentrl's gateway: it is given a base
 * URL, a key and a model, as any OpenAI agent is.
 *
 *   npx agentrl eval --agent examples/agents/openai.ts --policy models/base-strong --tasks 20 --n 4
 */
import OpenAI from "openai";
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
): Promise<string | null> {
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
  const tools = worldTools(task);
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: task.question }];
  for (let step = 0; step < 8; step++) {
    const completion = await client.chat.completions.create(
      { model, messages, tools: tools.openai },
      { signal },
    );
    const message = completion.choices[0]?.message;
    if (!message) return null;
    const calls = message.tool_calls ?? [];
    if (calls.length === 0) return message.content;
    messages.push({ role: "assistant", content: message.content, tool_calls: calls });
    for (const call of calls) {
      if (call.type !== "function") continue;
      let args: unknown;
      try {
        args = JSON.parse(call.function.arguments);
      } catch {
        args = {};
      }
      messages.push({
        role: "tool",
        tool_call_id: call.id,
        content: await tools.call(call.function.name, args),
      });
    }
  }
  return null;
}
