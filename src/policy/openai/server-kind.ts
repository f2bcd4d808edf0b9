/**
 * The kind of OpenAI-compatible server behind an `openai:` upstream, and what each kind can give.
 * Token ids are an extension of the API, and every server puts them somewhere else (token-ids.ts
 * reads them); this file says how to ask for them and on which paths a server gives none.
 *
 *   vllm      `return_token_ids` (PR #22587, ≥ 0.10.2): top-level `prompt_token_ids` (first chunk
 *             when streamed), `choices[i].token_ids` (a delta per chunk). Before 0.12 (PR #29074)
 *             a streamed call with a tool parser drops the tool call's ids, so streamed calls with
 *             tools are fetched unstreamed there.
 *   sglang    `return_token_ids` / `return_prompt_token_ids`, unstreamed only: a streamed call with
 *             `return_token_ids` is a 400 (PR #30917), so every streamed call is fetched unstreamed.
 *   llamacpp  completion ids as `logprobs.content[i].id` (logprobs must be asked for; with tools and
 *             stream that is a 400, so such calls are fetched unstreamed); prompt ids are not
 *             returned, and are rebuilt with the server's own `/apply-template` and `/tokenize`.
 *   ollama    no ids at all: turns are stored text-only (labelled; training refuses them).
 *   openai    a hosted API or an unknown server: text-only, and nothing non-standard is sent.
 *   agentrl   `agentrl serve`: vLLM's fields, streamed or not.
 *
 * The one behaviour where a server cannot give ids on a streamed path: the gateway asks upstream
 * unstreamed and writes the event stream to the agent itself (docs/real-llms.md).
 */

export const UPSTREAM_KINDS = ["vllm", "sglang", "llamacpp", "ollama", "openai", "agentrl"] as const;
export type UpstreamKind = (typeof UPSTREAM_KINDS)[number];

/** What was found at an upstream: its kind, its version when it says, and how it was told. */
export interface ServerInfo {
  kind: UpstreamKind;
  version: string | null;
  /** `named` (`--upstream-kind`), `in-process`, or the probe that answered (`GET /version`, …). */
  detectedBy: string;
}

export interface KindProfile {
  kind: UpstreamKind;
  /** The server's name in messages. */
  label: string;
  /** Exact prompt and completion ids come back (on every path, once the gateway picks it). */
  tokenIds: boolean;
  /** What to add to a chat request so the server returns ids (empty when it cannot). */
  askFields(options: { stream: boolean; tools: boolean }): Record<string, unknown>;
  /** Whether a streamed call (with or without tools) must be fetched unstreamed to keep its ids. */
  fetchUnstreamed(options: { tools: boolean; version: string | null }): boolean;
  /** Prompt ids are rebuilt with `/apply-template` + `/tokenize` (llama.cpp). */
  rebuildPromptIds: boolean;
  /** What to do to train on this server (named in every refusal). */
  fix: string;
}

const TEXT_ONLY_FIX =
  "serve the model with vLLM (≥ 0.10.2), SGLang, the llama.cpp server or `agentrl serve`, which return token ids";

const PROFILES: Record<UpstreamKind, KindProfile> = {
  vllm: {
    kind: "vllm",
    label: "vLLM",
    tokenIds: true,
    askFields: () => ({ return_token_ids: true, logprobs: true }),
    // PR #29074 (0.12): streamed tool-parser output keeps its ids; before it they are dropped.
    fetchUnstreamed: ({ tools, version }) => tools && version !== null && versionBefore(version, [0, 12]),
    rebuildPromptIds: false,
    fix: "",
  },
  agentrl: {
    kind: "agentrl",
    label: "agentrl serve",
    tokenIds: true,
    askFields: () => ({ return_token_ids: true, logprobs: true }),
    fetchUnstreamed: () => false,
    rebuildPromptIds: false,
    fix: "",
  },
  sglang: {
    kind: "sglang",
    label: "SGLang",
    tokenIds: true,
    askFields: ({ stream }) =>
      stream ? {} : { return_token_ids: true, return_prompt_token_ids: true, logprobs: true },
    fetchUnstreamed: () => true,
    rebuildPromptIds: false,
    fix: "",
  },
  llamacpp: {
    kind: "llamacpp",
    label: "llama.cpp server",
    tokenIds: true,
    // logprobs' ids are the only completion ids; one alternative keeps `n_probs` (default 20) small.
    askFields: ({ stream, tools }) => (stream && tools ? {} : { logprobs: true, top_logprobs: 1 }),
    fetchUnstreamed: ({ tools }) => tools,
    rebuildPromptIds: true,
    fix: "",
  },
  ollama: {
    kind: "ollama",
    label: "Ollama",
    tokenIds: false,
    askFields: () => ({}),
    fetchUnstreamed: () => false,
    rebuildPromptIds: false,
    fix: TEXT_ONLY_FIX,
  },
  openai: {
    kind: "openai",
    label: "an OpenAI-compatible server that returns no token ids",
    tokenIds: false,
    askFields: () => ({}),
    fetchUnstreamed: () => false,
    rebuildPromptIds: false,
    fix: TEXT_ONLY_FIX,
  },
};

export function kindProfile(kind: UpstreamKind): KindProfile {
  return PROFILES[kind];
}

/** The help of `--upstream-kind`. */
export const UPSTREAM_KIND_HELP = `the server behind an openai: upstream (${UPSTREAM_KINDS.join(", ")}; default: detected from its routes)`;

/** `--upstream-kind`: one of the kinds, or an error naming them. */
export function parseUpstreamKind(value: string, field = "--upstream-kind"): UpstreamKind {
  if ((UPSTREAM_KINDS as readonly string[]).includes(value)) return value as UpstreamKind;
  throw new Error(`${field}: "${value}" is not a server kind; expected one of ${UPSTREAM_KINDS.join(", ")}`);
}

/** True when `version` (e.g. "0.11.2", "v0.12.0rc1") is below `[major, minor]`. */
export function versionBefore(version: string, [major, minor]: readonly [number, number]): boolean {
  const match = /(\d+)\.(\d+)/.exec(version);
  if (!match) return false;
  const [a, b] = [Number(match[1]), Number(match[2])];
  return a < major || (a === major && b < minor);
}

/** The server's root (the base URL less its `/v1`), where the probes live. */
export function serverRoot(baseURL: string): string {
  return baseURL.replace(/\/+$/, "").replace(/\/v1$/, "");
}

interface ProbeOptions {
  apiKey?: string;
  /** Per probe (default 3000 ms). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

async function getJson(url: string, options: ProbeOptions): Promise<Record<string, unknown> | null> {
  const doFetch = options.fetch ?? fetch;
  try {
    const response = await doFetch(url, {
      headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
      signal: AbortSignal.timeout(options.timeoutMs ?? 3000),
    });
    if (!response.ok) {
      await response.body?.cancel();
      return null;
    }
    const body = (await response.json()) as unknown;
    return typeof body === "object" && body !== null && !Array.isArray(body)
      ? (body as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

function versionOf(body: Record<string, unknown>): string | null {
  return typeof body.version === "string" ? body.version : null;
}

/**
 * The kind of the server at `baseURL`, asked once, from the routes only that server has:
 * `GET /api/version` (Ollama), `GET /props` with `default_generation_settings` (llama.cpp),
 * `GET /server_info` or `/get_server_info` (SGLang; the older name first existed alone),
 * `GET /version` (vLLM; SGLang answers it too, so it is asked last), and `agentrl serve`'s
 * `server: "agentrl"` on its `/version`. None of them: `openai` (a hosted API, text-only).
 */
export async function detectServer(baseURL: string, options: ProbeOptions = {}): Promise<ServerInfo> {
  const root = serverRoot(baseURL);
  const [ollama, props, serverInfo, oldServerInfo, version] = await Promise.all([
    getJson(`${root}/api/version`, options),
    getJson(`${root}/props`, options),
    getJson(`${root}/server_info`, options),
    getJson(`${root}/get_server_info`, options),
    getJson(`${root}/version`, options),
  ]);
  if (version?.server === "agentrl")
    return { kind: "agentrl", version: versionOf(version), detectedBy: "GET /version" };
  if (ollama && versionOf(ollama))
    return { kind: "ollama", version: versionOf(ollama), detectedBy: "GET /api/version" };
  if (props && typeof props.default_generation_settings === "object") {
    const build = typeof props.build_info === "string" ? props.build_info : null;
    return { kind: "llamacpp", version: build, detectedBy: "GET /props" };
  }
  // vLLM's dev mode has a `/server_info` too: it holds `vllm_config`.
  const sglang = [serverInfo, oldServerInfo].find((body) => body && !("vllm_config" in body));
  if (sglang)
    return {
      kind: "sglang",
      version: versionOf(sglang) ?? (version ? versionOf(version) : null),
      detectedBy: sglang === serverInfo ? "GET /server_info" : "GET /get_server_info",
    };
  if (version && versionOf(version))
    return { kind: "vllm", version: versionOf(version), detectedBy: "GET /version" };
  return { kind: "openai", version: null, detectedBy: "no probe answered" };
}

/** One line for logs and doctor: which server, and whether training on it is possible. */
export function describeServer(info: ServerInfo): string {
  const profile = kindProfile(info.kind);
  const found = `${profile.label}${info.version ? ` ${info.version}` : ""} (${info.kind}, ${info.detectedBy})`;
  return profile.tokenIds
    ? `${found}: exact token ids, training possible`
    : `${found}: no token ids, turns are stored text-only and training refuses them (${profile.fix})`;
}
