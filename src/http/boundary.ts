/**
 * The rules every agentrl HTTP server applies at its door (serve, gateway, agent-server, verify
 * serve, mcp serve, ui), written once so the code and the wording are the same everywhere:
 *
 * - `Host` must name a loopback address (127.0.0.0/8, ::1, localhost; any port), the address the
 *   server is bound to, or a host given with `--allow-host`. A web page the user opens can reach
 *   127.0.0.1; through DNS rebinding its requests carry its own name as Host, and are refused.
 * - A request with an `Origin` header whose host is not one of those is refused: browsers send
 *   cross-site "simple requests" (text/plain or form POSTs) without a preflight, but always with
 *   their Origin. JSON bodies must come as `Content-Type: application/json` (json.ts), which a page
 *   cannot send cross-site without a preflight we never answer.
 * - A non-loopback bind needs a token unless explicitly allowed (`--insecure`).
 * - Slow or idle connections are dropped (`SERVER_TIMEOUTS`).
 */
import type { Server } from "node:http";

export const LOOPBACK_NAMES: ReadonlySet<string> = new Set(["127.0.0.1", "::1", "localhost"]);

/** Whether a host name (no port, no brackets) is a loopback address. */
export function isLoopback(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, "");
  return LOOPBACK_NAMES.has(name) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

/**
 * The host name of a `Host` header or a bind address (`[::1]:8080` → `::1`, `Localhost:80` →
 * `localhost`, `::1` → `::1`: a bare IPv6 address has no port, Host headers bracket theirs).
 */
export function hostName(header: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(header);
  if (bracketed) return bracketed[1].toLowerCase();
  if ((header.match(/:/g) ?? []).length > 1) return header.toLowerCase();
  return header.replace(/:\d+$/, "").toLowerCase();
}

/** Who a server answers: loopback names, the address it is bound to and the `--allow-host` names. */
export class HostPolicy {
  readonly #allowed: Set<string>;

  /** `bindHost` is allowed itself unless it is a wildcard address (0.0.0.0, ::). */
  constructor(bindHost: string, allowHosts: readonly string[] = []) {
    this.#allowed = new Set(allowHosts.map((host) => hostName(host.trim())));
    const bound = hostName(bindHost);
    if (bound !== "0.0.0.0" && bound !== "::" && bound !== "") this.#allowed.add(bound);
  }

  allows(host: string): boolean {
    return isLoopback(host) || this.#allowed.has(host);
  }

  /** Why a request is refused at the door, or null when it may go on to its route. */
  refusal(headers: { host?: string | undefined; origin?: string | undefined }): Refusal | null {
    const host = headers.host ?? "";
    if (!this.allows(hostName(host)))
      return {
        status: 403,
        code: "host_not_allowed",
        message:
          `Host "${host}" is not allowed: this server answers loopback names (127.0.0.1, ::1, localhost), ` +
          "its own address and hosts given with --allow-host (DNS-rebinding protection)",
      };
    const origin = headers.origin;
    if (origin !== undefined && !this.allows(originHost(origin)))
      return {
        status: 403,
        code: "origin_not_allowed",
        message:
          `cross-site request refused: Origin "${origin}" is not loopback, this server's address ` +
          "or a host given with --allow-host",
      };
    return null;
  }
}

export interface Refusal {
  status: 403;
  code: "host_not_allowed" | "origin_not_allowed";
  message: string;
}

/** The host of an `Origin` header; "" for `null` and anything that is not a URL (never allowed). */
function originHost(origin: string): string {
  try {
    return hostName(new URL(origin).host);
  } catch {
    return "";
  }
}

/**
 * The token rule of a bind: on a non-loopback address a token is required unless `insecure`.
 * Throws the refusal (the same words for every server); returns the warning to print (plain HTTP,
 * or no authentication; `label` names the server), or null.
 */
export function checkBind(label: string, host: string, access: { token?: string; insecure?: boolean }) {
  if (isLoopback(hostName(host))) return null;
  if (!access.token && !access.insecure)
    throw new Error(
      `refusing to listen on ${host} without a token: anyone who can reach it could use it; ` +
        "give a token (--token) or allow it explicitly (--insecure)",
    );
  return access.token
    ? `WARNING: ${label} on ${host} over plain HTTP: the bearer token travels unencrypted (put a TLS proxy in front)`
    : `WARNING: ${label} on ${host} WITHOUT authentication: anyone who can reach this address can use it`;
}

/**
 * Connection timeouts. A client has `headersMs` to send its headers and `requestMs` to send its
 * whole request (a response may take as long as it takes: Node's request timeout stops once the
 * request is received). Idle keep-alive connections close after `keepAliveMs`: longer than the
 * pools of agents' HTTP clients keep sockets, because a server that drops an idle socket first
 * resets the client's next call; headers get 1 s more than that, as Node requires.
 *
 * Node checks the headers and request timeouts only every `checkIntervalMs` (its
 * `connectionsCheckingInterval`, 30 s unless set when the server is created), so a slow client
 * (slowloris) is dropped between the timeout and the timeout plus one interval: 5 s here keeps
 * that bound close (src/http/slow-client.test.ts holds a connection open to check it).
 */
export interface ServerTimeouts {
  keepAliveMs: number;
  headersMs: number;
  requestMs: number;
  checkIntervalMs: number;
}

export const SERVER_TIMEOUTS: Readonly<ServerTimeouts> = {
  keepAliveMs: 65_000,
  headersMs: 66_000,
  requestMs: 120_000,
  checkIntervalMs: 5_000,
};

/**
 * Sets the timeouts on `server`. `checkIntervalMs` only takes effect when given to
 * `createServer` too (`serverTimeoutOptions`); on a server created without it, Node's 30 s stays.
 */
export function applyTimeouts(server: Server, timeouts: Partial<ServerTimeouts> = {}): Server {
  const { keepAliveMs, headersMs, requestMs } = { ...SERVER_TIMEOUTS, ...timeouts };
  server.keepAliveTimeout = keepAliveMs;
  server.headersTimeout = headersMs;
  server.requestTimeout = requestMs;
  return server;
}

/** The `createServer` options that carry the timeouts, the check interval included. */
export function serverTimeoutOptions(timeouts: Partial<ServerTimeouts> = {}) {
  const { keepAliveMs, headersMs, requestMs, checkIntervalMs } = { ...SERVER_TIMEOUTS, ...timeouts };
  return {
    keepAliveTimeout: keepAliveMs,
    headersTimeout: headersMs,
    requestTimeout: requestMs,
    connectionsCheckingInterval: checkIntervalMs,
  };
}
