/**
 * A chat completion turned into a `PolicyStep`. Untrusted: any field may be missing or mistyped,
 * and this never throws (a completion with no choice is an error step).
 *
 * Token ids are taken only from what the server says it sampled, never re-tokenised from the text
 * (re-tokenisation drifts), wherever its kind of server puts them (token-ids.ts: vLLM's per-choice
 * `token_ids` or `token_id:<id>` log-prob tokens, SGLang's `response_token_ids`, llama.cpp's `id`
 * and `agentrl serve`'s `token_id` on each log-prob entry). Without them `tokenIds` is `[]`. When both ids
 * and log-probs come back with different lengths they cannot be paired token by token, so the
 * log-probs are dropped (null) rather than misaligned.
 */
import type { ChatCompletion } from "openai/resources/chat/completions";
import { type Failure, infraFailure } from "../../types/failure.ts";
import type { ChatToolCall, PolicyStep } from "../../types/policy.ts";
import { readCompletionIds } from "./token-ids.ts";

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
  const tokenIds = readTokenIds(
    choice as unknown as Record<string, unknown>,
    completion as unknown as Record<string, unknown>,
  );
  if (logprobs && tokenIds.length > 0 && logprobs.length !== tokenIds.length) logprobs = null;
  return {
    text: content ?? refusal ?? "",
    tokenIds,
    logprobs,
    ...(toolCalls.length > 0 ? { toolCalls } : {}),
    finishReason: finishReasonOf(choice.finish_reason, toolCalls.length > 0),
  };
}

function readTokenIds(choice: Record<string, unknown>, completion: Record<string, unknown>): number[] {
  // Wherever a server puts them (token-ids.ts): vLLM's `token_ids` or `token_id:<n>` tokens, SGLang's
  // `response_token_ids`, llama.cpp's `id` and agentrl serve's `token_id` on each log-prob entry.
  return readCompletionIds(choice, completion) ?? [];
}

function finishReasonOf(reason: unknown, hasToolCalls: boolean): PolicyStep["finishReason"] {
  if (reason === "tool_calls" || reason === "function_call") return "tool-calls";
  if (reason === "length") return "length";
  return hasToolCalls ? "tool-calls" : "stop";
}
