/**
 * The embedded world's tools over HTTP, for agents that cannot import them (`--agent-cmd` agents
 * in any language): what `worldTools(task)` (world-tools.ts) gives a TypeScript agent.
 *
 *   GET  <url>/worlds/<seed>/tools           {tools}: OpenAI function-tool specs of search and calc
 *   POST <url>/worlds/<seed>/tools/<name>    body: the call's arguments → {content}: the tool's text
 *
 * A world task's episode gets `AGENTRL_TOOLS_URL=<url>/worlds/<seed>` (slot.ts). Same bearer token
 * as the gateway; loopback only. Tool failures are answers (`error : …` text), as in the episode loop.
 */
import type { AddressInfo } from "node:net";
import { HostPolicy } from "../http/boundary.ts";
import { authorized, createJsonServer, readJson, sendJson, sha256 } from "../http/json.ts";
import { RequestError } from "../http/request-error.ts";
import { type AgentWorldTools, agentWorldTools } from "./world-tools.ts";

export interface ToolsServer {
  readonly url: string;
  /** The tools URL of world `seed`. */
  worldURL(seed: number): string;
  close(): Promise<void>;
}

export async function startToolsServer(token: string): Promise<ToolsServer> {
  const digest = sha256(token);
  const worlds = new Map<number, AgentWorldTools>();
  const toolsOf = (seed: number) => {
    let tools = worlds.get(seed);
    if (!tools) {
      tools = agentWorldTools({ id: `world-${seed}`, worldSeed: seed });
      worlds.set(seed, tools);
    }
    return tools;
  };
  const server = createJsonServer(
    async (req, res) => {
      if (!authorized(req.headers.authorization, digest))
        throw new RequestError(401, "missing or invalid bearer token", null, "invalid_api_key");
      const path = new URL(req.url ?? "/", "http://localhost").pathname;
      const match = /^\/worlds\/(\d{1,10})\/tools(?:\/([a-z_]+))?\/?$/.exec(path);
      if (!match) throw new RequestError(404, `no route ${req.method} ${path}`, null, "not_found");
      const tools = toolsOf(Number(match[1]));
      if (match[2] === undefined) return sendJson(res, 200, { tools: tools.openai });
      if (req.method !== "POST") throw new RequestError(405, "use POST");
      const args = await readJson(req, 1 << 20);
      sendJson(res, 200, { content: await tools.call(match[2], args) });
    },
    {
      label: "agentrl tools",
      log: (line) => process.stderr.write(`${line}\n`),
      hosts: new HostPolicy("127.0.0.1"),
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    worldURL: (seed) => `${url}/worlds/${seed}`,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
