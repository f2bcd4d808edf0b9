/**
 * `agentrl agent-server`: one agentrl episode per HTTP request, for verl's `agentrl_agent` loop
 * (python/agentrl_agent_loop.py). The contract is agent-server.md.
 *
 *   POST /v1/episodes   run an episode (agent-server-episode.ts) and answer verl's fields
 *   GET  /health        running/waiting/episodes/failed counts (no auth)
 *
 * Each distinct (rollout server, model, sampling setting) gets one in-process recording gateway
 * (src/gateway) in front of it, so every episode's calls are recorded with exact ids; the gateway's
 * upstream forces the request's temperature/top_p/top_k on every call (a user's agent cannot pick
 * its own). At most `maxGateways` idle gateways are kept (least recently used closed first).
 * A request may name its rollout server only within `upstreamAllow` (and, with `upstreamAllowLocal`,
 * this host's own addresses; upstream-allow.ts; default: only `--upstream`'s): the agent-server
 * would otherwise make requests wherever a client asks.
 * At most `concurrency` episodes run at once, at most `maxQueue` wait (more get 503); each runs
 * under `episodeTimeoutMs`. An episode's own failure (upstream error, timeout, malformed
 * tool calls) is answered 200 as a failed episode with reward 0; only a malformed request is a 400.
 *
 * Safety: the door checks of src/http/boundary.ts (Host, Origin, application/json, timeouts);
 * 127.0.0.1 by default; another address needs a token (or `allowRemote`); the token is compared
 * in constant time; bodies over `maxBodyBytes` get 413.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { AgentFunction } from "../agents/types.ts";
import { LruCache } from "../core/lru-cache.ts";
import { DEFAULT_BUDGETS, type EpisodeBudgets } from "../env/run-episodes.ts";
import { worldToolsFor } from "../env/task-set.ts";
import { startGateway } from "../gateway/server.ts";
import type { GatewayCall } from "../gateway/types.ts";
import { httpUpstream, readLimited, type Upstream } from "../gateway/upstream.ts";
import { checkBind, HostPolicy } from "../http/boundary.ts";
import { authorized, createJsonServer, readJson, sendJson, sha256 } from "../http/json.ts";
import { RequestError } from "../http/request-error.ts";
import { createSemaphore } from "../policy/openai/semaphore.ts";
import { type RewardSpec, resolveRewardSpec } from "../reward/spec.ts";
import { uniformNoise } from "../tools/index.ts";
import { type Failure, infraFailure } from "../types/failure.ts";
import type { Task } from "../types/task.ts";
import type { AnyTool } from "../types/tool.ts";
import { getVerifier, type VerifierName } from "../verify/index.ts";
import { checkAnswer } from "../world/index.ts";
import {
  type EpisodeGateway,
  type EpisodeSampling,
  type RunEpisodeResult,
  runVerlEpisode,
  type VerlEpisode,
} from "./agent-server-episode.ts";
import { type EpisodeRequest, parseEpisodeRequest, requestTask } from "./agent-server-request.ts";
import { statusFailure } from "./episode-failure.ts";
import { type HostInterfaces, rolloutAllowlist } from "./upstream-allow.ts";

export interface AgentServerOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8300; 0 picks a free port. */
  port?: number;
  token?: string;
  allowRemote?: boolean;
  /** Host names answered besides loopback and the bound address (`--allow-host`). */
  allowHosts?: readonly string[];
  /**
   * URL prefixes a request's `upstream.base_url` may name (`--upstream-allow`); `upstream`'s base
   * URL is always allowed. Default: none besides it.
   */
  upstreamAllow?: readonly string[];
  /**
   * Also allow any port of every address of this host's network interfaces
   * (`--upstream-allow-local`): where verl's rollout servers listen (upstream-allow.ts).
   */
  upstreamAllowLocal?: boolean;
  /** The host's interfaces (default `os.networkInterfaces`; a test gives a double). */
  interfaces?: HostInterfaces;
  /** Idle per-(rollout server, model, sampling) gateways kept open (default 16). */
  maxGateways?: number;
  /** Tasks a request may name by `task_id` (a task file, or world tasks). */
  tasks?: readonly Task[];
  /** Checks answers of tasks without a world (file tasks). World tasks use the world's check. */
  verifier?: VerifierName;
  /** Tools of tasks without a world (default none); world tasks get their world's tools. */
  fileTools?: (task: Task, seed: number) => readonly AnyTool[];
  /** Total tool failure rate of world tools (file tools bring their own noise). */
  noise?: number;
  budgets?: Partial<EpisodeBudgets>;
  /** Reward spec or preset name (default `exact-match`). */
  reward?: RewardSpec | string;
  /** Run this agent instead of agentrl's episode loop. */
  agent?: AgentFunction;
  /** The rollout server of requests that name none. */
  upstream?: Upstream;
  /** Episodes running at once (default 64). */
  concurrency?: number;
  /** Requests waiting for a slot before new ones get 503 (default 4096). */
  maxQueue?: number;
  /** Milliseconds one episode may run (default 600 000). */
  episodeTimeoutMs?: number;
  /** Largest request body (default 8 MiB). */
  maxBodyBytes?: number;
  /** Called as each episode ends (the store writes it here). */
  onEpisode?: (result: RunEpisodeResult) => void;
  log?: (line: string) => void;
}

export interface AgentServer {
  /** e.g. `http://127.0.0.1:8300`. */
  readonly url: string;
  readonly stats: {
    running: number;
    waiting: number;
    episodes: number;
    failed: number;
    /** Gateways open now, and closed so far to stay within `maxGateways`. */
    gateways: number;
    gatewaysClosed: number;
  };
  close(): Promise<void>;
}

/** Largest `GET <base>/models` answer read. */
const MAX_MODELS_BYTES = 1 << 20;

/**
 * An upstream whose calls carry the episode's sampling settings whatever the client sent. Closing
 * its gateway leaves the upstream open: it is shared (the `--upstream` server) or has nothing to close.
 */
function samplingUpstream(upstream: Upstream, sampling: EpisodeSampling): Upstream {
  const { close: _shared, ...rest } = upstream;
  return {
    ...rest,
    post: (body, signal, headers) =>
      upstream.post(
        {
          ...body,
          temperature: sampling.temperature,
          top_p: sampling.topP,
          ...(sampling.topK !== null && sampling.topK > 0 ? { top_k: sampling.topK } : {}),
        },
        signal,
        headers,
      ),
  };
}

/** A failure to name the rollout server's model, with its class. */
class ModelListingError extends Error {
  readonly failure: Failure;

  constructor(message: string, failure: Failure) {
    super(message);
    this.failure = failure;
  }
}

/** The first model a rollout server lists (`GET <base>/models`). */
async function listedModel(baseURL: string): Promise<string> {
  let response: Response;
  try {
    response = await fetch(`${baseURL}/models`, { signal: AbortSignal.timeout(15_000) });
  } catch (error) {
    const message = `GET ${baseURL}/models: ${(error as Error).message}`;
    throw new ModelListingError(message, infraFailure("upstream-unreachable", message));
  }
  if (!response.ok) {
    await response.body?.cancel();
    const message = `GET ${baseURL}/models answered ${response.status}`;
    throw new ModelListingError(message, statusFailure(response.status, message));
  }
  let body: { data?: { id?: unknown }[] };
  try {
    body = JSON.parse(await readLimited(response, MAX_MODELS_BYTES));
  } catch (error) {
    const message = `GET ${baseURL}/models: ${(error as Error).message}`;
    throw new ModelListingError(message, infraFailure("malformed-json", message));
  }
  const id = body.data?.[0]?.id;
  if (typeof id !== "string" || id === "") {
    const message = `GET ${baseURL}/models lists no model`;
    throw new ModelListingError(message, infraFailure("model-not-found", message));
  }
  return id;
}

/** A failed episode with nothing recorded (the rollout server could not even be named). */
function unreachable(task: Task, error: string, failure: Failure): VerlEpisode {
  return {
    episode_id: `unstarted-${randomBytes(6).toString("hex")}`,
    prompt_ids: [],
    response_ids: [],
    response_mask: [],
    response_logprobs: null,
    reward_score: 0,
    turn_scores: [],
    turn_spans: [],
    num_turns: 1,
    correct: false,
    end_reason: "policy-error",
    error: `task ${task.id}: ${error}`,
    failure,
    truncated: false,
    metrics: { generate_sequences: 0, tool_calls: 0, total: 0, prefix_breaks: 0 },
    extra_fields: {},
  };
}

export async function startAgentServer(options: AgentServerOptions): Promise<AgentServer> {
  const host = options.host ?? "127.0.0.1";
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const warning = checkBind("agentrl agent-server", host, {
    token: options.token,
    insecure: options.allowRemote,
  });
  if (warning) log(warning);
  const allowlist = rolloutAllowlist(
    {
      ...(options.upstream ? { upstream: options.upstream.baseURL } : {}),
      ...(options.upstreamAllow ? { upstreamAllow: options.upstreamAllow } : {}),
      ...(options.upstreamAllowLocal ? { upstreamAllowLocal: true } : {}),
    },
    options.interfaces,
  );
  const tokenDigest = options.token ? sha256(options.token) : null;
  const maxBody = options.maxBodyBytes ?? 8 << 20;
  const concurrency = options.concurrency ?? 64;
  const maxQueue = options.maxQueue ?? 4096;
  const timeoutMs = options.episodeTimeoutMs ?? 600_000;
  const reward = resolveRewardSpec(options.reward ?? "exact-match");
  const budgets: EpisodeBudgets = { ...DEFAULT_BUDGETS, ...options.budgets };
  const tasks = new Map((options.tasks ?? []).map((task) => [task.id, task]));
  const worldTools = worldToolsFor(options.noise ? { noise: uniformNoise(options.noise) } : {});
  const fileVerify = options.verifier ? getVerifier(options.verifier) : null;
  const slots = createSemaphore(concurrency);
  const closing = new AbortController();
  const stats = { running: 0, waiting: 0, episodes: 0, failed: 0, gateways: 0, gatewaysClosed: 0 };
  const maxGateways = options.maxGateways ?? 16;
  // Bounded like the gateways: a client may name many rollout servers under an allowed prefix.
  const models = new LruCache<string, Promise<string>>(maxGateways);
  /** Rollout servers already reported for answering without token ids. */
  const noIds = new Set<string>();
  type OpenGateway = EpisodeGateway & { close(): Promise<void> };
  const gateways = new LruCache<string, Promise<OpenGateway>>(maxGateways, (entry) => {
    void entry.then(
      async (opened) => {
        await opened.close();
        stats.gateways--;
        stats.gatewaysClosed++;
      },
      () => {},
    );
  });

  const modelOf = (baseURL: string): Promise<string> => {
    let model = models.get(baseURL);
    if (!model) {
      model = listedModel(baseURL);
      models.set(baseURL, model);
      // A server that was not up yet is asked again next time.
      model.catch(() => models.delete(baseURL));
    }
    return model;
  };

  const gatewayFor = (upstream: Upstream, sampling: EpisodeSampling) => {
    const key = JSON.stringify([upstream.baseURL, upstream.model, sampling]);
    let entry = gateways.get(key);
    if (!entry) {
      entry = (async () => {
        const calls = new Map<string, GatewayCall[]>();
        const apiKey = randomBytes(16).toString("hex");
        const gateway = await startGateway({
          upstream: samplingUpstream(upstream, sampling),
          token: apiKey,
          log,
          onCall: (call) => {
            const list = calls.get(call.episodeId);
            if (list) list.push(call);
            else calls.set(call.episodeId, [call]);
          },
        });
        return {
          gateway,
          apiKey,
          takeCalls(episodeId: string) {
            const list = calls.get(episodeId) ?? [];
            calls.delete(episodeId);
            return list;
          },
          close: () => gateway.close(),
        };
      })();
      void entry.then(
        () => stats.gateways++,
        () => gateways.delete(key),
      );
      gateways.set(key, entry);
    }
    return { key, entry };
  };

  const upstreamOf = async (request: EpisodeRequest): Promise<Upstream> => {
    if (request.upstream) {
      const baseURL = request.upstream.base_url.replace(/\/+$/, "");
      const model = request.upstream.model ?? (await modelOf(baseURL));
      return httpUpstream({ baseURL, model, tokenIds: true, timeoutMs });
    }
    if (options.upstream) return options.upstream;
    throw new RequestError(
      400,
      "upstream: required (the rollout server's base_url), the agent-server has no --upstream",
      "upstream",
    );
  };

  const episode = async (body: unknown): Promise<VerlEpisode> => {
    const request = parseEpisodeRequest(body);
    const task = requestTask(request, tasks);
    const world = task.worldSeed !== undefined;
    if (!world && !fileVerify)
      throw new RequestError(
        400,
        `task ${task.id} has no worldSeed: the agent-server needs --verifier to check its answers`,
        "task",
      );
    if (request.upstream && !allowlist.allows(request.upstream.base_url))
      throw new RequestError(403, allowlist.refusal(request.upstream.base_url), "upstream.base_url");
    const sampling: EpisodeSampling = {
      temperature: request.sampling?.temperature ?? 1,
      topP: request.sampling?.top_p ?? 1,
      topK: request.sampling?.top_k ?? null,
    };
    if (slots.active >= concurrency && slots.waiting >= maxQueue)
      throw new RequestError(503, `the agent-server has ${slots.waiting} episodes waiting (--max-queue)`);
    if (closing.signal.aborted) throw new RequestError(503, "the agent-server is shutting down");
    stats.waiting++;
    return slots.run(async () => {
      stats.waiting--;
      stats.running++;
      try {
        let upstream: Upstream;
        try {
          upstream = await upstreamOf(request);
        } catch (error) {
          if (error instanceof RequestError) throw error;
          stats.episodes++;
          stats.failed++;
          const message = `the rollout server: ${(error as Error).message}`;
          return unreachable(
            task,
            message,
            error instanceof ModelListingError
              ? error.failure
              : infraFailure("upstream-unreachable", message),
          );
        }
        const { key, entry } = gatewayFor(upstream, sampling);
        // In use: not closed while this episode runs, whatever the LRU says.
        gateways.pin(key);
        let result: RunEpisodeResult;
        try {
          const route = await entry;
          result = await runVerlEpisode(
            {
              task,
              sampling,
              ...(request.seed !== undefined ? { seed: request.seed } : {}),
              ...(request.response_length !== undefined ? { responseLength: request.response_length } : {}),
              ...(request.request_id ? { key: request.request_id } : {}),
              verl: {
                ...(request.index !== undefined ? { index: request.index } : {}),
                ...(request.raw_prompt !== undefined ? { rawPrompt: request.raw_prompt } : {}),
                logprobs: request.sampling?.logprobs ?? null,
              },
              signal: closing.signal,
            },
            {
              tools: world ? worldTools : (options.fileTools ?? (() => [])),
              verify: world ? checkAnswer : fileVerify!,
              budgets,
              reward,
              ...(options.agent ? { agent: options.agent } : {}),
              timeoutMs,
            },
            route,
          );
        } finally {
          gateways.unpin(key);
        }
        stats.episodes++;
        if (result.output.end_reason === "policy-error") stats.failed++;
        if (result.output.prompt_ids.length === 0 && result.output.end_reason !== "policy-error") {
          if (!noIds.has(upstream.baseURL)) log(`agent-server: WARNING ${result.output.error}`);
          noIds.add(upstream.baseURL);
        }
        try {
          options.onEpisode?.(result);
        } catch (error) {
          log(`agent-server: recording episode ${result.trajectory.id} failed: ${(error as Error).message}`);
        }
        return result.output;
      } finally {
        stats.running--;
      }
    });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method === "GET" && path === "/health") return sendJson(res, 200, { ok: true, ...stats });
    if (tokenDigest && !authorized(req.headers.authorization, tokenDigest))
      throw new RequestError(401, "missing or wrong bearer token");
    if (path === "/v1/episodes") {
      if (req.method !== "POST") throw new RequestError(405, `${req.method} ${path}: use POST`);
      return sendJson(res, 200, await episode(await readJson(req, maxBody)));
    }
    throw new RequestError(404, `no route ${req.method} ${path}`);
  };

  // Episodes run for minutes, but Node's request timeout ends once the request is received.
  const server = createJsonServer(handle, {
    label: "agent-server",
    log,
    hosts: new HostPolicy(host, options.allowHosts),
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 8300, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
    stats,
    async close() {
      closing.abort(new Error("the agent-server is shutting down"));
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections?.();
      const opened = await Promise.allSettled(gateways.clear());
      await Promise.all(
        opened.map((entry) => (entry.status === "fulfilled" ? entry.value.close() : undefined)),
      );
    },
  };
}
