import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { z } from "zod";
import { callTool, createCalcTool } from "../tools/index.ts";
import type { Tool } from "../types/tool.ts";
import { connectMcpTools } from "./client.ts";
import { type RunningServer, serveHttp } from "./server.ts";

// A tool that fails in every way a tool can, to see each failure cross the protocol.
const flaky: Tool<{ mode: string }> = {
  name: "flaky",
  description: "fails on request",
  schema: z.object({ mode: z.string() }),
  textArgument: "mode",
  async call({ mode }) {
    if (mode === "throw") throw new Error("boom");
    if (mode === "slow")
      return new Promise((resolve) =>
        setTimeout(() => resolve({ status: "ok", content: "late", injected: false }), 700),
      );
    if (mode === "empty") return { status: "empty", content: "no results", injected: false };
    if (mode === "injected") return { status: "timeout", content: "error : timed out", injected: true };
    return { status: "ok", content: `mode ${mode}`, injected: false, refs: ["r1"] };
  },
};

let server: RunningServer;
before(async () => {
  server = await serveHttp([createCalcTool(), flaky], { port: 0, token: "s3cret", timeoutMs: 300 });
});
after(() => server.close());

test("Streamable HTTP with a bearer token: tools listed and called, failures as results", async () => {
  assert.match(server.url!, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
  const connection = await connectMcpTools({ url: server.url!, token: "s3cret" }, { prefix: "remote." });
  try {
    assert.deepEqual(
      connection.tools.map((tool) => [tool.name, tool.mcpName]),
      [
        ["remote.calc", "calc"],
        ["remote.flaky", "flaky"],
      ],
    );
    const [calc, tool] = connection.tools;
    assert.deepEqual(await calc.call({ expression: "2 ** 10" }), {
      status: "ok",
      content: "1024",
      injected: false,
      value: 1024,
    });
    assert.deepEqual(await tool.call({ mode: "x" }), {
      status: "ok",
      content: "mode x",
      injected: false,
      refs: ["r1"],
    });
    assert.deepEqual(await tool.call({ mode: "throw" }), {
      status: "error",
      content: "error : tool failed",
      injected: false,
    });
    assert.equal((await tool.call({ mode: "slow" })).status, "timeout"); // the server's 300 ms call timeout
    assert.equal((await tool.call({ mode: "empty" })).status, "empty");
    assert.deepEqual(await tool.call({ mode: "injected" }), {
      status: "timeout",
      content: "error : timed out",
      injected: true,
    });
    // The client's own timeout: shorter than the server's.
    const slowClient = await callTool(tool, { mode: "slow" }, { timeoutMs: 50 });
    assert.equal(slowClient.status, "timeout");
  } finally {
    await connection.close();
  }
});

test("HTTP refuses a missing or wrong token, other paths and methods, and foreign Host headers", async () => {
  await assert.rejects(connectMcpTools({ url: server.url! }), /401|Unauthorized/);
  await assert.rejects(connectMcpTools({ url: server.url!, token: "wrong" }), /401|Unauthorized/);
  const auth = { authorization: "Bearer s3cret", "content-type": "application/json" };
  const base = server.url!.replace(/\/mcp$/, "");
  assert.equal((await fetch(`${base}/other`, { method: "POST", headers: auth, body: "{}" })).status, 404);
  assert.equal((await fetch(server.url!, { headers: auth })).status, 405);
  assert.equal((await fetch(server.url!, { method: "POST", headers: auth, body: "{not json" })).status, 400);
  const { request } = await import("node:http");
  const status = await new Promise<number>((resolve, reject) => {
    const call = request(
      server.url!,
      { method: "POST", headers: { ...auth, host: "evil.example:80" } },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    call.on("error", reject);
    call.end("{}");
  });
  assert.equal(status, 403);
});
