/**
 * The model behind the gateway: any OpenAI-compatible `/chat/completions` (vLLM, SGLang, `agentrl
 * serve`), reached over HTTP. The key goes in the Authorization header only and is never returned
 * in a record or a log line. Responses are size-limited and time-limited; a non-JSON or oversized
 * body is an error the caller records.
 */

export interface UpstreamOptions {
  /** Base URL ending in `/v1`. */
  baseURL: string;
  model: string;
  apiKey?: string;
  /** Ask for vLLM's `return_token_ids` and `logprobs` (default true; off for servers that reject unknown fields). */
  tokenIds?: boolean;
  /** Largest upstream body in bytes (default 32 MiB). */
  maxResponseBytes?: number;
  /** Milliseconds before an upstream call is abandoned (default 600 000). */
  timeoutMs?: number;
}

export interface Upstream {
  readonly baseURL: string;
  readonly model: string;
  readonly tokenIds: boolean;
  /** POST /chat/completions; the raw response for the caller to read (JSON or an event stream). */
  post(body: Record<string, unknown>, signal?: AbortSignal): Promise<Response>;
  /** Reads a whole JSON body within the size limit. */
  readJson(response: Response): Promise<unknown>;
  readonly maxResponseBytes: number;
  close?(): Promise<void>;
}

export function httpUpstream(options: UpstreamOptions): Upstream {
  const baseURL = options.baseURL.replace(/\/+$/, "");
  const maxResponseBytes = options.maxResponseBytes ?? 32 << 20;
  const timeoutMs = options.timeoutMs ?? 600_000;
  return {
    baseURL,
    model: options.model,
    tokenIds: options.tokenIds ?? true,
    maxResponseBytes,
    async post(body, signal) {
      const timeout = AbortSignal.timeout(timeoutMs);
      return fetch(`${baseURL}/chat/completions`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
        },
        body: JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    },
    async readJson(response) {
      const text = await readLimited(response, maxResponseBytes);
      try {
        return JSON.parse(text);
      } catch {
        throw new Error(`the upstream answered ${response.status} with a body that is not JSON`);
      }
    },
  };
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
