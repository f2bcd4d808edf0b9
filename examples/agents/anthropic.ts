/**
 * An Anthropic SDK agent: `new Anthropic()` at module level, configured from the environment
 * (`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`), the model from `AGENTRL_MODEL`; a Messages loop with
 * the world's search and calc as tools (`tool_use` blocks answered with `tool_result` blocks), up to
 * 8 steps. agentrl's gateway serves `POST /v1/messages` and records the calls with exact token ids.
 *
 *   npx agentrl eval --agent examples/agents/anthropic.ts --policy models/base-strong --tasks 20 --n 4
 */
import Anthropic from "@anthropic-ai/sdk";
// Outside this repository: import { worldTools } from "agentrl";
import { worldTools } from "../../src/agents/public.ts";

const client = new Anthropic({ maxRetries: 0 });
const model = process.env.AGENTRL_MODEL ?? "claude-sonnet-4-5";

interface Task {
  id: string;
  question: string;
  worldSeed?: number;
}

export default async function agent(task: Task): Promise<string | null> {
  const world = worldTools(task);
  const tools: Anthropic.Tool[] = world.openai.map((spec) => ({
    name: spec.function.name,
    description: spec.function.description ?? spec.function.name,
    input_schema: spec.function.parameters as Anthropic.Tool.InputSchema,
  }));
  const messages: Anthropic.MessageParam[] = [{ role: "user", content: task.question }];
  for (let step = 0; step < 8; step++) {
    const message = await client.messages.create({ model, max_tokens: 256, messages, tools });
    const uses = message.content.filter(
      (block): block is Anthropic.ToolUseBlock => block.type === "tool_use",
    );
    if (uses.length === 0)
      return message.content
        .filter((block): block is Anthropic.TextBlock => block.type === "text")
        .map((block) => block.text)
        .join("");
    messages.push({ role: "assistant", content: message.content });
    const results: Anthropic.ToolResultBlockParam[] = [];
    for (const use of uses)
      results.push({
        type: "tool_result",
        tool_use_id: use.id,
        content: await world.call(use.name, use.input),
      });
    messages.push({ role: "user", content: results });
  }
  return null;
}
