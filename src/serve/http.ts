/**
 * HTTP plumbing of `agentrl serve`: bearer-token check, bounded JSON bodies, JSON and
 * server-sent-event responses.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { ChatChoice } from "./completion.ts";
import { type ChatRequest, RequestError } from "./request.ts";

export function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/** Constant-time check of `Authorization: Bearer <token>` (digests make the lengths equal). */
export function authorized(header: string | undefined, tokenDigest: Buffer): boolean {
  const match = /^Bearer\s+(.+)$/i.exec(header ?? "");
  return match !== null && timingSafeEqual(sha256(match[1].trim()), tokenDigest);
}

export async function readJson(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const tooLarge = () =>
    new RequestError(413, `request body larger than ${maxBytes} bytes`, null, "request_too_large");
  if (Number(req.headers["content-length"] ?? 0) > maxBytes) {
    req.resume();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      req.resume();
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  try {
    return JSON.parse(text);
  } catch {
    throw new RequestError(400, "the request body is not valid JSON");
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** Server-sent events: each choice whole in one chunk, then its finish chunk, usage if asked, `[DONE]`. */
export function sendStream(
  res: ServerResponse,
  response: {
    id: string;
    created: number;
    model: string;
    system_fingerprint: string;
    choices: ChatChoice[];
    usage: unknown;
    prompt_token_ids?: number[];
  },
  request: ChatRequest,
) {
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  const base = {
    id: response.id,
    object: "chat.completion.chunk",
    created: response.created,
    model: response.model,
    system_fingerprint: response.system_fingerprint,
  };
  const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
  let first = true;
  for (const choice of response.choices) {
    const delta: Record<string, unknown> = { role: "assistant", content: choice.message.content };
    if (choice.message.tool_calls)
      delta.tool_calls = choice.message.tool_calls.map((call, index) => ({ index, ...call }));
    send({
      ...base,
      choices: [
        {
          index: choice.index,
          delta,
          logprobs: choice.logprobs,
          finish_reason: null,
          ...(choice.token_ids ? { token_ids: choice.token_ids } : {}),
        },
      ],
      // vLLM sends the prompt's ids once, on the first chunk.
      ...(first && response.prompt_token_ids ? { prompt_token_ids: response.prompt_token_ids } : {}),
    });
    first = false;
    send({
      ...base,
      choices: [{ index: choice.index, delta: {}, logprobs: null, finish_reason: choice.finish_reason }],
    });
  }
  if (request.stream_options?.include_usage) send({ ...base, choices: [], usage: response.usage });
  res.end("data: [DONE]\n\n");
}

/**
 * An HTTP server over `handle` whose failures answer in the OpenAI error shape: a `RequestError`
 * with its status, anything else as a 500 (logged as `<label>: …`).
 */
export function createJsonServer(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  label: string,
  log: (line: string) => void,
): Server {
  return createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      const failure =
        error instanceof RequestError
          ? error
          : new RequestError(
              500,
              `internal error: ${error instanceof Error ? error.message : String(error)}`,
            );
      if (failure.status >= 500) log(`${label}: ${failure.message}`);
      if (failure.status === 413) res.setHeader("connection", "close");
      if (res.headersSent) res.end();
      else
        sendJson(res, failure.status, {
          error: { message: failure.message, type: failure.type, param: failure.param, code: failure.code },
        });
    });
  });
}
