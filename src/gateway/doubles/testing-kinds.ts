/**
 * What each real inference server does with a chat-completions request, as test doubles model it
 * (testing-double.ts serves them). Each behaviour names the source it was read from; the model
 * behind every double is the same (the embedded `models/base-strong` through `agentrl serve`'s
 * code), so only the server's own shaping differs.
 *
 * Sources (read 2026-12):
 * - vLLM `vllm/entrypoints/openai/chat_completion/protocol.py` @ 002032ee2b18e1f7bd924ec47b62504ba3866063
 *   (earlier `vllm/entrypoints/openai/protocol.py`), `ChatCompletionRequest.return_token_ids` (PR
 *   #22587, 0.10.2): "the result will include token IDs … In streaming mode, prompt_token_ids is
 *   included only in the first chunk, and token_ids contains the delta tokens for each chunk";
 *   `return_tokens_as_token_ids` writes log-prob tokens `token_id:<id>`; `_normalize_messages_before`
 *   renames the deprecated `reasoning_content` to `reasoning`. Errors nested
 *   (`{"error": {message, type, param, code}}`, 0.10.1 on). A mid-stream failure is
 *   `data: {"error": …}` then `data: [DONE]` (`serving_chat.py`, `chat_completion_stream_generator`'s
 *   `except`). Version gaps (issue 35, the static read in PR #29074, #28256, issue #28246):
 *   ≤ 0.11.x streamed tool-parser output carries no ids or log-probs for the tool call; 0.10.2 on
 *   gpt-oss returns `token_ids: null`; a reasoning parser with `include_reasoning: false` drops ids
 *   and log-probs. `GET /version` → `{"version"}` (`api_server.py`).
 * - SGLang `python/sglang/srt/entrypoints/openai/serving_chat.py` @ 002897c23becbd522d88b8115a763a21765f978a:
 *   `_build_chat_response` puts `prompt_token_ids` on each choice (`request.return_prompt_token_ids`)
 *   and `reasoning_content` on the message; errors are `ErrorResponse` (flat: `{"object": "error",
 *   "message", "type", "param", "code"}`); the stream generator's `except ValueError` sends
 *   `data: {error}` then `data: [DONE]`. Completion ids: `token_ids` (PR #30917), renamed
 *   `response_token_ids` (PR #35225); `return_token_ids` on a streamed call is a 400 (PR #30917).
 *   `GET /server_info` (and the older `/get_server_info`) → `{"version", …}`.
 * - llama.cpp `tools/server/server-common.cpp` (newest stored version aa6192d38defc9a5d9fb2987413f71b18f214270;
 *   the lines below read in a stored copy of it), `oaicompat_chat_params_parse`: `logprobs` sets
 *   `n_probs = top_logprobs` (default 20); with tools and stream it throws "logprobs is not
 *   supported with tools + stream" (`std::invalid_argument`: a 400). Completion ids only as
 *   `logprobs.content[i].id` (`server-task.cpp`, `completion_token_output::to_json`); no prompt ids;
 *   `POST /apply-template` → `{"prompt"}` and `POST /tokenize` (`add_special`, `parse_special`) →
 *   `{"tokens"}`; `GET /props` → `{default_generation_settings, build_info, …}`. Errors nested with
 *   a numeric `code`.
 * - Ollama @ fb30760996871fa9460115c753afd2c60d4ab0f7: `openai/openai.go:21-30` errors nested
 *   (`ErrorResponse{Error{Message, Type, Param, Code}}`), `:35` the message's `reasoning`,
 *   `:50-59` log-probs entries are `api.Logprob` (token, logprob, bytes: no id), no token-id field
 *   anywhere; `server/routes.go:1880` `GET /api/version` → `{"version"}`; `llm/llama_server.go:2443`
 *   a context past the window is a 400 "the input length exceeds the context length"; unknown
 *   request fields are ignored (Go's JSON decoder).
 */

export const DOUBLE_KINDS = [
  "vllm-0.10.2",
  "vllm-0.11",
  "vllm-0.12",
  "vllm",
  "sglang",
  "llamacpp",
  "ollama",
] as const;
export type DoubleKind = (typeof DOUBLE_KINDS)[number];

export interface KindBehaviour {
  /** The route a client probes to find the kind, and its answer. */
  probes: Record<string, Record<string, unknown>>;
  /** The error body in this server's shape. */
  error(status: number, message: string, type: string): Record<string, unknown>;
  /** A request this server rejects before running it (status and message), or null. */
  rejects(body: Record<string, unknown>): { status: number; message: string } | null;
  /** Where ids go: the server's field names (null: it returns none). */
  promptIds: "top-level" | "per-choice" | null;
  completionIds: "token_ids" | "response_token_ids" | "logprob-id" | null;
  /** Which request field turns each on (a server returns nothing unasked). */
  askPrompt: string | null;
  askCompletion: string | null;
  /** The message field of reasoning text. */
  reasoningField: "reasoning_content" | "reasoning";
  /** Streamed tool calls carry no ids or log-probs (vLLM ≤ 0.11.x). */
  streamedToolCallsDropIds: boolean;
  /** `token_ids: null` for gpt-oss models (vLLM 0.10.2). */
  gptOssNullIds: boolean;
  /** A mid-stream failure is `data: {"error": …}` then `[DONE]`. */
  midStreamErrorChunk: boolean;
  /** The message of a context that does not fit (prompt + max_tokens past the window). */
  contextLengthMessage: (window: number, asked: number) => string;
}

const nested = (status: number, message: string, type: string) => ({
  error: { message, type, param: null, code: status },
});

function vllm(version: string): KindBehaviour {
  const minor = Number(version.split(".")[1] ?? "99");
  return {
    probes: { "/version": { version } },
    error: nested,
    rejects: () => null,
    promptIds: "top-level",
    completionIds: "token_ids",
    askPrompt: "return_token_ids",
    askCompletion: "return_token_ids",
    reasoningField: minor <= 10 ? "reasoning_content" : "reasoning",
    streamedToolCallsDropIds: minor <= 11,
    gptOssNullIds: version === "0.10.2",
    midStreamErrorChunk: true,
    contextLengthMessage: (window, asked) =>
      `This model's maximum context length is ${window} tokens. However, you requested ${asked} tokens. Please reduce the length of the messages or completion.`,
  };
}

export const KIND_BEHAVIOURS: Record<DoubleKind, KindBehaviour> = {
  "vllm-0.10.2": vllm("0.10.2"),
  "vllm-0.11": vllm("0.11.2"),
  "vllm-0.12": vllm("0.12.0"),
  vllm: vllm("0.19.1"),
  sglang: {
    probes: {
      "/server_info": { version: "0.5.9", model_path: "base-strong", tp_size: 1 },
      "/get_server_info": { version: "0.5.9", model_path: "base-strong", tp_size: 1 },
    },
    error: (status, message, type) => ({ object: "error", message, type, param: null, code: status }),
    rejects: (body) =>
      body.stream === true && body.return_token_ids === true
        ? { status: 400, message: "return_token_ids is not supported with streaming" }
        : null,
    promptIds: "per-choice",
    completionIds: "response_token_ids",
    askPrompt: "return_prompt_token_ids",
    askCompletion: "return_token_ids",
    reasoningField: "reasoning_content",
    streamedToolCallsDropIds: false,
    gptOssNullIds: false,
    midStreamErrorChunk: true,
    contextLengthMessage: (window, asked) =>
      `Requested token count exceeds the model's maximum context length of ${window} tokens. You requested a total of ${asked} tokens.`,
  },
  llamacpp: {
    probes: {
      "/props": {
        default_generation_settings: { n_ctx: 4096, params: {} },
        total_slots: 1,
        build_info: "b7200-0000000",
        chat_template: "(the model's template)",
      },
    },
    error: (status, message, type) => ({ error: { code: status, message, type } }),
    rejects: (body) =>
      body.logprobs === true && body.stream === true && Array.isArray(body.tools) && body.tools.length > 0
        ? { status: 400, message: "logprobs is not supported with tools + stream" }
        : null,
    promptIds: null,
    completionIds: "logprob-id",
    askPrompt: null,
    askCompletion: "logprobs",
    reasoningField: "reasoning_content",
    streamedToolCallsDropIds: false,
    gptOssNullIds: false,
    midStreamErrorChunk: false,
    contextLengthMessage: () => "the request exceeds the available context size, try increasing it",
  },
  ollama: {
    probes: { "/api/version": { version: "0.13.5" } },
    error: (status, message) => ({
      error: {
        message,
        type: status === 400 ? "invalid_request_error" : "api_error",
        param: null,
        code: null,
      },
    }),
    rejects: () => null,
    promptIds: null,
    completionIds: null,
    askPrompt: null,
    askCompletion: null,
    reasoningField: "reasoning",
    streamedToolCallsDropIds: false,
    gptOssNullIds: false,
    midStreamErrorChunk: false,
    contextLengthMessage: () => "the input length exceeds the context length",
  },
};
