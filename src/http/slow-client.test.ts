/**
 * Slow clients (slowloris): a connection that sends its headers, or its body, a byte at a time
 * is closed by the server's own timeouts (boundary.ts `SERVER_TIMEOUTS`, here made small), within
 * the configured bound plus one connection check, on `serve` and the gateway. Loopback only; each
 * case takes about a second.
 */
import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, test } from "node:test";
import { startGateway } from "../gateway/server.ts";
import { httpUpstream } from "../gateway/upstream.ts";
import { createMockPolicy } from "../policy/mock.ts";
import { type ChatServer, startChatServer } from "../serve/server.ts";
import type { ServerTimeouts } from "./boundary.ts";

const timeouts: ServerTimeouts = { keepAliveMs: 200, headersMs: 400, requestMs: 800, checkIntervalMs: 100 };
/** Time the server may take past a timeout: one connection check, and scheduling on a busy machine. */
const SLACK_MS = timeouts.checkIntervalMs + 1500;

let serve: ChatServer;
let gateway: Awaited<ReturnType<typeof startGateway>>;
before(async () => {
  serve = await startChatServer({
    loadPolicy: () => createMockPolicy(() => "hello"),
    model: "m",
    port: 0,
    log: () => {},
    timeouts,
  });
  gateway = await startGateway({
    upstream: httpUpstream({ baseURL: serve.url, model: "m" }),
    port: 0,
    log: () => {},
    timeouts,
  });
});
after(async () => {
  await gateway.close();
  await serve.close();
});

/**
 * Opens a socket to `url`, writes `head` at once, then one byte of `drip` every 50 ms; resolves
 * with when the server closed the connection (ms after the first write) and what it answered.
 */
function slowClient(
  url: string,
  head: string,
  drip: string,
): Promise<{ closedAfterMs: number; answer: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let answer = "";
    let sent = 0;
    let started = 0;
    let timer: NodeJS.Timeout | undefined;
    // The test's own bound: a server that never closes fails here instead of hanging.
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(`the server kept a slow connection open past 10 s; it answered ${JSON.stringify(answer)}`),
      );
    }, 10_000);
    socket.setEncoding("utf8");
    socket.on("data", (chunk) => {
      answer += chunk;
    });
    socket.on("error", () => {}); // a reset is a close too
    socket.on("close", () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({ closedAfterMs: performance.now() - started, answer });
    });
    socket.on("connect", () => {
      started = performance.now();
      socket.write(head);
      timer = setInterval(() => {
        if (sent < drip.length && !socket.destroyed) socket.write(drip[sent++]);
      }, 50);
    });
  });
}

for (const [name, url] of [
  ["serve", () => serve.url],
  ["gateway", () => gateway.url],
] as const) {
  test(`${name}: headers sent a byte at a time are cut at the headers timeout`, async (t) => {
    const { closedAfterMs, answer } = await slowClient(
      url(),
      "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n",
      `X-Slow: ${"a".repeat(400)}`,
    );
    t.diagnostic(`closed after ${closedAfterMs.toFixed(0)} ms (headers timeout ${timeouts.headersMs} ms)`);
    assert.ok(closedAfterMs >= timeouts.headersMs - 50, `closed early, at ${closedAfterMs.toFixed(0)} ms`);
    assert.ok(
      closedAfterMs <= timeouts.headersMs + SLACK_MS,
      `closed at ${closedAfterMs.toFixed(0)} ms, past ${timeouts.headersMs} ms + ${SLACK_MS} ms`,
    );
    assert.match(answer, /^HTTP\/1\.1 408 |^$/, "a 408, or nothing");
  });

  test(`${name}: a body sent a byte at a time is cut at the request timeout`, async (t) => {
    const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(200) }] });
    const { closedAfterMs, answer } = await slowClient(
      url(),
      "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
      body,
    );
    t.diagnostic(`closed after ${closedAfterMs.toFixed(0)} ms (request timeout ${timeouts.requestMs} ms)`);
    assert.ok(closedAfterMs >= timeouts.requestMs - 50, `closed early, at ${closedAfterMs.toFixed(0)} ms`);
    assert.ok(
      closedAfterMs <= timeouts.requestMs + SLACK_MS,
      `closed at ${closedAfterMs.toFixed(0)} ms, past ${timeouts.requestMs} ms + ${SLACK_MS} ms`,
    );
    assert.match(answer, /^HTTP\/1\.1 408 |^$/, "a 408, or nothing");
  });
}

test("the default check interval bounds how late a timeout fires: well under the timeouts themselves", async () => {
  const { SERVER_TIMEOUTS } = await import("./boundary.ts");
  assert.ok(SERVER_TIMEOUTS.checkIntervalMs <= 5_000);
  assert.ok(SERVER_TIMEOUTS.headersMs > SERVER_TIMEOUTS.keepAliveMs);
});
