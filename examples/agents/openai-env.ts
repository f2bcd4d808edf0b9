/**
 * The most common way an agent is written: one `new OpenAI()` made at module level, configured
 * only from the environment (`OPENAI_BASE_URL`, `OPENAI_API_KEY`), the model from `AGENTRL_MODEL`.
 * It ignores the per-call base URL agentrl also hands it: under `--agent` each concurrent episode
 * runs in its own slot, whose environment points at a gateway URL of that slot alone, so these calls
 * are recorded as the episode's. A chat loop with the world's search and calc, up to 8 steps.
 *
 *   npx agentrl eval --agent examples/agents/openai-env.ts --policy models/base-strong --tasks 20 --n 4
 */
import OpenAI from "openai";
// Outside this repository: import { worldTools } from "agentrl";
import { worldTools } from "../../src/agents/public.ts";

const client = new OpenAI({ maxRetries: 0 });
const model = process.env.AGENTRL_MODEL ?? "gpt-4.1-mini";

interface Task {
  id: string;
  question: string;
  worldSeed?: number;
}

export default async function agent(task: Task): Promise<string | null> {
  const tools = worldTools(task);
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: task.question }];
  for (let step = 0; step < 8; step++) {
    const completion = await client.chat.completions.create({ model, messages, tools: tools.openai });
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
