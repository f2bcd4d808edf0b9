/**
 * A text-protocol policy step turned into an OpenAI chat-completion choice:
 *
 *   ` <search> zenda </search>` → tool_calls [{ function: { name: "search", arguments: '{"query":"zenda"}' } }],
 *                                 finish_reason "tool_calls" (text before the tag, if any, as content)
 *   ` <answer> 4213 </answer>`  → content "4213", finish_reason "stop"
 *   anything else (format error) → the text as plain content, finish_reason "stop" ("length" when
 *                                 the token budget cut the turn)
 *
 * `stop` sequences cut the text before their first occurrence (OpenAI semantics), and the token
 * ids and log-probs are cut to the tokens decoded before it; the cut text is then parsed as above.
 * Log-probs: the sampled token's log-prob per generated token (tags included, whatever the turn
 * became); `top_logprobs` lists are always empty (the Policy interface returns no alternatives).
 * Token ids travel in vLLM's extension fields: `token_ids` on the choice and `token_id` on each
 * log-prob entry, or the token text written `token_id:<id>` under `return_tokens_as_token_ids`.
 */
import { parseTextAction } from "../env/parse-action.ts";
import type { PolicyStep, Tokenizer, ToolSpec } from "../types/policy.ts";

export interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
  top_logprobs: { token: string; logprob: number; bytes: number[] | null }[];
  /** Extension: the sampled token id. */
  token_id?: number;
}

export interface ChatToolCallOut {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface ChatChoice {
  index: number;
  message: { role: "assistant"; content: string | null; refusal: null; tool_calls?: ChatToolCallOut[] };
  logprobs: { content: TokenLogprob[]; refusal: null } | null;
  finish_reason: "stop" | "length" | "tool_calls";
  /** Extension (vLLM `return_token_ids`): the sampled token ids. */
  token_ids?: number[];
}

export interface ChoiceOptions {
  index: number;
  tools: readonly ToolSpec[];
  stop: readonly string[];
  tokenizer?: Tokenizer;
  logprobs: boolean;
  /** Include `token_ids` on the choice. */
  returnTokenIds: boolean;
  /** Write log-prob tokens as `token_id:<id>` (vLLM `return_tokens_as_token_ids`). */
  tokensAsIds: boolean;
  /** A fresh tool call id. */
  callId: () => string;
}

/** The step cut before its first stop sequence; `stopped` tells whether one occurred. */
export function truncateAtStop(
  step: PolicyStep,
  stops: readonly string[],
  tokenizer: Tokenizer | undefined,
): PolicyStep & { stopped: boolean } {
  const cut = Math.min(...stops.map((stop) => step.text.indexOf(stop)).filter((index) => index >= 0));
  if (!Number.isFinite(cut)) return { ...step, stopped: false };
  let kept = 0;
  if (tokenizer && step.tokenIds.length > 0) {
    // The first token whose decoded prefix holds a stop sequence completes it: keep the tokens before.
    const hasStop = (text: string) => stops.some((stop) => text.includes(stop));
    while (kept < step.tokenIds.length && !hasStop(tokenizer.decode(step.tokenIds.slice(0, kept + 1))))
      kept++;
  }
  const known = tokenizer !== undefined && step.tokenIds.length > 0;
  return {
    ...step,
    text: step.text.slice(0, cut),
    tokenIds: known ? step.tokenIds.slice(0, kept) : [],
    logprobs: known && step.logprobs ? step.logprobs.slice(0, kept) : null,
    finishReason: "stop",
    stopped: true,
  };
}

export function choiceFromStep(rawStep: PolicyStep, options: ChoiceOptions): ChatChoice {
  const step = options.stop.length > 0 ? truncateAtStop(rawStep, options.stop, options.tokenizer) : rawStep;
  const action = parseTextAction(step.text, options.tools);
  let message: ChatChoice["message"];
  let finishReason: ChatChoice["finish_reason"];
  if (action.type === "tool-call") {
    const before = step.text.slice(0, step.text.indexOf(`<${action.tool}>`)).trim();
    message = {
      role: "assistant",
      content: before || null,
      refusal: null,
      tool_calls: [
        {
          id: options.callId(),
          type: "function",
          function: { name: action.tool, arguments: JSON.stringify(action.arguments) },
        },
      ],
    };
    finishReason = "tool_calls";
  } else if (action.type === "answer") {
    message = { role: "assistant", content: action.answer, refusal: null };
    finishReason = "stop";
  } else {
    message = { role: "assistant", content: step.text.trim(), refusal: null };
    finishReason = step.finishReason === "length" ? "length" : "stop";
  }
  return withTokens(step, message, finishReason, options);
}

/**
 * A chat-protocol policy's step (`hf:`: the model's own tool-call format, already parsed) as a
 * choice: its content and tool calls as they are.
 */
export function choiceFromChatStep(rawStep: PolicyStep, options: ChoiceOptions): ChatChoice {
  const step = options.stop.length > 0 ? truncateAtStop(rawStep, options.stop, options.tokenizer) : rawStep;
  const calls = step.toolCalls ?? [];
  if (calls.length === 0) {
    const message = { role: "assistant" as const, content: step.text, refusal: null };
    return withTokens(step, message, step.finishReason === "length" ? "length" : "stop", options);
  }
  const message = {
    role: "assistant" as const,
    content: step.text.trim() === "" ? null : step.text,
    refusal: null,
    tool_calls: calls.map((call) => ({
      id: call.id || options.callId(),
      type: "function" as const,
      function: { name: call.name, arguments: call.arguments },
    })),
  };
  return withTokens(step, message, "tool_calls", options);
}

function withTokens(
  step: PolicyStep,
  message: ChatChoice["message"],
  finishReason: ChatChoice["finish_reason"],
  options: ChoiceOptions,
): ChatChoice {
  const choice: ChatChoice = {
    index: options.index,
    message,
    logprobs:
      options.logprobs && step.logprobs ? { content: tokenLogprobs(step, options), refusal: null } : null,
    finish_reason: finishReason,
  };
  if ((options.returnTokenIds || options.logprobs) && step.tokenIds.length > 0)
    choice.token_ids = [...step.tokenIds];
  return choice;
}

function tokenLogprobs(step: PolicyStep, options: ChoiceOptions): TokenLogprob[] {
  const logprobs = step.logprobs ?? [];
  return logprobs.map((logprob, t) => {
    const id = step.tokenIds[t];
    if (id === undefined) return { token: "", logprob, bytes: null, top_logprobs: [] };
    const token = options.tokensAsIds ? `token_id:${id}` : (options.tokenizer?.decode([id]) ?? "");
    return { token, logprob, bytes: [...Buffer.from(token, "utf8")], top_logprobs: [], token_id: id };
  });
}
