/**
 * The model behind the gateway: any OpenAI-compatible `/chat/completions` (vLLM, SGLang, the
 * llama.cpp server, Ollama, a hosted API, `agentrl serve`), reached over HTTP, knowing which kind
 * of server it is (policy/openai/server-kind.ts: how that server is asked for token ids, where it
 * puts them, and on which paths it has none). The key goes in the Authorization header only and is never returned
 * in a record or a log line. Responses are size-limited and time-limited; a non-JSON or oversized
 * body is an error the caller records.
 */

import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { Readable } from "node:stream";
import { kindProfile, type ServerInfo, serverRoot } from "../policy/openai/server-kind.ts";
import { isTokenIds } from "../policy/openai/token-ids.ts";
import type { Tokenizer } from "../types/policy.ts";

export interface UpstreamOptions {
  /** Base URL ending in `/v1`. */
  baseURL: string;
  model: string;
  apiKey?: string;
  /** Ask for token ids the way the server honours (default true; off for servers that reject unknown fields). */
  tokenIds?: boolean;
  /**
   * The server (detected by resolveUpstream, or named). Default: vLLM-shaped requests with ids read
   * from every server's fields (`detectedBy: "assumed"`).
   */
  server?: ServerInfo;
  /** Largest upstream body in bytes (default 32 MiB). */
  maxResponseBytes?: number;
  /** Milliseconds before an upstream call is abandoned (default 600 000). */
  timeoutMs?: number;
}

export interface Upstream {
  readonly baseURL: string;
  readonly model: string;
  readonly tokenIds: boolean;
  /** The server's kind and version, and how they were found. */
  readonly server: ServerInfo;
  /**
   * The prompt ids of a chat request rebuilt by the server itself (llama.cpp: `/apply-template`
   * then `/tokenize`, the same two steps its chat route takes), or null when it cannot.
   */
  promptIds?(request: Record<string, unknown>, signal?: AbortSignal): Promise<number[] | null>;
  /** POST /chat/completions; the raw response for the caller to read (JSON or an event stream). */
  post(
    body: Record<string, unknown>,
    signal?: AbortSignal,
    headers?: Record<string, string>,
  ): Promise<Response>;
  /** Reads a whole JSON body within the size limit. */
  readJson(response: Response): Promise<unknown>;
  readonly maxResponseBytes: number;
  /** The model's tokenizer when it runs in this process (ids can then be told apart from another model's). */
  readonly tokenizer?: Tokenizer;
  close?(): Promise<void>;
}

export function httpUpstream(options: UpstreamOptions): Upstream {
  const baseURL = options.baseURL.replace(/\/+$/, "");
  const maxResponseBytes = options.maxResponseBytes ?? 32 << 20;
  const timeoutMs = options.timeoutMs ?? 600_000;
  const server = options.server ?? { kind: "vllm", version: null, detectedBy: "assumed" };
  const auth: Record<string, string> = options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {};
  const readJson = async (response: Response) => {
    const text = await readLimited(response, maxResponseBytes);
    try {
      return JSON.parse(text);
    } catch {
      throw new Error(`the upstream answered ${response.status} with a body that is not JSON`);
    }
  };
  const rootPost = async (path: string, body: unknown, signal?: AbortSignal) => {
    const timeout = AbortSignal.timeout(timeoutMs);
    const response = await postJson(
      `${serverRoot(baseURL)}${path}`,
      body,
      auth,
      signal ? AbortSignal.any([signal, timeout]) : timeout,
    );
    if (!response.ok) {
      await response.body?.cancel();
      return null;
    }
    return (await readJson(response)) as Record<string, unknown> | null;
  };
  return {
    baseURL,
    model: options.model,
    tokenIds: (options.tokenIds ?? true) && kindProfile(server.kind).tokenIds,
    server,
    ...(kindProfile(server.kind).rebuildPromptIds
      ? {
          async promptIds(request: Record<string, unknown>, signal?: AbortSignal) {
            // The chat route renders the template, then tokenizes with BOS and special tokens parsed.
            const { messages, tools, tool_choice } = request;
            const rendered = await rootPost(
              "/apply-template",
              { messages, ...(tools ? { tools } : {}), ...(tool_choice ? { tool_choice } : {}) },
              signal,
            );
            if (typeof rendered?.prompt !== "string") return null;
            const tokens = await rootPost(
              "/tokenize",
              { content: rendered.prompt, add_special: true, parse_special: true },
              signal,
            );
            return isTokenIds(tokens?.tokens) ? tokens.tokens : null;
          },
        }
      : {}),
    maxResponseBytes,
    async post(body, signal, headers) {
      const timeout = AbortSignal.timeout(timeoutMs);
      return postJson(
        `${baseURL}/chat/completions`,
        body,
        { ...headers, ...auth },
        signal ? AbortSignal.any([signal, timeout]) : timeout,
      );
    },
    readJson,
  };
}

/**
 * POST over node:http(s) on a fresh connection (no keep-alive): an embedded upstream decodes on this
 * process's event loop, and a pooled socket that the server timed out while the loop was busy is
 * a reset on reuse ("fetch failed"). The answer is wrapped as a web `Response`.
 */
function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<Response> {
  const target = new URL(url);
  const send = target.protocol === "https:" ? httpsRequest : httpRequest;
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = send(
      target,
      {
        method: "POST",
        agent: false,
        signal,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(payload),
          ...headers,
        },
      },
      (res) => {
        const answerHeaders = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (typeof value === "string") answerHeaders.set(name, value);
          else if (Array.isArray(value)) for (const item of value) answerHeaders.append(name, item);
        }
        const status = res.statusCode ?? 502;
        const stream =
          status === 204 || status === 304 ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
        resolve(new Response(stream, { status, headers: answerHeaders }));
      },
    );
    req.on("error", (error) =>
      reject(new Error(`${error.message}${"code" in error ? ` (${String(error.code)})` : ""}`)),
    );
    req.end(payload);
  });
}

/** The body as text, failing past `maxBytes`. */
export async function readLimited(response: Response, maxBytes: number): Promise<string> {
  if (!response.body) return "";
  const decoder = new TextDecoder();
  let size = 0;
  let text = "";
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (size > maxBytes) throw new Error(`the upstream's answer is larger than ${maxBytes} bytes`);
    text += decoder.decode(chunk, { stream: true });
  }
  return text + decoder.decode();
}
