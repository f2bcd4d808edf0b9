/**
 * The chat-completions request `agentrl serve` accepts (a subset of OpenAI's, plus vLLM's token-id
 * extensions), validated with zod. A bad request is answered 400 with an OpenAI-style error whose
 * `param` names the first bad field (`messages[2].tool_call_id`).
 *
 * Accepted and honoured: model, messages (system, developer, user, assistant with tool_calls,
 * tool), tools (function tools), tool_choice (`auto`, `none`), n, temperature, top_p, max_tokens
 * (or max_completion_tokens), stop, seed, logprobs, top_logprobs, stream, stream_options, metadata,
 * and vLLM's return_token_ids / return_tokens_as_token_ids. Fields outside this list (penalties,
 * response_format, user…) are ignored, as vLLM does; `tool_choice: "required"` or a named function
 * cannot be enforced on a sampling policy and is rejected. `metadata.task_id` (or the
 * `x-agentrl-task-id` header) names the task for policies that need it (server.ts `resolveTask`).
 * `top_logprobs` is accepted but its lists come back empty (policies return no alternatives).
 */
import { z } from "zod";
import { ANSWER_TAG } from "../env/protocol.ts";
import { RequestError } from "../http/request-error.ts";

const textPart = z.object({ type: z.literal("text"), text: z.string() });
/** Message content: a string or text parts (images and audio are not supported). */
const content = z.union([z.string(), z.array(textPart)]);

const toolCall = z.object({
  id: z.string().min(1),
  type: z.literal("function"),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
});

const message = z.discriminatedUnion("role", [
  z.object({ role: z.literal("system"), content, name: z.string().optional() }),
  z.object({ role: z.literal("developer"), content, name: z.string().optional() }),
  z.object({ role: z.literal("user"), content, name: z.string().optional() }),
  z.object({
    role: z.literal("assistant"),
    content: content.nullish(),
    tool_calls: z.array(toolCall).nullish(),
    refusal: z.string().nullish(),
    name: z.string().optional(),
  }),
  z.object({ role: z.literal("tool"), content, tool_call_id: z.string().min(1) }),
]);

/** Tool names must also be tags of the text protocol (`<name> … </name>`). */
export const TOOL_NAME = /^[A-Za-z_][\w.-]{0,63}$/;

const tool = z.object({
  type: z.literal("function"),
  function: z.object({
    name: z.string().regex(TOOL_NAME, "must match [A-Za-z_][A-Za-z0-9_.-]{0,63}"),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullish(),
  }),
});

const toolChoice = z.union([
  z.enum(["auto", "none"]),
  z.object({ type: z.literal("function"), function: z.object({ name: z.string() }) }),
  z.literal("required"),
]);

export const chatRequestSchema = z.object({
  model: z.string().min(1),
  messages: z.array(message).min(1).max(2000),
  tools: z.array(tool).max(128).nullish(),
  tool_choice: toolChoice.nullish(),
  n: z.number().int().min(1).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  max_tokens: z.number().int().min(1).nullish(),
  max_completion_tokens: z.number().int().min(1).nullish(),
  stop: z.union([z.string().min(1), z.array(z.string().min(1)).max(4)]).nullish(),
  seed: z.number().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  return_token_ids: z.boolean().nullish(),
  return_tokens_as_token_ids: z.boolean().nullish(),
});

export type ChatRequest = z.infer<typeof chatRequestSchema>;
export type ChatMessage = ChatRequest["messages"][number];
export type ChatTool = NonNullable<ChatRequest["tools"]>[number];

export { RequestError };

/** `["messages", 2, "tool_call_id"]` → `messages[2].tool_call_id`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else out += out ? `.${String(key)}` : String(key);
  }
  return out;
}

/** Tags the text protocol already uses: a tool of that name could not be told apart from them. */
const RESERVED_TAGS = new Set([ANSWER_TAG, "q", "obs"]);

export interface RequestLimits {
  /** Largest `n`. */
  maxN: number;
  /** Largest `max_tokens`. */
  maxTokens: number;
}

/** Parses and checks a request body; throws a 400 `RequestError` naming the first bad field. */
export function parseChatRequest(body: unknown, limits: RequestLimits): ChatRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new RequestError(400, "the request body must be a JSON object");
  }
  const parsed = chatRequestSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const param = formatPath(issue.path);
    throw new RequestError(400, `${param || "body"}: ${issue.message}`, param || null);
  }
  const request = parsed.data;
  if ((request.n ?? 1) > limits.maxN) {
    throw new RequestError(400, `n: at most ${limits.maxN} samples per request, got ${request.n}`, "n");
  }
  for (const field of ["max_tokens", "max_completion_tokens"] as const) {
    const value = request[field];
    if (value != null && value > limits.maxTokens) {
      throw new RequestError(400, `${field}: at most ${limits.maxTokens}, got ${value}`, field);
    }
  }
  if (request.tool_choice === "required" || typeof request.tool_choice === "object") {
    throw new RequestError(
      400,
      'tool_choice: only "auto" and "none" are supported (a sampling policy cannot be forced to call a tool)',
      "tool_choice",
    );
  }
  if (request.top_logprobs && !request.logprobs) {
    throw new RequestError(400, "top_logprobs: requires logprobs to be true", "top_logprobs");
  }
  const names = new Set<string>();
  request.tools?.forEach((entry, i) => {
    if (RESERVED_TAGS.has(entry.function.name)) {
      throw new RequestError(
        400,
        `tools[${i}].function.name: "${entry.function.name}" is a tag of the text protocol (reserved: ${[...RESERVED_TAGS].join(", ")})`,
        `tools[${i}].function.name`,
      );
    }
    if (names.has(entry.function.name)) {
      throw new RequestError(
        400,
        `tools[${i}].function.name: duplicate tool "${entry.function.name}"`,
        `tools[${i}].function.name`,
      );
    }
    names.add(entry.function.name);
  });
  return request;
}

/** Text of a message content (text parts joined by newlines). */
export function contentText(value: string | readonly { text: string }[] | null | undefined): string {
  if (value == null) return "";
  return typeof value === "string" ? value : value.map((part) => part.text).join("\n");
}
