/**
 * MCP tools in: any Model Context Protocol server's tools as agentrl tools, through the official
 * SDK client over stdio (a process it starts) or Streamable HTTP (a URL).
 *
 * Each MCP tool becomes a `Tool`: its name and description; its input JSON schema as a zod schema
 * (schema.ts); `textArgument` = the first required string property; `call` = `tools/call` with the
 * episode's timeout and abort signal. The result is data, never an exception:
 * - text content joined with newlines is the observation (images, audio and resources are shown as
 *   `[image image/png]`-style placeholders; structured content alone is shown as JSON); at most
 *   `maxObservationChars` characters;
 * - `isError: true` → status `error`; nothing to show → `empty`; a request timeout → `timeout`; a
 *   protocol or transport failure (unknown tool, closed connection) → `error` with its message;
 * - an agentrl server (server.ts) also sends `_meta["agentrl/result"]` with the real status, the
 *   `injected` label of its noise wrapper, and `refs`/`value`; with `trustResultMeta` (the default)
 *   those are used, so noise injected on the server is labelled in the trajectory. Any other MCP
 *   server's injected failures are indistinguishable from real ones (the protocol has no such label):
 *   inject noise on the client side with `withNoise` (see noise.ts) to have it labelled.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import {
  TOOL_STATUSES,
  type Tool,
  type ToolCallOptions,
  type ToolResult,
  type ToolStatus,
} from "../types/tool.ts";
import { inputSchemaToZod, textArgumentOf } from "./schema.ts";

/** Where the server is: a command to start (stdio) or a Streamable HTTP endpoint. */
export type McpServerSpec =
  | { command: string; args?: string[]; env?: Record<string, string>; cwd?: string }
  | { url: string; token?: string; headers?: Record<string, string> };

export interface ConnectOptions {
  /** Only these tools (by MCP name). */
  include?: readonly string[];
  /** Prefix for agentrl tool names (`docs.` → `docs.search`), to keep several servers apart. */
  prefix?: string;
  /** Call timeout when the episode gives none (default 30000 ms). */
  timeoutMs?: number;
  /** Longest observation kept, in characters (default 20000). */
  maxObservationChars?: number;
  /** Use `_meta["agentrl/result"]` labels sent by agentrl servers (default true). */
  trustResultMeta?: boolean;
  /** Where a stdio server's stderr goes (default "inherit"; "ignore" to silence it). */
  stderr?: "inherit" | "ignore" | "pipe";
  /** Client name reported to the server. */
  clientName?: string;
}

/** An MCP tool as an agentrl tool; `mcpName` is its name on the server, `inputSchema` its JSON schema. */
export interface McpTool extends Tool<Record<string, unknown>> {
  mcpName: string;
  inputSchema: Record<string, unknown>;
  /** False when the JSON schema needed the permissive fallback (schema.ts). */
  exactSchema: boolean;
}

export interface McpConnection {
  tools: McpTool[];
  /** Name and version the server reported. */
  server: { name: string; version: string } | undefined;
  client: Client;
  /** Ends the connection (and stops a stdio server process). */
  close(): Promise<void>;
}

/** Key of the agentrl result label in a tool result's `_meta`. */
export const RESULT_META_KEY = "agentrl/result";
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_OBSERVATION = 20_000;

function transportOf(spec: McpServerSpec, options: ConnectOptions): Transport {
  if ("command" in spec) {
    return new StdioClientTransport({
      command: spec.command,
      args: spec.args ?? [],
      ...(spec.env ? { env: spec.env } : {}),
      ...(spec.cwd ? { cwd: spec.cwd } : {}),
      stderr: options.stderr ?? "inherit",
    });
  }
  const headers: Record<string, string> = { ...spec.headers };
  if (spec.token) headers.Authorization = `Bearer ${spec.token}`;
  return new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers } });
}

/** Connects to an MCP server and lists its tools (all pages). */
export async function connectMcpTools(
  spec: McpServerSpec,
  options: ConnectOptions = {},
): Promise<McpConnection> {
  const client = new Client({ name: options.clientName ?? "agentrl", version: "0.1.0" });
  await client.connect(transportOf(spec, options));
  try {
    const listed: Awaited<ReturnType<Client["listTools"]>>["tools"] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {});
      listed.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    const include = options.include ? new Set(options.include) : null;
    if (include) {
      const missing = [...include].filter((name) => !listed.some((tool) => tool.name === name));
      if (missing.length > 0) {
        throw new Error(
          `MCP server has no tool ${missing.join(", ")} (it has ${listed.map((t) => t.name).join(", ")})`,
        );
      }
    }
    const tools = listed
      .filter((tool) => !include || include.has(tool.name))
      .map((tool) => mcpTool(client, tool, options));
    const version = client.getServerVersion();
    return {
      tools,
      server: version ? { name: version.name, version: version.version } : undefined,
      client,
      close: () => client.close(),
    };
  } catch (error) {
    await client.close();
    throw error;
  }
}

function mcpTool(
  client: Client,
  listed: { name: string; description?: string; inputSchema: Record<string, unknown> },
  options: ConnectOptions,
): McpTool {
  const { schema, exact } = inputSchemaToZod(listed.inputSchema);
  const maxChars = options.maxObservationChars ?? DEFAULT_MAX_OBSERVATION;
  return {
    name: `${options.prefix ?? ""}${listed.name}`,
    mcpName: listed.name,
    description: listed.description ?? listed.name,
    schema,
    inputSchema: listed.inputSchema,
    exactSchema: exact,
    textArgument: textArgumentOf(listed.inputSchema),
    async call(args, callOptions?: ToolCallOptions): Promise<ToolResult> {
      try {
        const result = await client.callTool({ name: listed.name, arguments: args }, undefined, {
          timeout: callOptions?.timeoutMs ?? options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
          ...(callOptions?.signal ? { signal: callOptions.signal } : {}),
        });
        return toToolResult(result, maxChars, options.trustResultMeta ?? true);
      } catch (error) {
        if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
          return {
            status: "timeout",
            content: "error: the MCP server did not answer in time",
            injected: false,
          };
        }
        if (callOptions?.signal?.aborted)
          return { status: "error", content: "error: cancelled", injected: false };
        const message = error instanceof Error ? error.message : String(error);
        return { status: "error", content: clip(`error: ${message}`, maxChars), injected: false };
      }
    },
  };
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}\n[truncated]` : text;
}

type ContentItem = { type: string; text?: unknown; mimeType?: unknown; uri?: unknown; resource?: unknown };

function contentText(item: ContentItem): string {
  switch (item.type) {
    case "text":
      return typeof item.text === "string" ? item.text : "";
    case "image":
    case "audio":
      return `[${item.type} ${typeof item.mimeType === "string" ? item.mimeType : ""}]`.replace(" ]", "]");
    case "resource": {
      const resource = item.resource as { text?: unknown; uri?: unknown } | undefined;
      return typeof resource?.text === "string" ? resource.text : `[resource ${String(resource?.uri ?? "")}]`;
    }
    case "resource_link":
      return `[resource ${String(item.uri ?? "")}]`;
    default:
      return `[${String(item.type)}]`;
  }
}

/** Maps a `tools/call` result onto a `ToolResult` (rules in the file comment). */
export function toToolResult(result: unknown, maxChars: number, trustMeta: boolean): ToolResult {
  const shaped = (result ?? {}) as {
    content?: ContentItem[];
    isError?: boolean;
    structuredContent?: unknown;
    _meta?: Record<string, unknown>;
    toolResult?: unknown;
  };
  const items = Array.isArray(shaped.content) ? shaped.content : [];
  let content = items.map(contentText).filter(Boolean).join("\n");
  if (!content && shaped.structuredContent !== undefined) content = JSON.stringify(shaped.structuredContent);
  if (!content && shaped.toolResult !== undefined) content = JSON.stringify(shaped.toolResult); // protocol 2024-10-07
  content = clip(content, maxChars);
  const status: ToolStatus = shaped.isError ? "error" : content.trim() ? "ok" : "empty";
  const base: ToolResult = {
    status,
    content: content || (status === "empty" ? "(empty result)" : ""),
    injected: false,
  };
  const label = trustMeta ? resultLabel(shaped._meta?.[RESULT_META_KEY]) : null;
  return label ? { ...base, ...label } : base;
}

/** The agentrl label of a result, validated (a foreign server may send anything). */
function resultLabel(value: unknown): Partial<ToolResult> | null {
  if (typeof value !== "object" || value === null) return null;
  const label = value as { status?: unknown; injected?: unknown; refs?: unknown; value?: unknown };
  if (typeof label.status !== "string" || !(TOOL_STATUSES as readonly string[]).includes(label.status))
    return null;
  return {
    status: label.status as ToolStatus,
    injected: label.injected === true,
    ...(Array.isArray(label.refs) && label.refs.every((ref) => typeof ref === "string")
      ? { refs: label.refs }
      : {}),
    ...(typeof label.value === "number" && Number.isFinite(label.value) ? { value: label.value } : {}),
  };
}
