/**
 * The door of all six servers (serve, gateway, agent-server, verify serve, mcp serve, ui), tried
 * the way a web page in the user's browser or a DNS-rebinding attack would: each server gets the
 * same hostile requests, every one of which must be refused with the shared status, and one
 * legitimate loopback request that must still be answered. A non-loopback bind without a token is
 * refused by all six with the same words (checked before anything listens).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { rolloutTasks } from "../env/task-set.ts";
import { resolveUpstream } from "../gateway/resolve-upstream.ts";
import { startGateway } from "../gateway/server.ts";
import { httpUpstream } from "../gateway/upstream.ts";
import { serveHttp } from "../mcp/server.ts";
import { createMockPolicy } from "../policy/mock.ts";
import { startChatServer } from "../serve/server.ts";
import { createCalcTool } from "../tools/index.ts";
import { startDashboard } from "../ui/server.ts";
import { serveVerify } from "../verify/serve.ts";
import { startAgentServer } from "../verl/agent-server.ts";

interface Sent {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

/** One raw request (node:http: fetch may not set Host); resolves with the status and body text. */
function send(base: string, sent: Sent): Promise<{ status: number; text: string }> {
  const url = new URL(sent.path, base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        hostname: url.hostname,
        port: url.port,
        path: url.pathname,
        method: sent.method,
        agent: false,
        headers: {
          ...(sent.body !== undefined ? { "content-length": Buffer.byteLength(sent.body) } : {}),
          ...sent.headers,
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on("error", reject);
    req.end(sent.body);
  });
}

const JSON_TYPE = { "content-type": "application/json" };

/** The hostile variants of a legitimate request, each with the status it must get. */
function hostile(legit: Sent, port: string): { name: string; request: Sent; status: number }[] {
  const headers = legit.headers ?? {};
  const post = legit.method === "POST" ? legit : { ...legit, method: "POST", body: legit.body ?? "{}" };
  return [
    {
      name: "Host attacker.example",
      request: { ...legit, headers: { ...headers, host: "attacker.example" } },
      status: 403,
    },
    {
      name: "Host attacker.example with the port",
      request: { ...legit, headers: { ...headers, host: `attacker.example:${port}` } },
      status: 403,
    },
    {
      name: "Host 127.0.0.1.attacker.example",
      request: { ...legit, headers: { ...headers, host: "127.0.0.1.attacker.example" } },
      status: 403,
    },
    {
      name: "cross-site text/plain POST",
      request: {
        ...post,
        headers: { ...headers, "content-type": "text/plain", origin: "https://evil.example" },
      },
      status: 403,
    },
    {
      name: "cross-site form POST",
      request: {
        ...post,
        headers: {
          ...headers,
          "content-type": "application/x-www-form-urlencoded",
          origin: "https://evil.example",
        },
      },
      status: 403,
    },
    {
      name: "cross-site request with the legitimate body",
      request: { ...legit, headers: { ...headers, origin: "https://evil.example" } },
      status: 403,
    },
    {
      name: "Origin null (sandboxed page, file://)",
      request: { ...post, headers: { ...headers, "content-type": "text/plain", origin: "null" } },
      status: 403,
    },
  ];
}

/** A JSON route's extra hostile variants: a body not declared application/json (no Origin sent). */
function notJson(legit: Sent): { name: string; request: Sent; status: number }[] {
  const headers = { ...legit.headers };
  delete headers["content-type"];
  return [
    {
      name: "text/plain body",
      request: { ...legit, headers: { ...headers, "content-type": "text/plain" } },
      status: 415,
    },
    { name: "no content type", request: { ...legit, headers }, status: 415 },
  ];
}

const tally: { server: string; tried: number; accepted: number }[] = [];
const cleanups: (() => unknown)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  const lines = tally.map((row) => `${row.server}: ${row.tried} hostile requests, ${row.accepted} accepted`);
  console.log(`boundary: ${lines.join("; ")}`);
});

async function tryServer(
  name: string,
  base: string,
  legit: Sent,
  answered: (response: { status: number; text: string }) => void,
  jsonRoute: boolean,
) {
  const port = new URL(base).port;
  const cases = [...hostile(legit, port), ...(jsonRoute ? notJson(legit) : [])];
  let accepted = 0;
  for (const attempt of cases) {
    const response = await send(base, attempt.request);
    if (response.status >= 200 && response.status < 300) accepted++;
    assert.equal(response.status, attempt.status, `${name}: ${attempt.name}: ${response.text}`);
  }
  tally.push({ server: name, tried: cases.length, accepted });
  answered(await send(base, legit));
}

const silent = () => {};
const completion = (model: string): Sent => ({
  method: "POST",
  path: "/v1/chat/completions",
  headers: JSON_TYPE,
  body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
});

test("serve and gateway: hostile requests refused, a loopback JSON request answered", async () => {
  const serve = await startChatServer({
    loadPolicy: () => createMockPolicy(() => "hello"),
    model: "m",
    port: 0,
    log: silent,
  });
  cleanups.push(() => serve.close());
  await tryServer(
    "serve",
    serve.url,
    completion("m"),
    (response) => {
      assert.equal(response.status, 200, response.text);
      assert.equal(JSON.parse(response.text).choices[0].message.content, "hello");
    },
    true,
  );

  const gateway = await startGateway({
    upstream: httpUpstream({ baseURL: serve.url, model: "m" }),
    log: silent,
  });
  cleanups.push(() => gateway.close());
  await tryServer(
    "gateway",
    gateway.url,
    { ...completion("any"), path: "/episodes/e1/v1/chat/completions" },
    (response) => {
      assert.equal(response.status, 200, response.text);
      assert.equal(JSON.parse(response.text).choices[0].message.content, "hello");
    },
    true,
  );
});

test("agent-server: hostile requests refused, a loopback episode request answered", async () => {
  const upstream = await resolveUpstream("expert");
  cleanups.push(() => upstream.close?.());
  const server = await startAgentServer({ port: 0, upstream, budgets: { maxTurns: 6 }, log: silent });
  cleanups.push(() => server.close());
  const [task] = rolloutTasks({ split: "test", count: 1, seed: 2, family: "lookup" });
  await tryServer(
    "agent-server",
    server.url,
    { method: "POST", path: "/v1/episodes", headers: JSON_TYPE, body: JSON.stringify({ task }) },
    (response) => {
      assert.equal(response.status, 200, response.text);
      assert.equal(JSON.parse(response.text).end_reason, "answer");
    },
    true,
  );
  assert.equal(server.stats.episodes, 1, "only the legitimate request ran an episode");
});

test("verify serve: hostile requests refused, a loopback JSON request answered", async () => {
  const server = await serveVerify({ verifier: "em", port: 0, log: silent });
  cleanups.push(() => server.close());
  await tryServer(
    "verify serve",
    server.url,
    {
      method: "POST",
      path: "/verify",
      headers: JSON_TYPE,
      body: JSON.stringify({ answer: "Paris", ground_truth: "Paris" }),
    },
    (response) => {
      assert.equal(response.status, 200, response.text);
      assert.equal(JSON.parse(response.text).correct, true);
    },
    true,
  );
});

test("mcp serve: hostile requests refused, a loopback JSON-RPC request answered", async () => {
  const server = await serveHttp([createCalcTool()], { port: 0 });
  cleanups.push(() => server.close());
  await tryServer(
    "mcp serve",
    server.url!,
    {
      method: "POST",
      path: "/mcp",
      headers: { ...JSON_TYPE, accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    },
    (response) => {
      assert.equal(response.status, 200, response.text);
      assert.equal(JSON.parse(response.text).result.tools[0].name, "calc");
    },
    true,
  );
});

test("ui: hostile requests refused, a loopback request answered", async () => {
  const runs = mkdtempSync(join(tmpdir(), "agentrl-boundary-ui-"));
  cleanups.push(() => rmSync(runs, { recursive: true, force: true }));
  const dashboard = await startDashboard({ runs, port: 0 });
  cleanups.push(() => dashboard.close());
  await tryServer(
    "ui",
    dashboard.url,
    { method: "GET", path: "/api/runs" },
    (response) => {
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(JSON.parse(response.text).stores, []);
    },
    false,
  );
});

test("a host given with --allow-host is answered; others still refused", async () => {
  const server = await serveVerify({ verifier: "em", port: 0, allowHosts: ["verify.internal"], log: silent });
  cleanups.push(() => server.close());
  const ask = (host: string, origin?: string) =>
    send(server.url, {
      method: "POST",
      path: "/verify",
      headers: { ...JSON_TYPE, host, ...(origin ? { origin } : {}) },
      body: JSON.stringify({ answer: "a", ground_truth: "a" }),
    });
  assert.equal((await ask("verify.internal:8301")).status, 200);
  assert.equal((await ask("localhost", "http://verify.internal:3000")).status, 200);
  assert.equal((await ask("verify.internal.evil.example")).status, 403);
  assert.equal((await ask("localhost", "https://evil.example")).status, 403);
});

test("all six refuse a non-loopback bind without a token, with the same words", async () => {
  const refusal =
    /refusing to listen on 0\.0\.0\.0 without a token: .*\(--token\) or allow it explicitly \(--insecure\)/;
  const host = "0.0.0.0";
  await assert.rejects(
    startChatServer({ loadPolicy: () => createMockPolicy(() => ""), model: "m", host, port: 0, log: silent }),
    refusal,
  );
  await assert.rejects(
    startGateway({
      upstream: httpUpstream({ baseURL: "http://127.0.0.1:9/v1", model: "m" }),
      host,
      log: silent,
    }),
    refusal,
  );
  await assert.rejects(startAgentServer({ host, port: 0, log: silent }), refusal);
  await assert.rejects(serveVerify({ verifier: "em", host, port: 0, log: silent }), refusal);
  await assert.rejects(serveHttp([createCalcTool()], { host, port: 0, log: silent }), refusal);
  await assert.rejects(startDashboard({ runs: tmpdir(), host, port: 0, log: silent }), refusal);
});
