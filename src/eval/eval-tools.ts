/**
 * The tools of file tasks, by description: the sandboxed code and Python tools and one MCP server
 * (stdio command or Streamable HTTP URL). The setup is recorded in the eval's config, so a resume
 * rebuilds the same tools; an MCP connection is opened before the run and closed when it ends, and
 * `noise` wraps the tools client-side with labelled failures.
 */
import { withToolNoise } from "../mcp/noise.ts";
import { createCodeTool } from "../tools/code.ts";
import { uniformNoise } from "../tools/index.ts";
import { createPythonTool } from "../tools/python.ts";
import type { Task } from "../types/task.ts";
import type { AnyTool } from "../types/tool.ts";

/** An MCP server whose tools an eval offers: a command it starts (stdio), or a Streamable HTTP URL. */
export type EvalMcpSetup =
  | { command: string; args: string[] }
  /** `token`: whether the server needs a bearer token (the token itself is never stored). */
  | { url: string; token: boolean };

/** The tools of file tasks, by description (recorded in the config, so a resume rebuilds them). */
export interface EvalToolSetup {
  /** The sandboxed JavaScript code tool (src/tools/code.ts). */
  code: boolean;
  /** The sandboxed Python tool (src/tools/python.ts); absent in older runs. */
  python?: boolean;
  /** A folder of pure-Python wheels the python tool installs (offline) in every interpreter. */
  pythonWheels?: string;
  /** Every tool of one MCP server (src/mcp/client.ts), or none. */
  mcp: EvalMcpSetup | null;
}

/** A setup as recorded in the config: only the fields that apply, in a fixed order. */
export function normalizeToolSetup(setup: EvalToolSetup): EvalToolSetup {
  const { mcp } = setup;
  return {
    code: setup.code === true,
    ...(setup.python === true ? { python: true } : {}),
    ...(setup.python === true && setup.pythonWheels ? { pythonWheels: setup.pythonWheels } : {}),
    mcp:
      mcp === null
        ? null
        : "command" in mcp
          ? { command: mcp.command, args: [...mcp.args] }
          : { url: mcp.url, token: mcp.token === true },
  };
}

/** The tools of a setup, built once; `tools(task, seed)` adds per-episode noise. `close` ends an MCP connection. */
export interface OpenedTools {
  tools: (task: Task, seed: number) => readonly AnyTool[];
  close(): Promise<void>;
}

/**
 * Builds the tools of a setup: the code tool, then the MCP server's tools (connected now; a server
 * that cannot be reached fails here, before any run is created). Names must be unique.
 */
export async function openToolSetup(
  setup: EvalToolSetup,
  options: { noise?: number; mcpToken?: string } = {},
): Promise<OpenedTools> {
  const base: AnyTool[] = [];
  if (setup.code) base.push(createCodeTool() as AnyTool);
  if (setup.python) {
    base.push(createPythonTool(setup.pythonWheels ? { wheelsDir: setup.pythonWheels } : {}) as AnyTool);
  }
  let close = async () => {};
  const { mcp } = setup;
  if (mcp) {
    if ("url" in mcp && mcp.token && !options.mcpToken) {
      throw new Error(
        `evaluate: the MCP server ${mcp.url} needs a bearer token, which runs never store: give it again (--mcp-token or $AGENTRL_MCP_TOKEN)`,
      );
    }
    const { connectMcpTools } = await import("../mcp/client.ts");
    const spec =
      "command" in mcp
        ? { command: mcp.command, args: mcp.args }
        : { url: mcp.url, ...(options.mcpToken ? { token: options.mcpToken } : {}) };
    let connection: Awaited<ReturnType<typeof connectMcpTools>>;
    try {
      connection = await connectMcpTools(spec);
    } catch (error) {
      const where = "command" in mcp ? [mcp.command, ...mcp.args].join(" ") : mcp.url;
      throw new Error(`evaluate: cannot use the MCP server ${where}: ${(error as Error).message}`);
    }
    close = () => connection.close();
    base.push(...connection.tools);
  }
  const names = base.map((tool) => tool.name);
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice !== undefined) {
    await close();
    throw new Error(`evaluate: two tools are named "${twice}" (the code tool and an MCP tool?)`);
  }
  const noise = options.noise ?? 0;
  const config = uniformNoise(noise);
  return {
    tools: noise > 0 ? (_task, seed) => withToolNoise(base, config, seed) : () => base,
    close,
  };
}
