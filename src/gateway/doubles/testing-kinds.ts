/**
 * What each real inference server does with a chat-completions request, as test doubles model it
 * (testing-double.ts serves them). Each behaviour names the source it was read from; the model
 * behind every double is the same (the embedded `models/base-strong` through `agentrl serve`'s
 * code), so only the server's own shaping differs.
 *
 * Sources (read 2026-12). Each citation is `path:line` at the named commit (full hashes below); every
 * line number was checked against the file's stored text at that commit. Where the stored copy of a
 * file is not at the commit named for its repository, the commit actually read is named instead.
 *
 * - vLLM. Commits: P = 002032ee2b18e1f7bd924ec47b62504ba3866063,
 *   S = 006c49d485f9ca479bf4989cbb694d0ac02f44b5, E = 040a2cc2a6295ea9c313d86526ff90a103eacb3e,
 *   V = dcbf200475bbc0dc7a464eb5531893298a400f49.
 *   `protocol.py` is vllm/entrypoints/openai/chat_completion/protocol.py, `serving.py` the same folder's
 *   serving.py.
 *   - `return_token_ids` (PR #22587): protocol.py:422-431 @ P; its streaming semantics ("prompt_token_ids
 *     is included only in the first chunk, and token_ids contains the delta tokens for each chunk"):
 *     protocol.py:426-428 @ P. Fields: top-level `prompt_token_ids` protocol.py:144, per-choice
 *     `token_ids` :119, streamed `prompt_token_ids` :182 and choice `token_ids` :168 @ P. In the stream:
 *     the first chunk carries `prompt_token_ids` serving.py:560-571, each later chunk its delta
 *     `token_ids` serving.py:749-751, 761, 789 @ S.
 *   - `return_tokens_as_token_ids` (log-prob tokens as `token_id:<id>`): protocol.py:414-421 (the
 *     `'token_id:{token_id}'` wording :418) @ P; passed to the log-probs builder serving.py:649 @ S.
 *   - `reasoning_content` renamed `reasoning`: `_normalize_messages_before` protocol.py:538-563, the
 *     rename :560-562 @ P; the response message field `reasoning` protocol.py:77 @ P.
 *   - Nested errors `{"error": {message, type, param, code}}`: `ErrorInfo`
 *     vllm/entrypoints/openai/engine/protocol.py:69-73, `ErrorResponse` :76-77 @ E. The "0.10.1 on"
 *     dating comes from the project's static-read note, not from a line read here.
 *   - Mid-stream failure `data: {"error": …}` then `data: [DONE]`: `chat_completion_stream_generator`
 *     serving.py:466; its `except` serving.py:927-932, then `yield "data: [DONE]\n\n"` :934 @ S (the
 *     parser-creation failure path does the same, :513-517). The chunk's body is whatever
 *     `create_streaming_error_response` returns; that function was not read, so its shape is unconfirmed.
 *   - `GET /version` → `{"version"}`: vllm/entrypoints/serve/instrumentator/basic.py:54-57 @ V.
 *   - Version gaps, before and after. O = 003fe5932dc9e1b331347894d3cbc5ddfe89e9eb, an older
 *     vllm/entrypoints/openai/serving_chat.py (its date was not read; its code predates both fixes).
 *     Streamed tool-parser output without ids (PR #29074, issue #27482; "≤ 0.11.x" is the static-read
 *     note's dating, not a line read here): before, a parser
 *     holding tokens back (`delta_message is None`) skips the chunk and its `token_ids` with it,
 *     serving_chat.py:977-979 @ O; after, the chunk is sent when `return_token_ids` is set,
 *     serving.py:709-719 @ S. gpt-oss `token_ids: null` (issue #28246, fixed by PR #28256): before,
 *     the harmony branch of `chat_completion_full_generator` builds its choice without `token_ids`,
 *     serving_chat.py:1211 and 1241-1252 @ O; that 0.10.2 is the release that shipped it rests on the
 *     issue (its response body shows `"token_ids":null`). `include_reasoning: false` with a parser
 *     drops ids and log-probs: before, the harmony stream turns hidden reasoning into
 *     `delta_message = None` (serving_chat.py:699-704 @ O), which the skip at :977-979 drops; after,
 *     deliberately, serving.py:703-707 (log-probs) and 749-751 (ids) @ S, unstreamed log-probs
 *     :1005-1010 @ S; the request field protocol.py:264 @ P.
 * - SGLang. Commits: C = 002897c23becbd522d88b8115a763a21765f978a,
 *   N = 004c82e07d876f6e4a0ad6e15325706b0f478f1a, B = c5695a4be1c4f84791eeaceeb6e4a775f8e7d0cc,
 *   H = 0025436eab0556737d615b36a4dd3e1e26e82f3d.
 *   Files under python/sglang/srt/entrypoints/.
 *   - `prompt_token_ids` per choice: `_build_chat_response` openai/serving_chat.py:1262; set only with
 *     `return_prompt_token_ids` :1339-1343, placed on the choice :1369 @ C; the choice field
 *     openai/protocol.py:1118 @ N.
 *   - `reasoning_content` on the message: openai/serving_chat.py:1359 @ C; `ChatMessage` field
 *     openai/protocol.py:1103 @ N.
 *   - Flat `ErrorResponse` (`object: "error"`, message, type, param, code): openai/protocol.py:94-99 @ N;
 *     `create_error_response` returns it flat, openai/serving_base.py:117-133 @ B.
 *   - Stream error chunk: `_generate_chat_stream`'s `except ValueError` openai/serving_chat.py:1229-1233,
 *     then `data: [DONE]` :1235 @ C (an abort with a status code sends one too, :1081-1091).
 *     `create_streaming_error_response` wraps the flat body in `{"error": …}`:
 *     openai/serving_base.py:135-149 @ B (an older commit: serving_base.py is not stored at C or N).
 *   - Completion ids: `ChatCompletionRequest.return_token_ids` openai/protocol.py:798 (beside
 *     `return_prompt_token_ids` :797) and the choice field `token_ids` :1119 @ N (PR #30917). The rename
 *     to `response_token_ids` (PR #35225) was not found in any stored file read; it rests on the PR.
 *   - `return_token_ids` on a streamed call is refused: openai/serving_chat.py:936-941 @ N raises
 *     ValueError. At C only `return_prompt_token_ids` is refused when streamed, :539-544. That the
 *     refusal is a 400 was not confirmed at N: the serving_base.py read (@ B) turns every exception in
 *     `handle_request` into a 500, :49-55, and no version matching N was stored.
 *   - `GET /get_server_info` → `{…server args, "version"}`: http_server.py:495-506 ("version" :505)
 *     @ H. `GET /server_info` was not found in that stored version (the only one read).
 * - llama.cpp. Commits: A = aa6192d38defc9a5d9fb2987413f71b18f214270,
 *   L = 006639c3ff51a3dbde5f52ebf4c5a55ad5306caf, X = 00dd0816129a5210351c78bb90e0828f8eb69f99.
 *   Files under tools/server/.
 *   - `oaicompat_chat_params_parse` server-common.cpp:801 @ A: `logprobs` sets `n_probs` from
 *     `top_logprobs`, default 20, :1055; with tools and stream it throws "logprobs is not supported with
 *     tools + stream", :1052-1053 @ A (`has_tools` :809, `stream` :810).
 *   - That refusal's status differs by version. @ A it is `std::runtime_error`, and `ex_wrapper` turns
 *     any exception into `server_error`, a 500: server.cpp:3678-3702 (the catch :3683, the type
 *     :3692-3694) @ A, because `post_chat_completions` calls the parser outside the 400 `try`,
 *     server.cpp:2979-2985 @ A. It is a 400 later: `std::invalid_argument` server-common.cpp:1108 @ L
 *     (`n_probs` default 20 :1110), and `ex_wrapper` maps `std::invalid_argument` to
 *     `ERROR_TYPE_INVALID_REQUEST`, server.cpp:47-50 @ X.
 *   - Completion ids only as `logprobs.content[i].id`: `completion_token_output::probs_vector_to_json`
 *     server-task.cpp:531-551, `{"id", p.tok}` :537 @ A (`completion_token_output::to_json`, :513-529,
 *     builds the `top_logprobs` entries, also with `id`). No prompt ids. Unstreamed, a stop word's
 *     tokens are cut from the log-prob entries: server.cpp:1307-1313 @ A.
 *   - `POST /apply-template` → `{"prompt"}`: route server.cpp:3779, handler :3027-3037 @ A.
 *     `POST /tokenize` (`add_special` default false :3091, `parse_special` default true :3092) →
 *     `{"tokens"}` :3123: route :3777, handler :3086-3125 @ A. `GET /props` →
 *     `{default_generation_settings, build_info, …}`: route :3755, handler :2792-2834
 *     (`default_generation_settings` :2809, `build_info` :2824) @ A.
 *   - Errors nested with a numeric `code`: `format_error_response` server-common.cpp:15-57 @ A (400 for
 *     invalid requests :19-21); wrapped as `{"error": …}` with the status taken from `code`,
 *     `server_res_generator::error` server.cpp:2594-2597 @ A.
 *   - A context past the window: "the request exceeds the available context size, try increasing it"
 *     (`ERROR_TYPE_EXCEED_CONTEXT_SIZE`, a 400) server.cpp:1823 @ A.
 *   - A failure after the first chunk is sent as `data: {"error": …}` and the stream ends without
 *     `[DONE]`: server.cpp:3432-3444 (the chunk :3441) @ A, as this double does (`midStreamError`).
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
  /**
   * A failure after the first chunk: `data: {"error": …}` then `[DONE]` (vLLM, SGLang), the error
   * chunk and the end of the stream (llama.cpp), or the connection simply ends (Ollama: not read).
   */
  midStreamError: "chunk-then-done" | "chunk-then-end" | "cut";
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
    midStreamError: "chunk-then-done",
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
    midStreamError: "chunk-then-done",
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
    midStreamError: "chunk-then-end",
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
    midStreamError: "cut",
    contextLengthMessage: () => "the input length exceeds the context length",
  },
};
