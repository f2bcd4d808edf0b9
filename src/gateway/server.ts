/**
 * `agentrl gateway`: a recording OpenAI-compatible gateway in front of an upstream model.
 *
 *   POST /episodes/<id>/v1/chat/completions   one episode's calls (its own base URL)
 *   POST /episodes/<id>/v1/responses          the Responses API, translated to chat completions
 *                                             (responses.ts; multi-turn by input items or
 *                                             `previous_response_id`)
 *   POST /episodes/<id>/v1/messages           the Anthropic Messages API, translated to chat
 *                                             completions (messages.ts; base URL
 *                                             `/episodes/<id>`, or `…/v1` as the agent is handed)
 *   POST /slots/<slot>/v1/…                   the same routes for the episode slot <slot> runs now
 *                                             (`bindSlot`; a fixed base URL for an agent's slot;
 *                                             refused between episodes: episodes.ts `SlotTable`)
 *   POST /v1/chat/completions                 the same, episode named by `x-agentrl-episode-id`
 *                                             (a call naming none is an episode of its own)
 *   GET  /v1/models, /episodes/<id>/v1/models the upstream's model
 *   POST /episodes/<id>/reward                {reward?, turnRewards?}: outcome and per-turn rewards
 *   POST /episodes/<id>/end                   {answer?, error?, taskId?}: builds and records the trajectory
 *   GET  /health                              (no auth)
 *
 * Each call is forwarded with `model` set to the upstream's, a per-episode `seed` when the agent
 * sent none (so an episode is reproducible), and — when the upstream supports them — vLLM's
 * `return_token_ids` and `logprobs`; the fields the agent did not ask for are taken out of the
 * answer again. `stream: true` is passed through chunk by chunk and recorded once complete.
 * Every call is handed to `onCall` as it completes; an episode's calls become one trajectory
 * (trajectory.ts) handed to `onEpisode`. A 2xx answer that is not a valid completion is recorded as
 * an error, answered 502, and ends the episode as `policy-error`.
 *
 * Safety: the door checks of src/http/boundary.ts (Host, Origin, application/json, timeouts);
 * 127.0.0.1 by default; another address needs a token (or `allowRemote`); the token is compared in
 * constant time; request bodies over `maxBodyBytes` get 413; the upstream key lives in the
 * upstream's headers only, never in a record. Episodes are bounded (episodes.ts): an episode idle
 * for `episodeTtlMs` is ended as failed (and handed to `onEpisode` like any other), and one past
 * `maxEpisodeCalls` calls or `maxEpisodeBytes` is refused further calls with a 413.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { activeFaultPlan, InjectedFault } from "../core/faults.ts";
import { checkBind, HostPolicy, type ServerTimeouts } from "../http/boundary.ts";
import { authorized, createJsonServer, readJson, sendJson, sha256 } from "../http/json.ts";
import { RequestError } from "../http/request-error.ts";
import { kindProfile } from "../policy/openai/server-kind.ts";
import { EPISODE_ID_HEADER, TASK_ID_HEADER } from "../policy/openai/spec.ts";
import { ID_FIELDS } from "../policy/openai/token-ids.ts";
import { type Failure, httpStatusFailure, infraFailure } from "../types/failure.ts";
import { parseCompletion, tokenIdsVerdict, upstreamErrorMessage } from "./completion.ts";
import {
  callBytes,
  EPISODE_LIMITS,
  type EpisodeLog,
  type EpisodeMeta,
  EpisodeRegistry,
  limitReached,
  SLOT_EPISODE_HEADER,
  SlotTable,
} from "./episodes.ts";
import {
  apiKeyAuthorized,
  chatToMessage,
  messagesToChat,
  sendMessageStream,
  ToolArgumentStore,
  withAnthropicErrors,
} from "./messages.ts";
import {
  assistantMessages,
  ConversationStore,
  chatToResponse,
  responsesToChat,
  sendResponseStream,
} from "./responses.ts";
import { sendCompletionStream } from "./send-stream.ts";
import { StreamAssembler } from "./stream.ts";
import { type BuiltEpisode, buildTrajectory, type GatewayInfo } from "./trajectory.ts";
import type { GatewayCall, PostedReward } from "./types.ts";
import type { Upstream } from "./upstream.ts";
import { faultKey, postWithFaults, unreachableFailure } from "./upstream-faults.ts";

export const EPISODE_HEADER = "x-agentrl-episode-id";

export interface GatewayOptions {
  upstream: Upstream;
  /** Policy id written into trajectories (default: the upstream's model). */
  policyId?: string;
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
  token?: string;
  allowRemote?: boolean;
  /** Host names answered besides loopback and the bound address (`--allow-host`). */
  allowHosts?: readonly string[];
  /** Largest request body (default 4 MiB). */
  maxBodyBytes?: number;
  /** Connection timeouts (default `SERVER_TIMEOUTS`, src/http/boundary.ts; smaller in tests). */
  timeouts?: Partial<ServerTimeouts>;
  /** Milliseconds an episode may stay idle before it is ended as failed (default 1 hour). */
  episodeTtlMs?: number;
  /** Calls one episode may make (default 4096). */
  maxEpisodeCalls?: number;
  /** Bytes of requests and responses one episode may hold (default 256 MiB). */
  maxEpisodeBytes?: number;
  onCall?: (call: GatewayCall) => void;
  onEpisode?: (episode: BuiltEpisode) => void;
  log?: (line: string) => void;
}

export interface FinishOptions {
  finalAnswer: string | null;
  error?: string;
  /** The failure's class, when it is known (an expired episode: its agent never ended it). */
  failure?: Failure;
}

export interface Gateway {
  /** e.g. `http://127.0.0.1:8100` (no `/v1`). */
  readonly url: string;
  readonly model: string;
  readonly stats: {
    calls: number;
    failedCalls: number;
    prefixBreaks: number;
    episodes: number;
    /** Calls stored without ids because the server has none (`info.gateway.textOnlyCalls`). */
    textOnlyCalls: number;
  };
  /** Base URL an OpenAI client of episode `id` uses. */
  episodeURL(id: string): string;
  /** Base URL of slot `slot` (no `/v1`): its calls belong to the episode bound to it now. */
  slotURL(slot: string): string;
  /** Names the episode slot `slot` runs (null: none; its calls are then refused). */
  bindSlot(slot: string, episodeId: string | null): void;
  openEpisode(id: string, meta?: EpisodeMeta): void;
  postReward(id: string, reward: PostedReward): void;
  /** Ends the episode: aborts its in-flight calls and builds its trajectory. */
  finishEpisode(id: string, options: FinishOptions): BuiltEpisode;
  close(): Promise<void>;
}

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  activeFaultPlan(); // a malformed AGENTRL_FAULTS fails at start, not as an unreachable upstream
  const host = options.host ?? "127.0.0.1";
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const warning = checkBind("agentrl gateway", host, { token: options.token, insecure: options.allowRemote });
  if (warning) log(warning);
  const limits = {
    ttlMs: options.episodeTtlMs ?? EPISODE_LIMITS.ttlMs,
    maxCalls: options.maxEpisodeCalls ?? EPISODE_LIMITS.maxCalls,
    maxBytes: options.maxEpisodeBytes ?? EPISODE_LIMITS.maxBytes,
  };
  const { upstream } = options;
  const profile = kindProfile(upstream.server.kind);
  // A server of no known kind (an `httpUpstream` built without one, as verl's rollout servers are)
  // is asked for ids in every unstreamed way vLLM and SGLang honour; ids are then read from every
  // server's fields.
  const assumed = upstream.server.detectedBy === "assumed";
  const askFields: typeof profile.askFields = (options) =>
    assumed && !options.stream
      ? { ...profile.askFields(options), ...kindProfile("sglang").askFields(options) }
      : profile.askFields(options);
  const tokenDigest = options.token ? sha256(options.token) : null;
  const maxBody = options.maxBodyBytes ?? 4 << 20;
  const registry = new EpisodeRegistry();
  const slots = new SlotTable();
  const stats = { calls: 0, failedCalls: 0, prefixBreaks: 0, episodes: 0, textOnlyCalls: 0 };
  const policyId = options.policyId ?? upstream.model;
  let anonymous = 0;
  const conversations = new ConversationStore();
  const toolArguments = new ToolArgumentStore();

  const finish = (id: string, finishOptions: FinishOptions): BuiltEpisode => {
    const episode = registry.close(id) ?? registry.open(id);
    registry.close(id);
    const error = finishOptions.error ?? episode.error ?? undefined;
    const built = buildTrajectory(episode.calls, {
      episodeId: id,
      taskId: episode.meta.taskId ?? id,
      family: episode.meta.family ?? "agent",
      policyId,
      seed: episode.seed,
      finalAnswer: finishOptions.finalAnswer,
      ...(error ? { error } : {}),
      reward: episode.reward,
      server: { ...upstream.server, tokenIds: upstream.tokenIds },
    });
    if (finishOptions.failure) built.trajectory.failure = finishOptions.failure;
    // A limit the episode hit is its agent's failure, unless the infrastructure failed it first.
    else if (episode.failure && built.trajectory.failure?.class !== "infra")
      built.trajectory.failure = episode.failure;
    stats.prefixBreaks += built.prefixBreaks;
    stats.textOnlyCalls += (built.trajectory.info?.gateway as GatewayInfo | undefined)?.textOnlyCalls ?? 0;
    stats.episodes++;
    options.onEpisode?.(built);
    return built;
  };

  const record = (episode: EpisodeLog, call: GatewayCall) => {
    episode.calls.push(call);
    episode.bytes += callBytes(call);
    episode.lastActive = Date.now();
    stats.calls++;
    if (call.error) stats.failedCalls++;
    try {
      options.onCall?.(call);
    } catch (error) {
      log(`agentrl gateway: recording a call failed: ${(error as Error).message}`);
    }
  };

  /**
   * Forwards one chat request upstream and records it. With `res` (the chat route) a stream is piped
   * through and an upstream error answered as it came; without (the Responses route) errors throw.
   * Returns the completion, or null when `res` was already answered.
   */
  const forward = async (
    episode: EpisodeLog,
    asked: Record<string, unknown>,
    api: GatewayCall["api"],
    res: ServerResponse | null,
  ): Promise<Record<string, unknown> | null> => {
    if (!Array.isArray(asked.messages) || asked.messages.length === 0)
      throw new RequestError(400, "messages: expected a non-empty array", "messages");
    const limit = limitReached(episode, limits);
    if (limit) {
      episode.error ??= limit.message;
      episode.failure ??= limit;
      throw new RequestError(413, limit.message, null, "episode_limit");
    }
    const seq = episode.nextSeq++;
    const stream = res !== null && asked.stream === true;
    const tools = Array.isArray(asked.tools) && asked.tools.length > 0;
    // A server that has no ids on this streamed path is asked unstreamed; the agent still gets a stream.
    const upstreamStream =
      stream && !(upstream.tokenIds && profile.fetchUnstreamed({ tools, version: upstream.server.version }));
    const request: Record<string, unknown> = {
      ...asked,
      model: upstream.model,
      stream: upstreamStream,
      ...(asked.seed == null ? { seed: episode.callSeed(seq) } : {}),
      ...(upstream.tokenIds ? askFields({ stream: upstreamStream, tools }) : {}),
      ...(upstreamStream ? { stream_options: { include_usage: true } } : {}),
    };
    if (!upstreamStream) delete request.stream_options;
    // The agent's own number of alternatives wins over the one the gateway asks for with logprobs.
    if (asked.top_logprobs !== undefined) request.top_logprobs = asked.top_logprobs;
    // vLLM drops ids and log-probs with `include_reasoning: false`: the reasoning is asked for and
    // taken out of the agent's answer here instead.
    const hideReasoning = upstream.tokenIds && request.include_reasoning === false;
    if (hideReasoning) delete request.include_reasoning;
    const startedAt = new Date();
    const started = performance.now();
    const base = { episodeId: episode.id, seq, api, startedAt: startedAt.toISOString(), stream, request };
    let injected = false;
    const failed = (
      error: string,
      response: Record<string, unknown> | null = null,
      failure?: Failure,
    ): GatewayCall => ({
      ...base,
      latencyMs: performance.now() - started,
      response,
      promptTokenIds: null,
      choices: [],
      usage: null,
      error,
      ...(failure ? { failure: injected ? { ...failure, injected } : failure } : {}),
    });
    episode.inFlight++;
    let heldDone = false;
    try {
      let upstreamResponse: Response;
      try {
        // The task id lets `agentrl serve` hand a scripted policy its task (other servers ignore it).
        const taskId = episode.meta.taskId;
        // The episode id lets `agentrl serve` keep the episode's KV cache between its calls.
        ({ response: upstreamResponse, injected } = await postWithFaults(
          upstream,
          faultKey(episode, seq),
          request,
          episode.controller.signal,
          { [EPISODE_ID_HEADER]: episode.id, ...(taskId ? { [TASK_ID_HEADER]: taskId } : {}) },
        ));
      } catch (error) {
        injected = error instanceof InjectedFault;
        const message = `the upstream could not be reached: ${(error as Error).message}`;
        record(episode, failed(message, null, unreachableFailure(message)));
        if (episode.controller.signal.aborted)
          throw new RequestError(499, "the episode ended", null, "episode_ended");
        throw new RequestError(502, "the upstream model could not be reached", null, "upstream_error");
      }
      if (!upstreamResponse.ok) {
        const answer = await upstream.readJson(upstreamResponse).catch(() => null);
        // Nested or flat (SGLang), the server's words go into the record: a context-length 400 is
        // then told apart from a request the server rejected as malformed.
        const said = upstreamErrorMessage(answer);
        const message = `the upstream answered ${upstreamResponse.status}${said ? `: ${said}` : ""}`;
        record(
          episode,
          failed(message, answer as never, httpStatusFailure(upstreamResponse.status, message)),
        );
        if (res === null) {
          throw new RequestError(
            upstreamResponse.status,
            said ?? `upstream status ${upstreamResponse.status}`,
          );
        }
        // A flat body (SGLang's) is answered nested, the shape OpenAI clients read.
        const nestedAnswer =
          isRecord(answer) && isRecord(answer.error)
            ? answer
            : {
                error: {
                  message: said ?? `upstream status ${upstreamResponse.status}`,
                  type:
                    (isRecord(answer) && typeof answer.type === "string" && answer.type) || "upstream_error",
                  param: null,
                  code: upstreamResponse.status,
                },
              };
        sendJson(res, upstreamResponse.status, nestedAnswer);
        return null;
      }
      let completion: unknown;
      if (
        res &&
        upstreamStream &&
        (upstreamResponse.headers.get("content-type") ?? "").includes("text/event-stream")
      ) {
        completion = await passStream(upstreamResponse, res, upstream.maxResponseBytes, (chunk) =>
          forAgent(chunk, asked, hideReasoning),
        );
        // The stream's `[DONE]` is held back until the call is recorded: an agent that ends its
        // episode on it then finds every call in the trajectory.
        heldDone = isRecord(completion) && completion[STREAM_DONE] === true;
        if (isRecord(completion)) delete completion[STREAM_DONE];
      } else {
        try {
          completion = await upstream.readJson(upstreamResponse);
        } catch (error) {
          completion = { error: (error as Error).message };
        }
      }
      const midStream = isRecord(completion) ? completion[MID_STREAM_ERROR] : undefined;
      const parsed =
        typeof midStream === "string"
          ? { error: `the upstream failed mid-stream: ${midStream}` }
          : parseCompletion(completion, upstream.server.detectedBy === "assumed" ? "unknown" : profile.kind);
      if ("error" in parsed) {
        const message =
          typeof (completion as { error?: unknown })?.error === "string"
            ? `malformed answer from the upstream: ${(completion as { error: string }).error}`
            : parsed.error;
        const code =
          typeof midStream === "string"
            ? "upstream-stream-error"
            : /without \[DONE\]/.test(message)
              ? "upstream-truncated"
              : "upstream-malformed";
        if (isRecord(completion)) delete completion[MID_STREAM_ERROR];
        record(
          episode,
          failed(message, isRecord(completion) ? completion : null, infraFailure(code, message)),
        );
        episode.error ??= message;
        if (res?.headersSent) return null;
        throw new RequestError(502, "the upstream model returned a malformed answer", null, "upstream_error");
      }
      if (upstream.tokenIds && parsed.promptTokenIds === null && upstream.promptIds) {
        parsed.promptTokenIds = await upstream
          .promptIds(request, episode.controller.signal)
          .catch(() => null);
      }
      const short = upstream.tokenIds
        ? tokenIdsVerdict(parsed, { checkUsage: profile.kind !== "llamacpp" })
        : null;
      if (short) {
        const message = `${short.message} (${profile.label}${upstream.server.version ? ` ${upstream.server.version}` : ""}): the turn cannot be stored with its ids`;
        record(episode, {
          ...failed(message, completion as Record<string, unknown>, { ...short, message }),
          promptTokenIds: parsed.promptTokenIds,
          choices: parsed.choices,
          usage: parsed.usage,
        });
        episode.error ??= message;
        if (res?.headersSent) return null;
        throw new RequestError(
          502,
          `the upstream model returned no exact token ids: ${short.message}`,
          null,
          "upstream_error",
        );
      }
      record(episode, {
        ...base,
        latencyMs: performance.now() - started,
        response: completion as Record<string, unknown>,
        ...parsed,
      });
      if (res && stream && !res.headersSent) {
        // Asked unstreamed (this server has no ids on its streamed path): the agent's stream is written here.
        sendCompletionStream(
          res,
          forAgent(completion as Record<string, unknown>, asked, hideReasoning),
          asked,
        );
        return null;
      }
      return res?.headersSent ? null : (completion as Record<string, unknown>);
    } finally {
      episode.inFlight--;
      if (res?.headersSent && !res.writableEnded) res.end(heldDone ? "data: [DONE]\n\n" : undefined);
    }
  };

  const completions = async (episode: EpisodeLog, body: unknown, res: ServerResponse) => {
    if (!isRecord(body)) throw new RequestError(400, "the request body must be a JSON object");
    const completion = await forward(episode, body, "chat", res);
    if (completion) sendJson(res, 200, forAgent(completion, body, body.include_reasoning === false));
  };

  const responsesRoute = async (episode: EpisodeLog, body: unknown, res: ServerResponse) => {
    if (!isRecord(body)) throw new RequestError(400, "the request body must be a JSON object");
    const translated = responsesToChat(body, conversations);
    const completion = (await forward(episode, translated.chat, "responses", null)) as Record<
      string,
      unknown
    >;
    const response = chatToResponse(completion, body, translated);
    conversations.remember(response.id, [...translated.messages, ...assistantMessages(completion)]);
    if (body.stream === true) sendResponseStream(res, response);
    else sendJson(res, 200, response);
  };

  const messagesRoute = async (episode: EpisodeLog, body: unknown, res: ServerResponse) => {
    const chat = messagesToChat(body, episode.id, toolArguments);
    const completion = (await forward(episode, chat, "messages", null)) as Record<string, unknown>;
    const message = chatToMessage(completion, body as Record<string, unknown>, episode.id, toolArguments);
    if ((body as Record<string, unknown>).stream === true) sendMessageStream(res, message);
    else sendJson(res, 200, message);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname.replace(/\/+$/, "") || "/";
    if (path === "/health") return sendJson(res, 200, { status: "ok" });
    // The Anthropic SDK sends its key as `x-api-key`.
    if (
      tokenDigest &&
      !authorized(req.headers.authorization, tokenDigest) &&
      !apiKeyAuthorized(req.headers["x-api-key"], tokenDigest)
    ) {
      res.setHeader("www-authenticate", "Bearer");
      throw new RequestError(401, "missing or invalid bearer token", null, "invalid_api_key");
    }
    const slotMatch = /^\/slots\/([^/]+)(\/.*)$/.exec(path);
    const match = /^\/episodes\/([^/]+)(\/.*)$/.exec(path) ?? slotMatch;
    let episodeId: string | undefined;
    let rest = path;
    if (match) {
      episodeId = safeDecode(match[1]);
      rest = match[2];
      if (slotMatch) {
        const named = req.headers[SLOT_EPISODE_HEADER];
        const found = slots.slotEpisode(episodeId, typeof named === "string" && named ? named : undefined);
        if ("refused" in found) throw new RequestError(409, found.refused, null, "episode_ended");
        episodeId = found.episodeId;
      }
    } else {
      const header = req.headers[EPISODE_HEADER];
      if (typeof header === "string" && header) episodeId = header;
    }
    const openEpisode = (id: string) => {
      if (registry.isEnded(id))
        throw new RequestError(409, `episode ${id} has ended; use a new episode id`, null, "episode_ended");
      let episode: EpisodeLog;
      try {
        episode = registry.open(id);
      } catch (error) {
        throw new RequestError(400, (error as Error).message, null, "invalid_episode");
      }
      // A client that names its task (as agentrl's OpenAI policy does) names the episode's task.
      const named = req.headers[TASK_ID_HEADER];
      if (episode.meta.taskId === undefined && typeof named === "string" && named.length <= 500)
        episode.meta.taskId = named;
      episode.lastActive = Date.now();
      return episode;
    };
    if (rest === "/v1/models") {
      return sendJson(res, 200, {
        object: "list",
        data: [{ id: upstream.model, object: "model", created: 0, owned_by: "agentrl-gateway" }],
      });
    }
    if (rest === "/v1/responses") {
      if (req.method !== "POST") throw new RequestError(405, "use POST");
      const body = await readJson(req, maxBody);
      const id = episodeId ?? `call-${++anonymous}-${Date.now().toString(36)}`;
      const episode = openEpisode(id);
      try {
        return await responsesRoute(episode, body, res);
      } finally {
        if (episodeId === undefined) finish(id, { finalAnswer: null });
      }
    }
    // `/v1/v1/messages`: the Anthropic SDK appends `/v1/messages` to the `…/v1` base URL an agent is handed.
    if (rest === "/v1/messages" || rest === "/v1/v1/messages") {
      if (req.method !== "POST") throw new RequestError(405, "use POST");
      const body = await readJson(req, maxBody);
      const id = episodeId ?? `call-${++anonymous}-${Date.now().toString(36)}`;
      const episode = openEpisode(id);
      try {
        return await messagesRoute(episode, body, res);
      } finally {
        if (episodeId === undefined) finish(id, { finalAnswer: null });
      }
    }
    if (rest === "/v1/chat/completions") {
      if (req.method !== "POST") throw new RequestError(405, "use POST");
      const body = await readJson(req, maxBody);
      const id = episodeId ?? `call-${++anonymous}-${Date.now().toString(36)}`;
      const episode = openEpisode(id);
      try {
        return await completions(episode, body, res);
      } finally {
        if (episodeId === undefined) finish(id, { finalAnswer: null });
      }
    }
    if (match && (rest === "/reward" || rest === "/end")) {
      if (req.method !== "POST") throw new RequestError(405, "use POST");
      const body = (await readJson(req, maxBody)) as Record<string, unknown> | null;
      const id = episodeId as string;
      if (rest === "/reward") {
        openEpisode(id).reward = parseReward(body);
        return sendJson(res, 200, { ok: true });
      }
      const ended = openEpisode(id);
      // The task, when the episode's calls did not name it (a world task id lets the recorder score it).
      const taskId = body?.taskId;
      if (taskId !== undefined) {
        if (typeof taskId !== "string" || taskId.length === 0 || taskId.length > 500)
          throw new RequestError(
            400,
            "taskId: expected a task id (a string of 1 to 500 characters)",
            "taskId",
          );
        ended.meta.taskId = taskId;
      }
      const answer = body?.answer;
      const built = finish(id, {
        finalAnswer: typeof answer === "string" ? answer : null,
        ...(typeof body?.error === "string" ? { error: body.error } : {}),
      });
      const { trajectory } = built;
      return sendJson(res, 200, {
        id: trajectory.id,
        turns: trajectory.turns.length,
        endReason: trajectory.endReason,
        prefixBreaks: built.prefixBreaks,
      });
    }
    throw new RequestError(404, `no route ${req.method} ${path}`, null, "not_found");
  };

  const server = createJsonServer(withAnthropicErrors(handle, log), {
    label: "agentrl gateway",
    log,
    hosts: new HostPolicy(host, options.allowHosts),
    ...(options.timeouts ? { timeouts: options.timeouts } : {}),
  });
  // Episodes left without `/end` are ended (and recorded) once idle past their TTL.
  const sweep = setInterval(
    () => {
      for (const episode of registry.expired(Date.now(), limits.ttlMs)) {
        const message = `episode expired: no call, reward or /end for ${limits.ttlMs / 1000} s (episodeTtlMs, --episode-ttl)`;
        try {
          finish(episode.id, {
            finalAnswer: null,
            error: message,
            failure: { class: "agent", code: "episode-expired", message },
          });
        } catch (error) {
          // A timer has no caller to throw to: said, not swallowed.
          log(`agentrl gateway: ending expired episode ${episode.id} failed: ${(error as Error).message}`);
        }
      }
    },
    Math.max(10, Math.min(limits.ttlMs / 4, 60_000)),
  );
  sweep.unref();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  return {
    url,
    model: upstream.model,
    stats,
    episodeURL: (id) => `${url}/episodes/${encodeURIComponent(id)}/v1`,
    slotURL: (slot) => `${url}/slots/${encodeURIComponent(slot)}`,
    bindSlot: (slot, episodeId) => slots.bind(slot, episodeId),
    openEpisode: (id, meta) => void registry.open(id, meta),
    postReward: (id, reward) => {
      registry.open(id).reward = reward;
    },
    finishEpisode: finish,
    async close() {
      clearInterval(sweep);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      await upstream.close?.();
    },
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function parseReward(body: Record<string, unknown> | null): PostedReward {
  const reward = body?.reward;
  if (reward !== undefined && reward !== null && (typeof reward !== "number" || !Number.isFinite(reward)))
    throw new RequestError(400, "reward: expected a finite number or null", "reward");
  const turnRewards: Record<string, number> = {};
  const turns = body?.turnRewards;
  if (turns !== undefined) {
    if (!isRecord(turns))
      throw new RequestError(400, "turnRewards: expected {turnIndex: number}", "turnRewards");
    for (const [index, value] of Object.entries(turns)) {
      if (!/^\d+$/.test(index) || typeof value !== "number" || !Number.isFinite(value))
        throw new RequestError(
          400,
          `turnRewards.${index}: expected a turn index and a finite number`,
          "turnRewards",
        );
      turnRewards[index] = value;
    }
  }
  return { ...(reward !== undefined ? { reward: reward as number | null } : {}), turnRewards };
}

/**
 * The completion (or a stream chunk) as the agent asked for it: token ids (every server's fields)
 * and log-probs only if it asked, reasoning only if it did not turn it off.
 */
function forAgent(
  completion: Record<string, unknown>,
  asked: Record<string, unknown>,
  hideReasoning = false,
): Record<string, unknown> {
  const wantIds = asked.return_token_ids === true;
  const wantLogprobs = asked.logprobs === true;
  const out: Record<string, unknown> = { ...completion };
  if (!wantIds) {
    delete out.prompt_token_ids;
    delete out.sglext;
  }
  if (!Array.isArray(completion.choices)) return out;
  out.choices = (completion.choices as Record<string, unknown>[]).map((choice) => {
    const copy = { ...choice };
    if (!wantIds) for (const field of ID_FIELDS) delete copy[field];
    if (!wantLogprobs && copy.logprobs !== undefined) copy.logprobs = null;
    for (const key of ["message", "delta"]) {
      const message = copy[key];
      if (hideReasoning && isRecord(message)) {
        const { reasoning_content: _content, reasoning: _reasoning, ...rest } = message;
        copy[key] = rest;
      }
    }
    return copy;
  });
  return out;
}

/** Key of the assembled completion that carries a mid-stream error chunk's message. */
const MID_STREAM_ERROR = "__agentrl_mid_stream_error";
/** Key of the assembled completion that says the upstream's stream ended with `[DONE]`. */
const STREAM_DONE = "__agentrl_stream_done";

/**
 * Pipes the upstream's event stream to the agent, each chunk as the agent asked for it (`strip`),
 * and returns the assembled completion (a mid-stream error chunk is passed on, and marked).
 */
async function passStream(
  upstreamResponse: Response,
  res: ServerResponse,
  maxBytes: number,
  strip: (chunk: Record<string, unknown>) => Record<string, unknown>,
): Promise<unknown> {
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  const assembler = new StreamAssembler();
  const decoder = new TextDecoder();
  let size = 0;
  let pending = "";
  const forward = (block: string) => {
    const data = block
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trimStart())
      .join("\n");
    let out = block;
    if (data === "[DONE]") return;
    if (data) {
      try {
        const chunk = JSON.parse(data) as unknown;
        if (isRecord(chunk)) out = `data: ${JSON.stringify(strip(chunk))}`;
      } catch {
        // Not JSON: passed as it came; the assembler records the stream as malformed.
      }
    }
    res.write(`${out}\n\n`);
  };
  for await (const chunk of upstreamResponse.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (size > maxBytes) {
      res.end();
      return { error: `the stream is larger than ${maxBytes} bytes` };
    }
    const text = decoder.decode(chunk, { stream: true });
    assembler.push(text);
    pending += text.replace(/\r\n/g, "\n");
    let cut = pending.indexOf("\n\n");
    while (cut >= 0) {
      forward(pending.slice(0, cut));
      pending = pending.slice(cut + 2);
      cut = pending.indexOf("\n\n");
    }
  }
  if (pending.trim()) forward(pending);
  // The caller ends the response (with the held `[DONE]`) once the call is recorded.
  const done = assembler.done ? { [STREAM_DONE]: true } : {};
  if (assembler.error) return { error: assembler.error, ...done };
  if (assembler.upstreamError !== null)
    return { ...assembler.completion(), [MID_STREAM_ERROR]: assembler.upstreamError, ...done };
  if (!assembler.done) return { error: "the stream ended without [DONE]" };
  return { ...assembler.completion(), ...done };
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
