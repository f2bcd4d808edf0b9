/**
 * A chat completion turned into a `PolicyStep`. Untrusted: any field may be missing or mistyped,
 * and this never throws (a completion with no choice is an error step).
 *
 * Token ids are taken only from what the server says it sampled, never re-tokenised from the text
 * (re-tokenisation drifts): vLLM's per-choice `token_ids` (`return_token_ids: true`), or log-prob
 * tokens written as `token_id:<id>` (`return_tokens_as_token_ids: true`), or `token_id` numbers on
 * each log-prob entry (what `agentrl serve` adds). Without them `tokenIds` is `[]`. When both ids
 * and log-probs come back with different lengths they cannot be paired token by token, so the
 * log-probs are dropped (null) rather than misaligned.
 */
import type { ChatCompletion } from "openai/resources/chat/completions";
import { type Failure, infraFailure } from "../../types/failure.ts";
import type { ChatToolCall, PolicyStep } from "../../types/policy.ts";

export function errorStep(message: string, failure?: Failure): PolicyStep {
  return {
    text: "",
    tokenIds: [],
    logprobs: null,
    finishReason: "error",
    error: message,
    ...(failure ? { failure } : {}),
  };
}

const TOKEN_ID_PREFIX = /^token_id:(\d+)$/;

export function stepFromCompletion(completion: ChatCompletion): PolicyStep {
  const choice = Array.isArray(completion?.choices) ? completion.choices[0] : undefined;
  if (!choice || typeof choice !== "object") {
    const message = "the server returned no choices";
    return errorStep(message, infraFailure("upstream-malformed", message));
  }
  const message = choice.message ?? ({} as Partial<ChatCompletion.Choice["message"]>);
  const content = typeof message.content === "string" ? message.content : null;
  const refusal = typeof message.refusal === "string" ? message.refusal : null;
  const toolCalls: ChatToolCall[] = [];
  for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
    if (call?.type !== "function" || typeof call.function !== "object" || call.function === null) continue;
    toolCalls.push({
      id: typeof call.id === "string" ? call.id : "",
      name: typeof call.function.name === "string" ? call.function.name : "",
      arguments: typeof call.function.arguments === "string" ? call.function.arguments : "",
    });
  }
  const entries = Array.isArray(choice.logprobs?.content) ? choice.logprobs.content : null;
  let logprobs = entries
    ? entries.map((entry) => (typeof entry?.logprob === "number" ? entry.logprob : Number.NaN))
    : null;
  if (logprobs?.some((value) => Number.isNaN(value))) logprobs = null;
  const tokenIds = readTokenIds(choice as unknown as Record<string, unknown>, entries);
  if (logprobs && tokenIds.length > 0 && logprobs.length !== tokenIds.length) logprobs = null;
  return {
    text: content ?? refusal ?? "",
    tokenIds,
    logprobs,
    ...(toolCalls.length > 0 ? { toolCalls } : {}),
    finishReason: finishReasonOf(choice.finish_reason, toolCalls.length > 0),
  };
}

function readTokenIds(choice: Record<string, unknown>, entries: readonly unknown[] | null): number[] {
  const direct = choice["token_ids"];
  if (Array.isArray(direct) && direct.every(isTokenId)) return [...direct];
  if (!entries || entries.length === 0) return [];
  const ids: number[] = [];
  for (const entry of entries as { token?: unknown; token_id?: unknown }[]) {
    const match = typeof entry?.token === "string" ? TOKEN_ID_PREFIX.exec(entry.token) : null;
    if (match) ids.push(Number(match[1]));
    else if (isTokenId(entry?.token_id)) ids.push(entry.token_id);
    else return [];
  }
  return ids;
}

function isTokenId(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

function finishReasonOf(reason: unknown, hasToolCalls: boolean): PolicyStep["finishReason"] {
  if (reason === "tool_calls" || reason === "function_call") return "tool-calls";
  if (reason === "length") return "length";
  return hasToolCalls ? "tool-calls" : "stop";
}
