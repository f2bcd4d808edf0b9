/**
 * The Responses API (`POST /v1/responses`) translated to chat completions for the upstream, and
 * the completion translated back, so agents on OpenAI's Responses API (the OpenAI Agents SDK's
 * default, the AI SDK's OpenAI provider) are recorded without changing their API setting.
 *
 *   instructions                      → a system message first
 *   input: "text"                     → a user message
 *   {role, content}                   → that message (input_text/output_text parts joined)
 *   {type: "function_call"}           → a tool call of an assistant message (consecutive ones merged)
 *   {type: "function_call_output"}    → a tool message
 *   previous_response_id              → that response's conversation (its input and output, not its
 *                                       instructions, as OpenAI does) before the new input
 *   tools [{type: "function", name…}] → chat function tools (other tool types are refused: 400)
 *   max_output_tokens                 → max_tokens
 *
 * The answer: one `message` item for the text and one `function_call` item per tool call. With
 * `stream: true` the whole response is sent as the Responses event sequence (created, output items,
 * text and argument deltas, completed) once the upstream has answered.
 */
import { randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";
import { RequestError } from "../serve/request.ts";

type ChatMessage = Record<string, unknown>;

/** Conversations of past responses, for `previous_response_id` (most recent `capacity` kept). */
export class ConversationStore {
  private readonly conversations = new Map<string, ChatMessage[]>();
  private readonly capacity: number;
  constructor(capacity = 4096) {
    this.capacity = capacity;
  }
  remember(id: string, messages: ChatMessage[]): void {
    this.conversations.set(id, messages);
    if (this.conversations.size > this.capacity)
      this.conversations.delete(this.conversations.keys().next().value!);
  }
  get(id: string): ChatMessage[] | undefined {
    return this.conversations.get(id);
  }
}

export interface TranslatedRequest {
  chat: Record<string, unknown>;
  /** The conversation without the instructions (what `previous_response_id` continues). */
  messages: ChatMessage[];
}

function partsText(content: unknown, where: string): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content))
    throw new RequestError(400, `${where}: expected a string or content parts`, where);
  return content
    .map((part, i) => {
      const record = part as Record<string, unknown>;
      if (typeof record?.text === "string") return record.text;
      if (typeof record?.refusal === "string") return record.refusal;
      throw new RequestError(400, `${where}[${i}]: only text parts are supported`, `${where}[${i}]`);
    })
    .join("");
}

export function responsesToChat(body: Record<string, unknown>, store: ConversationStore): TranslatedRequest {
  const messages: ChatMessage[] = [];
  if (body.previous_response_id != null) {
    const previous =
      typeof body.previous_response_id === "string" ? store.get(body.previous_response_id) : undefined;
    if (!previous)
      throw new RequestError(
        404,
        `previous response "${String(body.previous_response_id)}" not found`,
        "previous_response_id",
      );
    messages.push(...previous);
  }
  const input = body.input;
  if (typeof input === "string") messages.push({ role: "user", content: input });
  else if (Array.isArray(input)) {
    let previousWasAssistant = false;
    input.forEach((raw, i) => {
      const item = raw as Record<string, unknown>;
      const where = `input[${i}]`;
      if (typeof item !== "object" || item === null)
        throw new RequestError(400, `${where}: expected an object`, where);
      const type = item.type ?? "message";
      if (type === "message") {
        const role = item.role;
        if (role !== "user" && role !== "system" && role !== "developer" && role !== "assistant")
          throw new RequestError(400, `${where}.role: unknown role ${String(role)}`, `${where}.role`);
        messages.push({ role, content: partsText(item.content, `${where}.content`) });
      } else if (type === "function_call") {
        if (typeof item.call_id !== "string" || typeof item.name !== "string")
          throw new RequestError(400, `${where}: a function_call needs call_id and name`, where);
        const call = {
          id: item.call_id,
          type: "function",
          function: {
            name: item.name,
            arguments: typeof item.arguments === "string" ? item.arguments : "{}",
          },
        };
        const last = messages[messages.length - 1];
        // One assistant turn: its text item and function calls arrive as consecutive input items.
        if (last?.role === "assistant" && previousWasAssistant) {
          last.tool_calls = [...((last.tool_calls as unknown[]) ?? []), call];
        } else messages.push({ role: "assistant", content: null, tool_calls: [call] });
      } else if (type === "function_call_output") {
        if (typeof item.call_id !== "string")
          throw new RequestError(400, `${where}: a function_call_output needs call_id`, where);
        messages.push({
          role: "tool",
          tool_call_id: item.call_id,
          content: partsText(item.output, `${where}.output`),
        });
      } else if (type === "reasoning" || type === "item_reference") {
        // Nothing the upstream's chat template can carry.
        return;
      } else
        throw new RequestError(400, `${where}.type: "${String(type)}" is not supported`, `${where}.type`);
      previousWasAssistant = type === "function_call" || (type === "message" && item.role === "assistant");
    });
  } else if (input !== undefined)
    throw new RequestError(400, "input: expected a string or a list of items", "input");

  const tools = Array.isArray(body.tools)
    ? body.tools.map((raw, i) => {
        const tool = raw as Record<string, unknown>;
        if (tool?.type !== "function" || typeof tool.name !== "string")
          throw new RequestError(400, `tools[${i}]: only function tools are supported`, `tools[${i}]`);
        return {
          type: "function",
          function: {
            name: tool.name,
            ...(typeof tool.description === "string" ? { description: tool.description } : {}),
            ...(tool.parameters ? { parameters: tool.parameters } : {}),
          },
        };
      })
    : undefined;
  const choice = body.tool_choice as Record<string, unknown> | string | undefined;
  const toolChoice =
    typeof choice === "object" && choice !== null && choice.type === "function"
      ? { type: "function", function: { name: choice.name } }
      : choice;
  const chat: Record<string, unknown> = {
    model: body.model,
    messages: [
      ...(typeof body.instructions === "string" && body.instructions
        ? [{ role: "system", content: body.instructions }]
        : []),
      ...messages,
    ],
    ...(tools && tools.length > 0 ? { tools } : {}),
    ...(toolChoice !== undefined && tools && tools.length > 0 ? { tool_choice: toolChoice } : {}),
    ...(typeof body.temperature === "number" ? { temperature: body.temperature } : {}),
    ...(typeof body.top_p === "number" ? { top_p: body.top_p } : {}),
    ...(typeof body.max_output_tokens === "number" ? { max_tokens: body.max_output_tokens } : {}),
    ...(typeof body.parallel_tool_calls === "boolean" && tools?.length
      ? { parallel_tool_calls: body.parallel_tool_calls }
      : {}),
  };
  return { chat, messages };
}

interface ChoiceMessage {
  content?: string | null;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[] | null;
}

function firstChoice(completion: Record<string, unknown>): {
  message: ChoiceMessage;
  finish_reason?: string;
} {
  return (completion.choices as { message: ChoiceMessage; finish_reason?: string }[])[0];
}

/** The assistant message of a completion, as the next call's history holds it. */
export function assistantMessages(completion: Record<string, unknown>): ChatMessage[] {
  const { message } = firstChoice(completion);
  const calls = message.tool_calls ?? [];
  return [
    {
      role: "assistant",
      content: message.content ?? null,
      ...(calls.length > 0
        ? {
            tool_calls: calls.map((call) => ({
              id: call.id,
              type: "function",
              function: { name: call.function.name, arguments: call.function.arguments },
            })),
          }
        : {}),
    },
  ];
}

const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString("hex")}`;

export function chatToResponse(
  completion: Record<string, unknown>,
  body: Record<string, unknown>,
  _translated: TranslatedRequest,
): Record<string, unknown> & { id: string; output: Record<string, unknown>[] } {
  const { message, finish_reason } = firstChoice(completion);
  const output: Record<string, unknown>[] = [];
  const text = message.content ?? "";
  if (text) {
    output.push({
      type: "message",
      id: newId("msg"),
      status: "completed",
      role: "assistant",
      content: [{ type: "output_text", text, annotations: [], logprobs: [] }],
    });
  }
  for (const call of message.tool_calls ?? []) {
    output.push({
      type: "function_call",
      id: newId("fc"),
      call_id: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
      status: "completed",
    });
  }
  const usage = (completion.usage ?? {}) as { prompt_tokens?: number; completion_tokens?: number };
  const input = usage.prompt_tokens ?? 0;
  const generated = usage.completion_tokens ?? 0;
  const incomplete = finish_reason === "length";
  return {
    id: newId("resp"),
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status: incomplete ? "incomplete" : "completed",
    error: null,
    incomplete_details: incomplete ? { reason: "max_output_tokens" } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: typeof body.model === "string" ? body.model : completion.model,
    output,
    output_text: text,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: null, summary: null },
    store: true,
    temperature: body.temperature ?? null,
    text: { format: { type: "text" } },
    tool_choice: body.tool_choice ?? "auto",
    tools: body.tools ?? [],
    top_p: body.top_p ?? null,
    truncation: "disabled",
    usage: {
      input_tokens: input,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: generated,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: input + generated,
    },
    user: null,
    metadata: body.metadata ?? {},
  };
}

/** The Responses event stream of a finished response. */
export function sendResponseStream(
  res: ServerResponse,
  response: { output: Record<string, unknown>[] } & Record<string, unknown>,
) {
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  let sequence = 0;
  const send = (type: string, data: Record<string, unknown>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`);
  send("response.created", { response: { ...response, status: "in_progress", output: [] } });
  send("response.in_progress", { response: { ...response, status: "in_progress", output: [] } });
  response.output.forEach((item, outputIndex) => {
    const itemId = item.id;
    if (item.type === "message") {
      const [part] = item.content as { text: string }[];
      send("response.output_item.added", {
        output_index: outputIndex,
        item: { ...item, status: "in_progress", content: [] },
      });
      const empty = { type: "output_text", text: "", annotations: [] };
      send("response.content_part.added", {
        item_id: itemId,
        output_index: outputIndex,
        content_index: 0,
        part: empty,
      });
      send("response.output_text.delta", {
        item_id: itemId,
        output_index: outputIndex,
        content_index: 0,
        delta: part.text,
        logprobs: [],
      });
      send("response.output_text.done", {
        item_id: itemId,
        output_index: outputIndex,
        content_index: 0,
        text: part.text,
        logprobs: [],
      });
      send("response.content_part.done", {
        item_id: itemId,
        output_index: outputIndex,
        content_index: 0,
        part,
      });
    } else {
      send("response.output_item.added", {
        output_index: outputIndex,
        item: { ...item, status: "in_progress", arguments: "" },
      });
      send("response.function_call_arguments.delta", {
        item_id: itemId,
        output_index: outputIndex,
        delta: item.arguments,
      });
      send("response.function_call_arguments.done", {
        item_id: itemId,
        output_index: outputIndex,
        arguments: item.arguments,
      });
    }
    send("response.output_item.done", { output_index: outputIndex, item });
  });
  send("response.completed", { response });
  res.end();
}
