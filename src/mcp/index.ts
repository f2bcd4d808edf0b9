/** MCP bridge: tools of any MCP server in episodes (client), agentrl tools as an MCP server (server). */
export {
  type ConnectOptions,
  connectMcpTools,
  type McpConnection,
  type McpServerSpec,
  type McpTool,
  RESULT_META_KEY,
  toToolResult,
} from "./client.ts";
export { withStaleNoise, withToolNoise } from "./noise.ts";
export { inputSchemaToZod, permissiveObjectSchema, textArgumentOf } from "./schema.ts";
export {
  createToolServer,
  type HttpServeOptions,
  type RunningServer,
  type ServeOptions,
  serveHttp,
  serveStdio,
  toCallToolResult,
} from "./server.ts";
