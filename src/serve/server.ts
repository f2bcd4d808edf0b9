/**
 * `agentrl serve`: an OpenAI-compatible chat-completions server over any text-protocol `Policy`
 * (the embedded transformer, a scripted policy), or a chat policy that renders the client's own
 * messages with its chat template (`hf:<folder>`: `PolicyContext.messages`, `promptIds`), on
 * node:http.
 *
 *   POST /v1/chat/completions   request.ts (what is accepted) → context.ts (messages → episode
 *                               context) → batcher.ts (one `act` for concurrent requests) →
 *                               completion.ts (the turn → tool_calls or content)
 *   GET  /v1/models, /v1/models/<model>, GET /health and GET /version (`server: "agentrl"`, no auth)
 *
 * Sampling: the policy is loaded once (`loadPolicy` with the default settings); each request's
 * `temperature`/`top_p` travel with its contexts (`PolicyContext.sampling`), so one checkpoint is
 * held in memory whatever the settings clients send. `n` samples are n contexts with seeds
 * `seed, mix(seed, 1), …, mix(seed, n-1)` in one batch, so sample 0 of a request with `seed: s` is
 * exactly the in-process episode with seed s. Without `seed` a random one is drawn per request.
 * `stream: true` is answered as server-sent events, but each choice comes whole in one chunk
 * (the policy returns a turn at once), followed by a finish chunk and `[DONE]`. Under vLLM's
 * `return_token_ids` the response carries `prompt_token_ids` (the exact context ids the policy was
 * fed; on the first chunk when streaming) beside each choice's `token_ids`.
 *
 * Safety: the door checks of src/http/boundary.ts (loopback or `allowHosts` Host and Origin, JSON
 * bodies as application/json, timeouts); 127.0.0.1 by default, another address only with a bearer
 * token unless `allowRemote`. The token is compared in constant time. Bodies over `maxBodyBytes`
 * get 413. Errors are OpenAI-style JSON `{ error: { message, type, param, code } }`.
 */
import { randomBytes, randomInt } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { mixSeeds } from "../core/random.ts";
import { checkBind, HostPolicy, type ServerTimeouts } from "../http/boundary.ts";
import { authorized, createJsonServer, readJson, sendJson, sha256 } from "../http/json.ts";
import { EPISODE_ID_HEADER, TASK_ID_HEADER } from "../policy/openai/spec.ts";
import type { Policy, PolicyStep } from "../types/policy.ts";
import type { Task } from "../types/task.ts";
import { type ActBatcher, createActBatcher } from "./batcher.ts";
import { choiceFromChatStep, choiceFromStep } from "./completion.ts";
import { buildContexts, episodeFromMessages, toolSpecsFromRequest } from "./context.ts";
import { sendStream } from "./http.ts";
import { parseChatRequest, RequestError } from "./request.ts";

export interface SamplingSettings {
  temperature: number;
  topP: number;
}

/** What `resolveTask` gets to find the task behind a request. */
export interface TaskRequest {
  /** Canonical question. */
  question: string;
  systemPrompt?: string;
  /** Task id the client named: the `x-agentrl-task-id` header, else `metadata.task_id`. */
  taskId?: string;
  metadata?: Record<string, string>;
}

export interface ChatServerOptions {
  /**
   * The policy (text protocol), loaded once with the default sampling settings; a request's own
   * settings are passed per context.
   */
  loadPolicy: (sampling: SamplingSettings) => Policy | Promise<Policy>;
  /** Model name clients must send (and `/v1/models` lists). */
  model: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8000; 0 picks a free port. */
  port?: number;
  /** Bearer token required on /v1/* when set. */
  token?: string;
  /** Allow a non-loopback host without a token (warns). */
  allowRemote?: boolean;
  /** Host names answered besides loopback and the bound address (`--allow-host`). */
  allowHosts?: readonly string[];
  /**
   * Apply each request's temperature/top_p (default true). False: the policy samples with its own
   * settings whatever a request asks (RL's live policy, whose samples must match what it scores).
   */
  requestSampling?: boolean;
  /** Values for requests that omit them (temperature 1, top_p 1, max_tokens 32). */
  defaults?: Partial<SamplingSettings & { maxTokens: number }>;
  /** Largest request body (default 1 MiB). */
  maxBodyBytes?: number;
  /** Connection timeouts (default `SERVER_TIMEOUTS`, src/http/boundary.ts; smaller in tests). */
  timeouts?: Partial<ServerTimeouts>;
  /** Most contexts in one `act` call (default 64). */
  maxBatch?: number;
  /** Largest `n` (default 64). */
  maxN?: number;
  /** Largest `max_tokens` (default 4096). */
  maxTokens?: number;
  /**
   * The task of a request, for policies that need more than the question (the scripted expert
   * follows the gold plan). Default: a task with the question, the system prompt and no answer.
   */
  resolveTask?: (request: TaskRequest) => Task | undefined;
  /** Warnings and notes (default: stderr). */
  log?: (line: string) => void;
}

export interface ChatServer {
  /** Base URL for OpenAI clients, e.g. `http://127.0.0.1:8000/v1`. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly model: string;
  readonly stats: { requests: number; actCalls: number };
  close(): Promise<void>;
}

export const SERVE_DEFAULTS = {
  host: "127.0.0.1",
  port: 8000,
  temperature: 1,
  topP: 1,
  maxTokens: 32,
  maxBodyBytes: 1 << 20,
  maxBatch: 64,
  maxN: 64,
  maxTokensLimit: 4096,
} as const;

export async function startChatServer(options: ChatServerOptions): Promise<ChatServer> {
  const host = options.host ?? SERVE_DEFAULTS.host;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const warning = checkBind("agentrl serve", host, { token: options.token, insecure: options.allowRemote });
  if (warning) log(warning);
  const defaults = {
    temperature: options.defaults?.temperature ?? SERVE_DEFAULTS.temperature,
    topP: options.defaults?.topP ?? SERVE_DEFAULTS.topP,
    maxTokens: options.defaults?.maxTokens ?? SERVE_DEFAULTS.maxTokens,
  };
  const limits = {
    maxN: options.maxN ?? SERVE_DEFAULTS.maxN,
    maxTokens: options.maxTokens ?? SERVE_DEFAULTS.maxTokensLimit,
  };
  const maxBody = options.maxBodyBytes ?? SERVE_DEFAULTS.maxBodyBytes;
  const maxBatch = options.maxBatch ?? SERVE_DEFAULTS.maxBatch;
  const tokenDigest = options.token ? sha256(options.token) : null;
  const created = Math.floor(Date.now() / 1000);
  const stats = { requests: 0, actCalls: 0 };

  // ---- the policy, loaded once: a bad checkpoint or a chat policy that cannot take the client's
  // messages (an OpenAI endpoint) fails at startup; a chat policy that renders them itself (hf:) serves ----
  const policy = await options.loadPolicy({ temperature: defaults.temperature, topP: defaults.topP });
  if (policy.protocol !== "text" && !policy.promptIds) {
    await policy.close?.();
    throw new Error(
      `policy ${policy.id} speaks the ${policy.protocol} protocol; agentrl serve needs a text-protocol policy or a checkpoint that renders chat itself (hf:<folder>)`,
    );
  }
  /** Completion requests being read and prepared, not yet handed to the batcher. */
  let arriving = 0;
  const batcher: ActBatcher = createActBatcher(policy, maxBatch, {
    onCall: () => stats.actCalls++,
    arriving: () => arriving,
  });

  // ---- routes ----
  /** Episodes with a call in flight: a second concurrent call of one episode gets a KV slot of its own. */
  const episodesInFlight = new Set<string>();
  const completions = async (
    body: unknown,
    taskHeader: string | undefined,
    res: ServerResponse,
    /** The caller's episode, when no other call of it is in flight. */
    episodeHeader?: string,
    /** Called as the request is handed to the batcher. */
    reached: () => void = () => {},
  ) => {
    const request = parseChatRequest(body, limits);
    if (request.model !== options.model) {
      throw new RequestError(
        404,
        `The model "${request.model}" does not exist; this server serves "${options.model}"`,
        "model",
        "model_not_found",
      );
    }
    const allTools = toolSpecsFromRequest(request.tools);
    const tools = request.tool_choice === "none" ? [] : allTools;
    const episode = episodeFromMessages(request.messages, allTools);
    const sampling = {
      temperature: request.temperature ?? defaults.temperature,
      topP: request.top_p ?? defaults.topP,
    };
    const id = `chatcmpl-${randomBytes(12).toString("hex")}`;
    const seed = request.seed ?? randomInt(2 ** 31 - 1);
    const n = request.n ?? 1;
    const metadata = request.metadata ?? undefined;
    const taskId = taskHeader ?? metadata?.task_id;
    const task: Task = options.resolveTask?.({
      question: episode.question,
      ...(episode.systemPrompt ? { systemPrompt: episode.systemPrompt } : {}),
      ...(taskId ? { taskId } : {}),
      ...(metadata ? { metadata } : {}),
    }) ?? {
      id: taskId ?? id,
      question: episode.question,
      answer: "",
      family: "chat",
      ...(episode.systemPrompt ? { systemPrompt: episode.systemPrompt } : {}),
    };
    const contexts = buildContexts(episode, {
      task,
      tools,
      historyTools: allTools,
      ...(policy.tokenizer ? { tokenizer: policy.tokenizer } : {}),
      seeds: Array.from({ length: n }, (_, i) => (i === 0 ? seed : mixSeeds(seed, i))),
      maxTokens: request.max_completion_tokens ?? request.max_tokens ?? defaults.maxTokens,
      // A named episode keeps its KV slot between calls (the policy checks the held ids are a prefix).
      episodeIdPrefix: episodeHeader ?? id,
    })
      // A chat policy (hf:) renders the client's own messages and tools with its template.
      .map((context) =>
        policy.protocol === "chat"
          ? {
              ...context,
              messages: request.messages,
              ...(request.tools ? { requestTools: request.tools } : {}),
            }
          : context,
      )
      .map((context) => (options.requestSampling === false ? context : { ...context, sampling }));
    let steps: PolicyStep[];
    try {
      const step = batcher.act(contexts, { keep: episodeHeader !== undefined });
      reached();
      steps = await step;
    } catch (error) {
      throw new RequestError(
        500,
        `the policy failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    const failed = steps.find((step) => step.finishReason === "error" || step.error !== undefined);
    if (failed) throw new RequestError(500, `the policy failed: ${failed.error ?? "unknown error"}`);
    const stop = request.stop == null ? [] : typeof request.stop === "string" ? [request.stop] : request.stop;
    const toChoice = policy.protocol === "chat" ? choiceFromChatStep : choiceFromStep;
    const choices = steps.map((step, index) =>
      toChoice(step, {
        index,
        tools,
        stop,
        ...(policy.tokenizer ? { tokenizer: policy.tokenizer } : {}),
        logprobs: request.logprobs === true,
        returnTokenIds: request.return_token_ids === true,
        tokensAsIds: request.return_tokens_as_token_ids === true,
        callId: () => `call_${randomBytes(12).toString("hex")}`,
      }),
    );
    const context = contexts[0];
    // The exact context the policy was fed (vLLM's `prompt_token_ids`): prompt, then each turn and its observation.
    const promptTokenIds =
      steps[0]?.promptIds ??
      (policy.tokenizer
        ? [
            ...context.prompt.tokenIds,
            ...context.turns.flatMap((turn) => [...turn.tokenIds, ...(turn.observation?.tokenIds ?? [])]),
          ]
        : []);
    const promptTokens = promptTokenIds.length;
    // The ids returned (cut at a stop sequence) when they are: a client checks the count against them.
    const completionTokens = steps.reduce(
      (sum, step, i) =>
        sum +
        (choices[i]?.token_ids?.length ??
          (step.tokenIds.length > 0 ? step.tokenIds.length : step.text.split(/\s+/).filter(Boolean).length)),
      0,
    );
    const response = {
      id,
      object: "chat.completion" as const,
      created: Math.floor(Date.now() / 1000),
      model: options.model,
      system_fingerprint: `agentrl:${policy.id}`,
      choices,
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
      },
      ...(request.return_token_ids === true && policy.tokenizer ? { prompt_token_ids: promptTokenIds } : {}),
    };
    if (request.stream) sendStream(res, response, request);
    else sendJson(res, 200, response);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname.replace(/\/+$/, "") || "/";
    if (path === "/health") {
      if (req.method !== "GET") throw new RequestError(405, `method ${req.method} not allowed on ${path}`);
      return sendJson(res, 200, { status: "ok" });
    }
    // What clients probe to learn the server's kind (policy/openai/server-kind.ts): vLLM's route, with our name.
    if (path === "/version" && req.method === "GET")
      return sendJson(res, 200, { version: "agentrl", server: "agentrl" });
    if (!path.startsWith("/v1/"))
      throw new RequestError(404, `no route ${req.method} ${path}`, null, "not_found");
    if (tokenDigest && !authorized(req.headers.authorization, tokenDigest)) {
      res.setHeader("www-authenticate", "Bearer");
      throw new RequestError(
        401,
        "missing or invalid bearer token (Authorization: Bearer <token>)",
        null,
        "invalid_api_key",
      );
    }
    if (path === "/v1/models" || path.startsWith("/v1/models/")) {
      if (req.method !== "GET") throw new RequestError(405, `method ${req.method} not allowed on ${path}`);
      const card = { id: options.model, object: "model", created, owned_by: "agentrl" };
      if (path === "/v1/models") return sendJson(res, 200, { object: "list", data: [card] });
      const name = safeDecode(path.slice("/v1/models/".length));
      if (name !== options.model) {
        throw new RequestError(
          404,
          `The model "${name}" does not exist; this server serves "${options.model}"`,
          "model",
          "model_not_found",
        );
      }
      return sendJson(res, 200, card);
    }
    if (path === "/v1/chat/completions") {
      if (req.method !== "POST")
        throw new RequestError(405, `method ${req.method} not allowed on ${path}; use POST`);
      stats.requests++;
      const taskHeader = req.headers[TASK_ID_HEADER];
      const named = req.headers[EPISODE_ID_HEADER];
      const episode =
        typeof named === "string" && named.length <= 200 && !episodesInFlight.has(named) ? named : undefined;
      if (episode !== undefined) episodesInFlight.add(episode);
      // counted as arriving until it reaches the batcher (or fails on the way)
      arriving++;
      let counted = true;
      const reached = () => {
        if (counted) arriving--;
        counted = false;
      };
      try {
        return await completions(
          await readJson(req, maxBody),
          typeof taskHeader === "string" ? taskHeader : undefined,
          res,
          episode,
          reached,
        );
      } finally {
        reached();
        if (episode !== undefined) episodesInFlight.delete(episode);
      }
    }
    throw new RequestError(404, `no route ${req.method} ${path}`, null, "not_found");
  };

  const server = createJsonServer(handle, {
    label: "agentrl serve",
    log,
    hosts: new HostPolicy(host, options.allowHosts),
    ...(options.timeouts ? { timeouts: options.timeouts } : {}),
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? SERVE_DEFAULTS.port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(":") ? `[${host}]` : host;

  return {
    url: `http://${urlHost}:${port}/v1`,
    host,
    port,
    model: options.model,
    stats,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      await policy.close?.();
    },
  };
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
