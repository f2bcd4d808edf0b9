/**
 * MCP tools out: agentrl tools (the world's `search` and `calc`, optionally with noise, optionally
 * the sandboxed `code` tool) served as a Model Context Protocol server with the official SDK, so any
 * MCP host, or verl's MCP tool support in a distributed run, can use the same environment.
 *
 * - Each tool is registered with its zod schema; the SDK validates arguments. Calls go through
 *   `callTool` (timeout, no exception escapes). A failed call (`error`, `timeout`) is an
 *   `isError: true` result carrying the message, never a protocol error.
 * - Every result carries `_meta["agentrl/result"] = { status, injected, refs?, value? }`: the
 *   agentrl client (client.ts) restores statuses and noise labels from it; other hosts ignore it.
 * - stdio: one server on stdin/stdout (nothing else may write to stdout).
 * - Streamable HTTP, stateless: every POST to `/mcp` gets a fresh protocol server over the same tool
 *   objects (so the seeded noise stream runs on across requests, in arrival order). The door
 *   checks of src/http/boundary.ts apply (Host, Origin, application/json, timeouts; refusals in the
 *   JSON-RPC error shape); it binds 127.0.0.1 by default, another address only with a token (or
 *   `allowRemote`); with a token every request needs `Authorization: Bearer <token>`.
 */
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { z } from "zod";
import { applyTimeouts, checkBind, HostPolicy, serverTimeoutOptions } from "../http/boundary.ts";
import { authorized, readJson, sha256 } from "../http/json.ts";
import { RequestError } from "../http/request-error.ts";
import { callTool } from "../tools/index.ts";
import type { AnyTool, ToolResult } from "../types/tool.ts";
import { RESULT_META_KEY } from "./client.ts";

export interface ServeOptions {
  /** Per-call timeout in milliseconds (default 30000). */
  timeoutMs?: number;
  /** Server name reported to clients (default `agentrl`). */
  name?: string;
}

/** The MCP result of a tool result. */
export function toCallToolResult(result: ToolResult) {
  return {
    content: [{ type: "text" as const, text: result.content }],
    isError: result.status === "error" || result.status === "timeout",
    _meta: {
      [RESULT_META_KEY]: {
        status: result.status,
        injected: result.injected,
        ...(result.refs ? { refs: result.refs } : {}),
        ...(result.value !== undefined ? { value: result.value } : {}),
      },
    },
  };
}

/** An SDK `McpServer` with `tools` registered. */
export function createToolServer(tools: readonly AnyTool[], options: ServeOptions = {}): McpServer {
  const server = new McpServer({ name: options.name ?? "agentrl", version: "0.1.0" });
  const timeoutMs = options.timeoutMs ?? 30_000;
  for (const tool of tools) {
    server.registerTool(
      tool.name,
      { description: tool.description, inputSchema: tool.schema as z.ZodObject },
      async (args: unknown, extra: { signal: AbortSignal }) =>
        toCallToolResult(await callTool(tool, args, { timeoutMs, signal: extra.signal })),
    );
  }
  return server;
}

export interface RunningServer {
  /** `http://host:port/mcp` for HTTP; undefined for stdio. */
  url?: string;
  close(): Promise<void>;
  /** Resolves when the server stops (stdin closed for stdio, `close()` for HTTP). */
  closed: Promise<void>;
}

/** Serves `tools` on stdin/stdout until stdin closes. */
export async function serveStdio(
  tools: readonly AnyTool[],
  options: ServeOptions = {},
): Promise<RunningServer> {
  const server = createToolServer(tools, options);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once("end", () => resolve());
  });
  await server.connect(transport);
  return { close: () => server.close(), closed };
}

export interface HttpServeOptions extends ServeOptions {
  /** Address to bind (default 127.0.0.1). */
  host?: string;
  /** Port (default 8765; 0 picks a free one). */
  port?: number;
  /** Bearer token every request must carry (default: none). */
  token?: string;
  /** Allow a non-loopback host without a token (warns). */
  allowRemote?: boolean;
  /** Host names answered besides loopback and the bound address (`--allow-host`). */
  allowHosts?: readonly string[];
  /** Warnings (default: stderr). */
  log?: (line: string) => void;
  /** Largest request body in bytes (default 1 MiB). */
  maxBodyBytes?: number;
}

function reject(
  response: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
) {
  response.writeHead(status, { "content-type": "application/json", ...headers });
  response.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
}

/** Serves `tools` over Streamable HTTP at `http://host:port/mcp`. */
export async function serveHttp(
  tools: readonly AnyTool[],
  options: HttpServeOptions = {},
): Promise<RunningServer> {
  const host = options.host ?? "127.0.0.1";
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const warning = checkBind("agentrl mcp", host, { token: options.token, insecure: options.allowRemote });
  if (warning) log(warning);
  const tokenDigest = options.token ? sha256(options.token) : null;
  const maxBody = options.maxBodyBytes ?? 1024 * 1024;
  const hosts = new HostPolicy(host, options.allowHosts);
  const http = createServer(serverTimeoutOptions(), async (request, response) => {
    try {
      const refused = hosts.refusal(request.headers);
      if (refused) {
        request.resume();
        return reject(response, refused.status, refused.message);
      }
      if (tokenDigest && !authorized(request.headers.authorization, tokenDigest)) {
        return reject(response, 401, "Unauthorized: a bearer token is required", {
          "www-authenticate": "Bearer",
        });
      }
      if (new URL(request.url ?? "/", "http://localhost").pathname !== "/mcp") {
        return reject(response, 404, "Not found: the MCP endpoint is /mcp");
      }
      if (request.method !== "POST") {
        return reject(response, 405, "Method not allowed: this stateless server takes POST only", {
          allow: "POST",
        });
      }
      let body: unknown;
      try {
        body = await readJson(request, maxBody);
      } catch (error) {
        if (!(error instanceof RequestError)) throw error;
        return reject(response, error.status, error.message);
      }
      const server = createToolServer(tools, options);
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      response.on("close", () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(request, response, body);
    } catch (error) {
      if (!response.headersSent) reject(response, 500, `Internal error: ${(error as Error).message}`);
    }
  });
  applyTimeouts(http);
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(options.port ?? 8765, host, () => resolve());
  });
  const { port } = http.address() as AddressInfo;
  let resolveClosed: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}/mcp`,
    closed,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => {
          resolveClosed();
          resolve();
        });
      }),
  };
}
