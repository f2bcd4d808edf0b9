/**
 * JSON over node:http for every agentrl server: bearer-token check, bounded JSON bodies that must
 * be sent as `application/json`, JSON responses, and a server whose failures answer in the OpenAI
 * error shape after the door checks of boundary.ts.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { applyTimeouts, type HostPolicy, type ServerTimeouts, serverTimeoutOptions } from "./boundary.ts";
import { RequestError } from "./request-error.ts";

export function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/** Constant-time check of `Authorization: Bearer <token>` (digests make the lengths equal). */
export function authorized(header: string | undefined, tokenDigest: Buffer): boolean {
  const match = /^Bearer\s+(.+)$/i.exec(header ?? "");
  return match !== null && timingSafeEqual(sha256(match[1].trim()), tokenDigest);
}

/**
 * Refuses a body not declared `application/json` (415): a cross-site page can POST text/plain or a
 * form without a preflight, never JSON.
 */
export function requireJsonContentType(req: IncomingMessage): void {
  const type = (req.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
  if (type !== "application/json") {
    req.resume();
    throw new RequestError(
      415,
      `Content-Type must be application/json, got ${type ? `"${type}"` : "none"}`,
      null,
      "unsupported_media_type",
    );
  }
}

/** The request's JSON body: declared application/json (415), at most `maxBytes` (413), valid (400). */
export async function readJson(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  requireJsonContentType(req);
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

export interface JsonServerOptions {
  /** Prefix of logged 5xx failures (`<label>: …`). */
  label: string;
  log: (line: string) => void;
  /** Who may reach the routes (Host and Origin checks, boundary.ts). */
  hosts: HostPolicy;
  /** Connection timeouts (default `SERVER_TIMEOUTS`; smaller in tests). */
  timeouts?: Partial<ServerTimeouts>;
}

/**
 * An HTTP server over `handle`, behind the door checks and timeouts of boundary.ts, whose failures
 * answer in the OpenAI error shape: a `RequestError` with its status, anything else as a 500.
 */
export function createJsonServer(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  options: JsonServerOptions,
): Server {
  const guarded = async (req: IncomingMessage, res: ServerResponse) => {
    const refused = options.hosts.refusal(req.headers);
    if (refused) {
      req.resume();
      throw new RequestError(refused.status, refused.message, null, refused.code);
    }
    return handle(req, res);
  };
  return applyTimeouts(
    createServer(serverTimeoutOptions(options.timeouts), (req, res) => {
      guarded(req, res).catch((error: unknown) => {
        const failure =
          error instanceof RequestError
            ? error
            : new RequestError(
                500,
                `internal error: ${error instanceof Error ? error.message : String(error)}`,
              );
        if (failure.status >= 500) options.log(`${options.label}: ${failure.message}`);
        if (failure.status === 413) res.setHeader("connection", "close");
        if (res.headersSent) res.end();
        else
          sendJson(res, failure.status, {
            error: { message: failure.message, type: failure.type, param: failure.param, code: failure.code },
          });
      });
    }),
    options.timeouts,
  );
}
