/**
 * `agentrl mcp`: the Model Context Protocol bridge.
 *
 *   agentrl mcp serve --seed 3 --noise 0.2                  → the world's tools on stdin/stdout
 *   agentrl mcp serve --transport http --port 8765 --token s3cret --code
 *                                                           → http://127.0.0.1:8765/mcp
 *   agentrl mcp list --url http://127.0.0.1:8765/mcp --token s3cret
 *   agentrl mcp list -- npx some-mcp-server --flag          → the tools of any MCP server
 *
 * `serve` exposes `search` and `calc` over the world of `--seed` (with `--noise` split evenly over
 * error, empty, timeout and corrupted, seeded by `--noise-seed`), plus the sandboxed `code` tool with
 * `--code` and the sandboxed `python` tool with `--python`. The token may also come from AGENTRL_MCP_TOKEN.
 */
import type { Command } from "commander";
import { connectMcpTools, type McpServerSpec, serveHttp, serveStdio } from "../../mcp/index.ts";
import { createCodeTool, createPythonTool, uniformNoise, worldTools } from "../../tools/index.ts";
import type { AnyTool } from "../../types/tool.ts";
import { generateWorld } from "../../world/index.ts";
import {
  addServerOptions,
  addToolNoiseOptions,
  numberOption,
  parseChoice,
  serverOptions,
} from "./options.ts";

interface ServeCommandOptions {
  seed: number;
  noise: number;
  noiseSeed?: number;
  topK: number;
  code?: boolean;
  python?: boolean;
  pythonWheels?: string;
  transport: string;
  host: string;
  port: string;
  token?: string;
  insecure?: boolean;
  allowHost?: string[];
  timeout: number;
}

/** The tools `agentrl mcp serve` exposes. */
export function servedTools(options: {
  seed: number;
  noise?: number;
  noiseSeed?: number;
  topK?: number;
  code?: boolean;
  python?: boolean;
  pythonWheels?: string;
}): AnyTool[] {
  const tools = worldTools(generateWorld(options.seed), {
    topK: options.topK ?? 1,
    ...(options.noise ? { noise: uniformNoise(options.noise), seed: options.noiseSeed ?? options.seed } : {}),
  });
  if (options.code) tools.push(createCodeTool());
  if (options.python)
    tools.push(createPythonTool(options.pythonWheels ? { wheelsDir: options.pythonWheels } : {}));
  return tools;
}

export function register(program: Command): void {
  const mcp = program
    .command("mcp")
    .description("serve agentrl tools over MCP, or list an MCP server's tools");

  const serve = mcp
    .command("serve")
    .description("expose the world's tools (search, calc; optionally code) as an MCP server")
    .option("--seed <n>", "world seed", numberOption("--seed", { integer: true, min: 0 }), 0);
  addServerOptions(addToolNoiseOptions(serve), { port: 8765, tokenEnv: "AGENTRL_MCP_TOKEN" })
    .option(
      "--top-k <n>",
      "documents per search result",
      numberOption("--top-k", { integer: true, min: 1, max: 100 }),
      1,
    )
    .option("--code", "also expose the sandboxed JavaScript code tool")
    .option("--python", "also expose the sandboxed Python tool (Pyodide)")
    .option(
      "--python-wheels <dir>",
      "--python: a folder of pure-Python wheels installed offline (e.g. sympy)",
    )
    .option("--transport <kind>", "stdio, or http (the --host/--port/--token options apply to http)", "stdio")
    .option(
      "--timeout <ms>",
      "per-call timeout",
      numberOption("--timeout", { integer: true, min: 1 }),
      30_000,
    )
    .action(async (options: ServeCommandOptions) => {
      const transport = parseChoice("--transport", options.transport, ["stdio", "http"] as const);
      const tools = servedTools(options);
      if (transport === "stdio") {
        const server = await serveStdio(tools, { timeoutMs: options.timeout });
        await server.closed;
        await server.close();
        return;
      }
      const listen = serverOptions(options, "AGENTRL_MCP_TOKEN");
      const token = listen.token;
      const server = await serveHttp(tools, { ...listen, timeoutMs: options.timeout });
      const names = tools.map((tool) => tool.name).join(", ");
      console.error(
        `agentrl mcp: serving ${names} (world ${options.seed}) at ${server.url}${token ? " (bearer token required)" : ""}`,
      );
      const stop = () => void server.close();
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
      await server.closed;
    });

  mcp
    .command("list")
    .description("connect to an MCP server and print its tools as agentrl sees them")
    .argument("[command...]", "command that starts a stdio server (after --)")
    .option("--url <url>", "Streamable HTTP endpoint instead of a command")
    .option("--token <token>", "bearer token for --url")
    .option("--json", "print the tools as JSON")
    .action(async (command: string[], options: { url?: string; token?: string; json?: boolean }) => {
      let spec: McpServerSpec;
      if (options.url) spec = { url: options.url, ...(options.token ? { token: options.token } : {}) };
      else if (command.length > 0) spec = { command: command[0], args: command.slice(1) };
      else
        throw new Error("give --url <url> or a command after --, e.g. agentrl mcp list -- npx my-mcp-server");
      const connection = await connectMcpTools(spec, { stderr: "ignore" });
      try {
        const tools = connection.tools.map((tool) => ({
          name: tool.name,
          description: tool.description,
          textArgument: tool.textArgument,
          exactSchema: tool.exactSchema,
          inputSchema: tool.inputSchema,
        }));
        if (options.json) {
          console.log(JSON.stringify({ server: connection.server, tools }, null, 2));
          return;
        }
        console.log(
          `${connection.server?.name ?? "server"} ${connection.server?.version ?? ""}: ${tools.length} tools`,
        );
        for (const tool of tools) {
          console.log(
            `  ${tool.name} <${tool.textArgument}>${tool.exactSchema ? "" : " (permissive schema)"}: ${tool.description}`,
          );
        }
      } finally {
        await connection.close();
      }
    });
}
