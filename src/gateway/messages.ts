/**
 * The Anthropic Messages API (`POST /v1/messages`) translated to chat completions for the upstream,
 * and the completion translated back, so agents built on `@anthropic-ai/sdk` (tool use with
 * `tool_use`/`tool_result` blocks) are recorded like any other: the upstream call, its exact token
 * ids and log-probs, are what the gateway keeps.
 *
 *   system: "text" or [{type: "text"}]     → a system message first (blocks joined by a newline)
 *   {role: "user", content}                → tool messages for its `tool_result` blocks (in order),
 *                                            then a user message of its text blocks, if any
 *   {role: "assistant", content}           → one assistant message: text blocks as content, each
 *                                            `tool_use` as a tool call (`input` → JSON arguments)
 *   tools [{name, description, input_schema}] → chat function tools (server tools are refused: 400)
 *   tool_choice auto | any | tool | none   → auto | required | that function | none
 *   stop_sequences, max_tokens, temperature, top_p, top_k → stop, max_tokens, …
 *
 * `thinking` and `redacted_thinking` blocks of the history are dropped (a chat template cannot
 * carry them), as are the `thinking`, `metadata` and `service_tier` fields and a tool result's
 * `is_error` flag (a chat tool message has none); images, documents and server tools are refused
 * with a 400 naming the block.
 *
 * The answer: a text block for the content, a `tool_use` block per tool call, and `stop_reason`
 * from the finish reason (`tool_calls` → `tool_use`, `length` → `max_tokens`, a stop string vLLM
 * names in `stop_reason` → `stop_sequence`, otherwise `end_turn`). With `stream: true` the whole
 * message is sent as the Messages event sequence (message_start, ping, content_block_start/delta/
 * stop, message_delta, message_stop) once the upstream has answered, as `responses.ts` does.
 *
 * A tool call's arguments come back as the `input` object and return in the next request as that
 * object; the exact arguments string the model sampled is remembered per episode and tool-use id
 * and sent upstream again when the input is unchanged, so the next prompt re-renders the call as
 * it was sampled (a re-serialised `{"a": 1}` → `{"a":1}` would break the token prefix).
 *
 * Errors on these routes use Anthropic's shape, `{type: "error", error: {type, message}}`, and the
 * SDK's `x-api-key` header is accepted for the gateway token beside `Authorization: Bearer`.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { isDeepStrictEqual } from "node:util";
import { sendJson, sha256 } from "../http/json.ts";
import { RequestError } from "../http/request-error.ts";

type ChatMessage = Record<string, unknown>;

/** The sampled arguments string of recent tool calls, by episode and tool-use id (`capacity` kept). */
export class ToolArgumentStore {
  private readonly argumentsById = new Map<string, string>();
  private readonly capacity: number;
  constructor(capacity = 16384) {
    this.capacity = capacity;
  }
  remember(episodeId: string, toolUseId: string, sampled: string): void {
    this.argumentsById.set(`${episodeId}\u0000${toolUseId}`, sampled);
    if (this.argumentsById.size > this.capacity)
      this.argumentsById.delete(this.argumentsById.keys().next().value!);
  }
  /** The sampled string when it still parses to `input`, else `input` serialised. */
  argumentsOf(episodeId: string, toolUseId: string, input: unknown): string {
    const sampled = this.argumentsById.get(`${episodeId}\u0000${toolUseId}`);
    if (sampled !== undefined && isDeepStrictEqual(parseObject(sampled), input)) return sampled;
    return JSON.stringify(input);
  }
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const invalid = (where: string, message: string) => new RequestError(400, `${where}: ${message}`, where);

/** Text of a string or a list of text blocks (joined by a newline). */
function blocksText(content: unknown, where: string): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw invalid(where, "expected a string or a list of text blocks");
  return content
    .map((block, i) => {
      if (!isRecord(block) || block.type !== "text" || typeof block.text !== "string")
        throw invalid(
          `${where}[${i}]`,
          `only text blocks are supported here (got ${isRecord(block) ? String(block.type) : typeof block})`,
        );
      return block.text;
    })
    .join("\n");
}

function userMessages(content: unknown, where: string): ChatMessage[] {
  if (typeof content === "string") return [{ role: "user", content }];
  if (!Array.isArray(content)) throw invalid(where, "expected a string or a list of content blocks");
  const out: ChatMessage[] = [];
  const texts: string[] = [];
  content.forEach((block, i) => {
    const at = `${where}[${i}]`;
    if (!isRecord(block)) throw invalid(at, "expected a content block");
    if (block.type === "text") {
      if (typeof block.text !== "string") throw invalid(`${at}.text`, "expected a string");
      texts.push(block.text);
    } else if (block.type === "tool_result") {
      if (typeof block.tool_use_id !== "string" || !block.tool_use_id)
        throw invalid(`${at}.tool_use_id`, "expected the id of the tool_use it answers");
      const text = block.content === undefined ? "" : blocksText(block.content, `${at}.content`);
      out.push({ role: "tool", tool_call_id: block.tool_use_id, content: text });
    } else
      throw invalid(
        `${at}.type`,
        `"${String(block.type)}" is not supported in a user message (text, tool_result)`,
      );
  });
  if (texts.length > 0) out.push({ role: "user", content: texts.join("\n") });
  return out;
}

function assistantMessage(
  content: unknown,
  where: string,
  episodeId: string,
  store: ToolArgumentStore,
): ChatMessage {
  if (typeof content === "string") return { role: "assistant", content };
  if (!Array.isArray(content)) throw invalid(where, "expected a string or a list of content blocks");
  const texts: string[] = [];
  const calls: Record<string, unknown>[] = [];
  content.forEach((block, i) => {
    const at = `${where}[${i}]`;
    if (!isRecord(block)) throw invalid(at, "expected a content block");
    if (block.type === "text") {
      if (typeof block.text !== "string") throw invalid(`${at}.text`, "expected a string");
      texts.push(block.text);
    } else if (block.type === "tool_use") {
      if (typeof block.id !== "string" || !block.id) throw invalid(`${at}.id`, "expected a tool-use id");
      if (typeof block.name !== "string" || !block.name) throw invalid(`${at}.name`, "expected a tool name");
      if (!isRecord(block.input)) throw invalid(`${at}.input`, "expected an object");
      calls.push({
        id: block.id,
        type: "function",
        function: { name: block.name, arguments: store.argumentsOf(episodeId, block.id, block.input) },
      });
    } else if (block.type === "thinking" || block.type === "redacted_thinking") {
      // Nothing the upstream's chat template can carry.
    } else
      throw invalid(
        `${at}.type`,
        `"${String(block.type)}" is not supported in an assistant message (text, tool_use, thinking)`,
      );
  });
  return {
    role: "assistant",
    content: texts.length > 0 ? texts.join("") : null,
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
  };
}

function chatTools(tools: unknown): Record<string, unknown>[] | undefined {
  if (tools === undefined) return undefined;
  if (!Array.isArray(tools)) throw invalid("tools", "expected a list of tools");
  return tools.map((tool, i) => {
    const at = `tools[${i}]`;
    if (!isRecord(tool)) throw invalid(at, "expected a tool");
    if (tool.type !== undefined && tool.type !== null && tool.type !== "custom")
      throw invalid(
        `${at}.type`,
        `"${String(tool.type)}": only client tools ({name, input_schema}) are supported`,
      );
    if (typeof tool.name !== "string" || !tool.name) throw invalid(`${at}.name`, "expected a tool name");
    if (!isRecord(tool.input_schema)) throw invalid(`${at}.input_schema`, "expected a JSON schema object");
    return {
      type: "function",
      function: {
        name: tool.name,
        ...(typeof tool.description === "string" ? { description: tool.description } : {}),
        parameters: tool.input_schema,
      },
    };
  });
}

function chatToolChoice(choice: unknown): { tool_choice?: unknown; parallel_tool_calls?: boolean } {
  if (choice === undefined || choice === null) return {};
  if (!isRecord(choice)) throw invalid("tool_choice", "expected {type: auto | any | tool | none}");
  const parallel = choice.disable_parallel_tool_use === true ? { parallel_tool_calls: false } : {};
  switch (choice.type) {
    case "auto":
      return { tool_choice: "auto", ...parallel };
    case "any":
      return { tool_choice: "required", ...parallel };
    case "none":
      return { tool_choice: "none" };
    case "tool":
      if (typeof choice.name !== "string" || !choice.name)
        throw invalid("tool_choice.name", "expected the name of the tool to use");
      return { tool_choice: { type: "function", function: { name: choice.name } }, ...parallel };
    default:
      throw invalid("tool_choice.type", `"${String(choice.type)}": expected auto, any, tool or none`);
  }
}

const optionalNumber = (body: Record<string, unknown>, field: string): number | undefined => {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value)) throw invalid(field, "expected a number");
  return value;
};

/** The chat-completions request of a Messages API request (validated: a bad field is a 400 naming it). */
export function messagesToChat(
  body: unknown,
  episodeId: string,
  store: ToolArgumentStore,
): Record<string, unknown> {
  if (!isRecord(body)) throw new RequestError(400, "the request body must be a JSON object");
  const maxTokens = body.max_tokens;
  if (typeof maxTokens !== "number" || !Number.isInteger(maxTokens) || maxTokens < 1)
    throw invalid("max_tokens", "expected a positive integer (the API requires it)");
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    throw invalid("messages", "expected a non-empty list of messages");
  const messages: ChatMessage[] = [];
  if (body.system !== undefined && body.system !== null) {
    const system = blocksText(body.system, "system");
    if (system) messages.push({ role: "system", content: system });
  }
  body.messages.forEach((message, i) => {
    const at = `messages[${i}]`;
    if (!isRecord(message)) throw invalid(at, "expected {role, content}");
    if (message.role === "user") messages.push(...userMessages(message.content, `${at}.content`));
    else if (message.role === "assistant")
      messages.push(assistantMessage(message.content, `${at}.content`, episodeId, store));
    else throw invalid(`${at}.role`, `"${String(message.role)}": expected user or assistant`);
  });
  const tools = chatTools(body.tools);
  const choice = tools && tools.length > 0 ? chatToolChoice(body.tool_choice) : {};
  const stop = body.stop_sequences;
  if (stop !== undefined && (!Array.isArray(stop) || stop.some((item) => typeof item !== "string")))
    throw invalid("stop_sequences", "expected a list of strings");
  const temperature = optionalNumber(body, "temperature");
  const topP = optionalNumber(body, "top_p");
  const topK = optionalNumber(body, "top_k");
  return {
    model: body.model,
    messages,
    max_tokens: maxTokens,
    ...(tools && tools.length > 0 ? { tools } : {}),
    ...choice,
    ...(Array.isArray(stop) && stop.length > 0 ? { stop } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(topP !== undefined ? { top_p: topP } : {}),
    ...(topK !== undefined ? { top_k: topK } : {}),
  };
}

interface UpstreamChoice {
  message: {
    content?: string | null;
    tool_calls?: { id: string; function: { name: string; arguments: string } }[] | null;
  };
  finish_reason?: string | null;
  /** vLLM: the stop string (or token id) that ended the choice. */
  stop_reason?: unknown;
}

export type AnthropicContentBlock =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

export interface AnthropicMessage extends Record<string, unknown> {
  id: string;
  content: AnthropicContentBlock[];
  stop_reason: string;
  stop_sequence: string | null;
  usage: { input_tokens: number; output_tokens: number } & Record<string, unknown>;
}

function stopReason(choice: UpstreamChoice, hasToolUse: boolean, stopSequences: unknown) {
  if (choice.finish_reason === "length") return { stop_reason: "max_tokens", stop_sequence: null };
  if (hasToolUse || choice.finish_reason === "tool_calls")
    return { stop_reason: "tool_use", stop_sequence: null };
  if (choice.finish_reason === "content_filter") return { stop_reason: "refusal", stop_sequence: null };
  const matched = choice.stop_reason;
  if (typeof matched === "string" && Array.isArray(stopSequences) && stopSequences.includes(matched))
    return { stop_reason: "stop_sequence", stop_sequence: matched };
  return { stop_reason: "end_turn", stop_sequence: null };
}

const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString("hex")}`;

/**
 * The Messages API answer of a completion (its first choice). The arguments of each tool call are
 * remembered for the next request; arguments that are not a JSON object become `input: {}` (the
 * exact sampled text is still what the trajectory records).
 */
export function chatToMessage(
  completion: Record<string, unknown>,
  body: Record<string, unknown>,
  episodeId: string,
  store: ToolArgumentStore,
): AnthropicMessage {
  const choice = (completion.choices as UpstreamChoice[])[0];
  const content: AnthropicContentBlock[] = [];
  const text = choice.message.content ?? "";
  if (text) content.push({ type: "text", text });
  for (const call of choice.message.tool_calls ?? []) {
    store.remember(episodeId, call.id, call.function.arguments);
    content.push({
      type: "tool_use",
      id: call.id,
      name: call.function.name,
      input: parseObject(call.function.arguments) ?? {},
    });
  }
  const usage = (completion.usage ?? {}) as { prompt_tokens?: number; completion_tokens?: number };
  return {
    id: newId("msg"),
    type: "message",
    role: "assistant",
    model: typeof body.model === "string" ? body.model : completion.model,
    content,
    ...stopReason(
      choice,
      content.some((block) => block.type === "tool_use"),
      body.stop_sequences,
    ),
    usage: {
      input_tokens: usage.prompt_tokens ?? 0,
      output_tokens: usage.completion_tokens ?? 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  };
}

/** The Messages event stream of a finished message, in the order the SDK's MessageStream expects. */
export function sendMessageStream(res: ServerResponse, message: AnthropicMessage): void {
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  const send = (type: string, data: Record<string, unknown>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  send("message_start", {
    message: {
      ...message,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...message.usage, output_tokens: 0 },
    },
  });
  send("ping", {});
  message.content.forEach((block, index) => {
    if (block.type === "text") {
      send("content_block_start", { index, content_block: { type: "text", text: "" } });
      send("content_block_delta", { index, delta: { type: "text_delta", text: block.text } });
    } else {
      send("content_block_start", { index, content_block: { ...block, input: {} } });
      send("content_block_delta", {
        index,
        delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) },
      });
    }
    send("content_block_stop", { index });
  });
  send("message_delta", {
    delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence },
    usage: { output_tokens: message.usage.output_tokens },
  });
  send("message_stop", {});
  res.end();
}

/** True for the Messages API's paths (`…/v1/messages`, `…/v1/messages/count_tokens`). */
export function isMessagesPath(url: string | undefined): boolean {
  const path = new URL(url ?? "/", "http://localhost").pathname;
  return /\/v1\/messages(\/|$)/.test(path);
}

/** Anthropic's error type for a status. */
export function anthropicErrorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 413) return "request_too_large";
  if (status === 429) return "rate_limit_error";
  if (status === 529) return "overloaded_error";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

/**
 * `handle` with Anthropic-shaped errors on the Messages API's paths; other paths' errors are left to
 * the server's own (OpenAI-shaped) handler.
 */
export function withAnthropicErrors(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  log: (line: string) => void,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    try {
      await handle(req, res);
    } catch (error) {
      if (!isMessagesPath(req.url)) throw error;
      const status = error instanceof RequestError ? error.status : 500;
      const message =
        error instanceof RequestError
          ? error.message
          : `internal error: ${error instanceof Error ? error.message : String(error)}`;
      if (status >= 500) log(`agentrl gateway: ${message}`);
      if (res.headersSent) {
        res.end();
        return;
      }
      if (status === 413) res.setHeader("connection", "close");
      sendJson(res, status, { type: "error", error: { type: anthropicErrorType(status), message } });
    }
  };
}

/** Constant-time check of the Anthropic SDK's `x-api-key` header against the gateway token. */
export function apiKeyAuthorized(header: string | string[] | undefined, tokenDigest: Buffer): boolean {
  return (
    typeof header === "string" && header.length > 0 && timingSafeEqual(sha256(header.trim()), tokenDigest)
  );
}
