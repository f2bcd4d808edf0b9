/**
 * Test-only: the conversation fixtures/qwen3-chat was trained on (scripts/hf-chat-fixture.py), as
 * a task and a `search` tool the episode loop runs: the model calls `search`, reads the result and
 * answers. For training tests on a real chat template and tool-call format.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import type { Task } from "../../types/task.ts";
import type { Tool } from "../../types/tool.ts";
import { FIXTURES } from "./testing-fixtures.ts";

export const CHAT_FOLDER = join(FIXTURES, "qwen3-chat");

interface Message {
  role: string;
  content?: string | null;
}

/**
 * The fixture's task (its system prompt and question; answer 1200) and its tool as a user writes
 * one (its zod schema's JSON schema is the fixture's `parameters`); `onCall` sees each call's arguments.
 */
export function chatFixtureTask(onCall?: (args: { query: string }) => void): {
  task: Task;
  search: Tool<{ query: string }>;
} {
  const reference = JSON.parse(readFileSync(join(CHAT_FOLDER, "reference.json"), "utf8"));
  const [first, second] = reference.turns as { messages: Message[] }[];
  const [system, question] = first.messages;
  const result = second.messages[3];
  const spec = reference.tools[0].function;
  return {
    task: {
      id: "zenda",
      question: String(question.content),
      systemPrompt: String(system.content),
      answer: "1200",
      family: "chat",
    },
    search: {
      name: spec.name,
      description: spec.description ?? "",
      schema: z.object({ query: z.string().describe("What to look up.") }),
      textArgument: "query",
      call: async (args) => {
        onCall?.(args);
        return { status: "ok", content: String(result.content), injected: false };
      },
    },
  };
}
