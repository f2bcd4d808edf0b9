/**
 * The chat view of an episode context: the messages and tools an OpenAI-compatible request carries.
 *
 *   system   the task's system prompt, else DEFAULT_SYSTEM_PROMPT
 *   user     the question
 *   per finished turn:
 *     assistant  its text (or null) and its tool calls, with the call ids the model gave
 *     tool       one per tool call: the observation for the first (the only one the loop runs),
 *                NOT_EXECUTED for the others (the API requires an answer to every call id)
 *   or, for a turn without tool calls (a blank answer the loop rejected):
 *     assistant  its text
 *     user       the observation (the error message the loop gave back)
 *
 * Tool calls come from the raw calls the policy recorded for the turn when it has them (exact
 * argument text, calls the loop rejected included), else they are rebuilt from the parsed action
 * (`callId` or `call_<turn index>`, arguments re-serialised as JSON).
 */
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import type { ChatToolCall, PolicyContext, ToolSpec } from "../../types/policy.ts";

export const DEFAULT_SYSTEM_PROMPT =
  "Answer the user's question. Use the tools to look facts up and to compute; do not guess facts you " +
  "have not looked up. Call one tool at a time. When you know the answer, reply with the final answer " +
  "only, plainly, without calling a tool.";

/** Tool message for the calls of a turn after its first, which the episode loop does not run. */
export const NOT_EXECUTED = "not executed: only the first tool call of a turn is run";

/** What the policy itself produced in one turn (kept per episode, so history is replayed exactly). */
export interface RecordedTurn {
  text: string;
  toolCalls: readonly ChatToolCall[];
}

export function chatTools(tools: readonly ToolSpec[]): ChatCompletionTool[] {
  return tools.map((tool) => ({
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
}

export function buildChatMessages(
  context: PolicyContext,
  options: { systemPrompt?: string; recorded?: readonly (RecordedTurn | undefined)[] } = {},
): ChatCompletionMessageParam[] {
  const messages: ChatCompletionMessageParam[] = [
    { role: "system", content: context.task.systemPrompt ?? options.systemPrompt ?? DEFAULT_SYSTEM_PROMPT },
    { role: "user", content: context.task.question },
  ];
  for (const turn of context.turns) {
    const recorded = options.recorded?.[turn.index];
    const calls = turnToolCalls(turn, recorded?.text === turn.text ? recorded : undefined);
    const observation = turn.observation?.text ?? "";
    if (calls.length === 0) {
      messages.push({ role: "assistant", content: turn.text });
      if (turn.observation) messages.push({ role: "user", content: observation });
      continue;
    }
    messages.push({
      role: "assistant",
      content: turn.text === "" ? null : turn.text,
      tool_calls: calls.map((call) => ({
        id: call.id,
        type: "function",
        function: { name: call.name, arguments: call.arguments },
      })),
    });
    calls.forEach((call, j) => {
      messages.push({ role: "tool", tool_call_id: call.id, content: j === 0 ? observation : NOT_EXECUTED });
    });
  }
  return messages;
}

function turnToolCalls(
  turn: PolicyContext["turns"][number],
  recorded: RecordedTurn | undefined,
): ChatToolCall[] {
  if (recorded && recorded.toolCalls.length > 0) {
    return recorded.toolCalls.map((call, j) => ({
      ...call,
      id: call.id || (j === 0 ? `call_${turn.index}` : `call_${turn.index}_${j}`),
    }));
  }
  const action = turn.action;
  if (action.type !== "tool-call") return [];
  return [
    {
      id: action.callId || `call_${turn.index}`,
      name: action.tool,
      arguments: JSON.stringify(action.arguments),
    },
  ];
}
