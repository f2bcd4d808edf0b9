/**
 * `--upstream` / `--policy` → the gateway's upstream: `openai:<base-url>#<model>` is used as it is
 * (key from `OPENAI_API_KEY` or `AGENTRL_API_KEY`, held in memory only), its server kind named
 * (`--upstream-kind`) or detected once here (server-kind.ts); a checkpoint directory or a
 * scripted policy name is served in process by `agentrl serve`'s server on a free loopback port,
 * which returns exact token ids and log-probs.
 */
import { basename, resolve } from "node:path";
import { detectServer, type UpstreamKind } from "../policy/openai/server-kind.ts";
import { parseOpenAiSpec } from "../policy/openai/spec.ts";
import { resolvePolicy } from "../policy/resolve.ts";
import { SCRIPTED_POLICY_NAMES } from "../policy/scripted/index.ts";
import { startChatServer } from "../serve/server.ts";
import { worldTaskResolver } from "../serve/world-tasks.ts";
import type { Policy, Tokenizer } from "../types/policy.ts";
import { httpUpstream, type Upstream } from "./upstream.ts";

export interface ResolveUpstreamOptions {
  /** Sampling defaults of an in-process server (requests may override them). */
  temperature?: number;
  topP?: number;
  /** Most tokens per call when a request omits max_tokens (in-process server; default 32). */
  maxTokens?: number;
  /** Ask an `openai:` upstream for vLLM's token ids (default true). */
  tokenIds?: boolean;
  apiKey?: string;
  /** The server kind of an `openai:` upstream (`--upstream-kind`); default: detected. */
  upstreamKind?: UpstreamKind;
  /** Load the policy of a sampling setting (default `resolvePolicy(spec, sampling)`): RL passes its live policy. */
  loadPolicy?: (sampling: { temperature: number; topP: number }) => Policy | Promise<Policy>;
}

export async function resolveUpstream(spec: string, options: ResolveUpstreamOptions = {}): Promise<Upstream> {
  const endpoint = parseOpenAiSpec(spec);
  if (endpoint) {
    const apiKey = options.apiKey ?? process.env.OPENAI_API_KEY ?? process.env.AGENTRL_API_KEY;
    const server = options.upstreamKind
      ? { kind: options.upstreamKind, version: null, detectedBy: "named (--upstream-kind)" }
      : await detectServer(endpoint.baseURL, apiKey ? { apiKey } : {});
    return httpUpstream({
      ...endpoint,
      ...(apiKey ? { apiKey } : {}),
      tokenIds: options.tokenIds ?? true,
      server,
    });
  }
  const model = (SCRIPTED_POLICY_NAMES as readonly string[]).includes(spec) ? spec : basename(resolve(spec));
  const load = options.loadPolicy ?? ((sampling) => resolvePolicy(spec, sampling));
  let tokenizer: Tokenizer | undefined;
  const server = await startChatServer({
    loadPolicy: async (sampling) => {
      const policy = await load(sampling);
      tokenizer ??= policy.tokenizer;
      return policy;
    },
    model,
    port: 0,
    defaults: {
      ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
      ...(options.topP !== undefined ? { topP: options.topP } : {}),
      ...(options.maxTokens !== undefined ? { maxTokens: options.maxTokens } : {}),
    },
    resolveTask: worldTaskResolver(),
    log: () => {},
  });
  const upstream = httpUpstream({
    baseURL: server.url,
    model,
    tokenIds: true,
    server: { kind: "agentrl", version: null, detectedBy: "in-process" },
  });
  return {
    ...upstream,
    // Known once the first request has loaded the policy.
    get tokenizer() {
      return tokenizer;
    },
    close: () => server.close(),
  };
}
