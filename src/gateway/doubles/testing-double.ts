/**
 * A test double of a real inference server (testing-kinds.ts says what each does, from its source),
 * on hono, bound to 127.0.0.1. Behind every double is the same deterministic model: the embedded
 * `models/base-strong` served by `agentrl serve`'s own code in process (`inner`), asked unstreamed
 * with its exact ids; the double reshapes that answer into its server's fields, streams it the way
 * that server does, and keeps the truth (`calls`: the prompt and completion ids the model was fed
 * and sampled) for tests to compare the gateway's records with.
 *
 * Test hooks (a body field, which the gateway passes on like any server extension): `double_fault:
 * "5xx"` answers 503 in the server's error shape; `double_fault: "mid-stream"` fails a streamed call
 * after its first chunk with the server's error chunk (where it has one; else the stream is cut). A `max_tokens` past the window (4096) is the
 * server's context-length 400.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import type { Upstream } from "../upstream.ts";
import { type DoubleKind, KIND_BEHAVIOURS, type KindBehaviour } from "./testing-kinds.ts";

export const DOUBLE_WINDOW = 4096;
const INNER_MAX_TOKENS = 48;

export interface DoubleCall {
  request: Record<string, unknown>;
  promptIds: number[];
  completionIds: number[];
  /** Tool calls in the model's answer. */
  toolCalls: number;
}

export interface ServerDouble {
  kind: DoubleKind;
  /** Base URL with `/v1`. */
  url: string;
  model: string;
  /** The truth of every completion the model ran (not /apply-template's). */
  calls: DoubleCall[];
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

export async function startServerDouble(
  kind: DoubleKind,
  inner: Upstream,
  options: { model?: string } = {},
): Promise<ServerDouble> {
  const behaviour = KIND_BEHAVIOURS[kind];
  const model = options.model ?? "base-strong";
  const calls: DoubleCall[] = [];
  const app = new Hono();
  const fail = (status: number, message: string, type = "BadRequestError") =>
    new Response(JSON.stringify(behaviour.error(status, message, type)), {
      status,
      headers: { "content-type": "application/json" },
    });

  for (const [path, answer] of Object.entries(behaviour.probes)) app.get(path, (c) => c.json(answer));

  /** The model's own answer (vLLM-shaped, exact ids), or an error response. */
  const run = async (body: Json, headers: Record<string, string>): Promise<Json | Response> => {
    const maxTokens = typeof body.max_tokens === "number" ? body.max_tokens : undefined;
    const { stream: _stream, stream_options: _options, ...rest } = body;
    const response = await inner.post(
      {
        ...rest,
        model: inner.model,
        return_token_ids: true,
        logprobs: true,
        max_tokens: Math.min(maxTokens ?? INNER_MAX_TOKENS, INNER_MAX_TOKENS),
      },
      undefined,
      headers,
    );
    const answer = (await inner.readJson(response)) as Json;
    if (!response.ok) {
      const message = (answer.error as { message?: string } | undefined)?.message ?? "inner model failed";
      return fail(response.status, message);
    }
    return answer;
  };

  if (kind === "llamacpp") {
    // The chat route's own two steps: the template rendered, then tokenized (server-common.cpp).
    app.post("/apply-template", async (c) => {
      const body = (await c.req.json()) as Json;
      const answer = await run({ messages: body.messages, tools: body.tools, max_tokens: 1 }, {});
      if (answer instanceof Response) return answer;
      const tokenizer = inner.tokenizer;
      if (!tokenizer) return fail(500, "no tokenizer", "server_error");
      return c.json({ prompt: tokenizer.decode(answer.prompt_token_ids as number[]) });
    });
    app.post("/tokenize", async (c) => {
      const body = (await c.req.json()) as Json;
      const tokenizer = inner.tokenizer;
      if (!tokenizer || typeof body.content !== "string") return fail(400, "content: expected a string");
      return c.json({ tokens: tokenizer.encode(body.content) });
    });
  }

  app.get("/v1/models", (c) => c.json({ object: "list", data: [{ id: model, object: "model" }] }));
  app.post("/v1/chat/completions", async (c) => {
    const body = (await c.req.json()) as Json;
    const fault = body.double_fault;
    delete body.double_fault;
    if (fault === "5xx") return fail(503, "the engine is overloaded", "ServiceUnavailableError");
    if (typeof body.max_tokens === "number" && body.max_tokens >= DOUBLE_WINDOW)
      return fail(400, behaviour.contextLengthMessage(DOUBLE_WINDOW, body.max_tokens), "BadRequestError");
    const rejected = behaviour.rejects(body);
    if (rejected) return fail(rejected.status, rejected.message);
    const headers: Record<string, string> = {};
    for (const name of ["x-agentrl-episode-id", "x-agentrl-task-id"]) {
      const value = c.req.header(name);
      if (value) headers[name] = value;
    }
    const answer = await run(body, headers);
    if (answer instanceof Response) return answer;
    const choice = (answer.choices as Json[])[0];
    const truth = {
      request: body,
      promptIds: answer.prompt_token_ids as number[],
      completionIds: choice.token_ids as number[],
      toolCalls: ((choice.message as Json).tool_calls as unknown[] | undefined)?.length ?? 0,
    };
    calls.push(truth);
    const shaped = shape(behaviour, body, answer, model);
    if (body.stream !== true) return c.json(shaped);
    const events = streamEvents(behaviour, body, shaped, truth, fault === "mid-stream");
    return new Response(events.map((event) => `data: ${event}\n\n`).join(""), {
      headers: { "content-type": "text/event-stream" },
    });
  });

  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const started = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () => resolve(started));
    started.once("error", reject);
  });
  const port = (server.address() as AddressInfo).port;
  return {
    kind,
    url: `http://127.0.0.1:${port}/v1`,
    model,
    calls,
    close: () =>
      new Promise<void>((done) => {
        (server as Server).closeAllConnections();
        server.close(() => done());
      }),
  };
}

/** Log-prob entries as the server writes them. */
function entries(behaviour: KindBehaviour, request: Json, raw: Json[]): Json[] {
  return raw.map((entry) => {
    const { token_id, top_logprobs: _top, ...rest } = entry as Json & { token_id: number };
    const token = request.return_tokens_as_token_ids === true ? `token_id:${token_id}` : rest.token;
    if (behaviour.completionIds === "logprob-id") return { id: token_id, ...rest, top_logprobs: [] };
    return { ...rest, token, top_logprobs: [] };
  });
}

/** The model's answer in the server's fields, as its unstreamed route returns it. */
function shape(behaviour: KindBehaviour, request: Json, answer: Json, model: string): Json {
  const choice = (answer.choices as Json[])[0];
  const message = choice.message as Json;
  const ids = choice.token_ids as number[];
  const reasoningSuppressed = request.include_reasoning === false;
  const idsNulled =
    (behaviour.gptOssNullIds && model.includes("gpt-oss")) ||
    (reasoningSuppressed && behaviour.completionIds === "token_ids");
  const askedCompletion = behaviour.askCompletion !== null && request[behaviour.askCompletion] === true;
  const askedPrompt = behaviour.askPrompt !== null && request[behaviour.askPrompt] === true;
  const logprobs =
    request.logprobs === true && !(reasoningSuppressed && behaviour.completionIds === "token_ids")
      ? { content: entries(behaviour, request, (choice.logprobs as { content: Json[] }).content) }
      : null;
  const out: Json = {
    index: 0,
    message: {
      role: "assistant",
      content: message.content ?? (behaviour.reasoningField === "reasoning" ? null : ""),
      ...(message.tool_calls ? { tool_calls: message.tool_calls } : {}),
    },
    logprobs,
    finish_reason: choice.finish_reason,
  };
  if (behaviour.completionIds === "token_ids" || behaviour.completionIds === "response_token_ids") {
    if (askedCompletion) out[behaviour.completionIds] = idsNulled ? null : ids;
  }
  if (behaviour.promptIds === "per-choice")
    out.prompt_token_ids = askedPrompt ? answer.prompt_token_ids : null;
  return {
    id: answer.id,
    object: "chat.completion",
    created: answer.created,
    model,
    choices: [out],
    usage: answer.usage,
    ...(behaviour.promptIds === "top-level" && askedPrompt
      ? { prompt_token_ids: answer.prompt_token_ids }
      : {}),
  };
}

/**
 * The server's stream of a shaped answer: the role (and vLLM's prompt ids) first, then one chunk per
 * sampled token (its text piece, its id under `return_token_ids`, its log-prob), a tool call as one
 * chunk after the text (≤ 0.11.x vLLM: without its ids and log-probs), the finish, usage if asked,
 * `[DONE]`. `midStream`: the server's error chunk after the first token instead of the rest.
 */
function streamEvents(
  behaviour: KindBehaviour,
  request: Json,
  shaped: Json,
  truth: DoubleCall,
  midStream: boolean,
): string[] {
  const head = {
    id: shaped.id,
    object: "chat.completion.chunk",
    created: shaped.created,
    model: shaped.model,
  };
  const choice = (shaped.choices as Json[])[0];
  const message = choice.message as Json;
  const withIds = behaviour.completionIds === "token_ids" && Array.isArray(choice.token_ids);
  const logprobEntries = (choice.logprobs as { content: Json[] } | null)?.content ?? null;
  const events: Json[] = [
    {
      ...head,
      choices: [{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }],
      ...(shaped.prompt_token_ids ? { prompt_token_ids: shaped.prompt_token_ids } : {}),
    },
  ];
  const toolCalls = Array.isArray(message.tool_calls) ? (message.tool_calls as Json[]) : [];
  const content = typeof message.content === "string" ? message.content : "";
  // A tool-call turn's tokens are the call's; an answer's are its text.
  const pieces = truth.completionIds.map((id, i) => ({
    id,
    logprob: logprobEntries?.[i] ?? null,
    text: toolCalls.length === 0 && i === 0 ? content : "",
  }));
  if (toolCalls.length === 0) {
    pieces.forEach((piece, i) => {
      events.push({
        ...head,
        choices: [
          {
            index: 0,
            delta: { content: piece.text },
            logprobs: piece.logprob ? { content: [piece.logprob] } : null,
            finish_reason: null,
            ...(withIds ? { token_ids: [piece.id] } : {}),
          },
        ],
      });
      if (i === 0 && midStream) events.push(streamErrorEvent(behaviour));
    });
  } else {
    const dropped = behaviour.streamedToolCallsDropIds;
    events.push({
      ...head,
      choices: [
        {
          index: 0,
          delta: { tool_calls: toolCalls.map((call, index) => ({ index, ...call })) },
          logprobs: !dropped && logprobEntries ? { content: logprobEntries } : null,
          finish_reason: null,
          ...(withIds && !dropped ? { token_ids: truth.completionIds } : {}),
        },
      ],
    });
    if (midStream) events.push(streamErrorEvent(behaviour));
  }
  const out = events.map((event) => JSON.stringify(event));
  if (midStream) {
    const at = out.findIndex((event) => event.startsWith('{"error"'));
    // Where the server has no error chunk the connection simply ends.
    if (behaviour.midStreamError === "cut") return out.slice(0, at);
    return behaviour.midStreamError === "chunk-then-done"
      ? [...out.slice(0, at + 1), "[DONE]"]
      : out.slice(0, at + 1);
  }
  out.push(
    JSON.stringify({
      ...head,
      choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: choice.finish_reason }],
    }),
  );
  const streamOptions = request.stream_options as { include_usage?: unknown } | undefined;
  if (streamOptions?.include_usage === true)
    out.push(JSON.stringify({ ...head, choices: [], usage: shaped.usage }));
  out.push("[DONE]");
  return out;
}

/**
 * The error chunk of a failure mid-stream: the server's error body under `error` (vLLM's and
 * llama.cpp's bodies are already `{"error": …}`; SGLang wraps its flat one).
 */
function streamErrorEvent(behaviour: KindBehaviour): Record<string, unknown> {
  const body = behaviour.error(500, "the engine died", "InternalServerError");
  return "error" in body ? body : { error: body };
}
