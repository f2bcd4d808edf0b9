/**
 * The agent-server's bounds: a request may name only the rollout servers it was allowed (no SSRF),
 * its per-(rollout server, model, sampling) gateways stay within `maxGateways` (the evicted ones
 * closed, the shared upstream kept open), and a rollout server's `/models` answer is size-limited.
 */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { rolloutTasks } from "../env/task-set.ts";
import { resolveUpstream } from "../gateway/resolve-upstream.ts";
import { startAgentServer } from "./agent-server.ts";

const [task] = rolloutTasks({ split: "test", count: 1, seed: 2, family: "lookup" });

function post(url: string, body: unknown) {
  return fetch(`${url}/v1/episodes`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** A loopback server standing for an internal service: counts the requests it gets. */
async function victim(answer: (path: string) => string) {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? "");
    res.writeHead(200, { "content-type": "application/json" });
    res.end(answer(req.url ?? ""));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { hits, base, close: () => new Promise((done) => server.close(done)) };
}

test("a request naming a rollout server outside the allowlist is refused before any request is made", async () => {
  const internal = await victim(() => JSON.stringify({ data: [{ id: "m" }] }));
  const upstream = await resolveUpstream("expert");
  const server = await startAgentServer({ port: 0, upstream, log: () => {} });
  try {
    for (const base_url of [`${internal.base}/v1`, "http://169.254.169.254/latest/meta-data"]) {
      const refused = await post(server.url, { task, upstream: { base_url } });
      assert.equal(refused.status, 403);
      const { error } = await refused.json();
      assert.equal(error.param, "upstream.base_url");
      assert.match(
        error.message,
        /is not allowed: the agent-server calls only http:\/\/127\.0\.0\.1:\d+\/v1 \(--upstream/,
      );
    }
    assert.deepEqual(internal.hits, [], "the internal service was never contacted");
    // Its own --upstream, named explicitly, is allowed.
    const own = await post(server.url, { task, upstream: { base_url: upstream.baseURL } });
    assert.equal(own.status, 200);
  } finally {
    await server.close();
    await upstream.close?.();
    await internal.close();
  }
});

test("--upstream-allow lets a prefix through; a /models answer past the size limit fails the episode", async () => {
  const huge = await victim((path) =>
    path.endsWith("/models") ? `{"data":[{"id":"${"x".repeat(2 << 20)}"}]}` : "{}",
  );
  const server = await startAgentServer({ port: 0, upstreamAllow: [`${huge.base}/v1`], log: () => {} });
  try {
    const response = await post(server.url, { task, upstream: { base_url: `${huge.base}/v1` } });
    assert.equal(response.status, 200);
    const episode = await response.json();
    assert.equal(episode.end_reason, "policy-error");
    assert.match(episode.error, /larger than 1048576 bytes/);
    assert.deepEqual(huge.hits, ["/v1/models"]);
  } finally {
    await server.close();
    await huge.close();
  }
});

test("gateways per sampling setting stay within maxGateways: the least recently used is closed, the shared upstream is not", async () => {
  const upstream = await resolveUpstream("expert");
  const server = await startAgentServer({ port: 0, upstream, maxGateways: 2, log: () => {} });
  try {
    for (const temperature of [0.1, 0.2, 0.3, 0.4]) {
      const response = await post(server.url, { task, sampling: { temperature } });
      assert.equal(response.status, 200);
      assert.equal((await response.json()).end_reason, "answer", `temperature ${temperature}`);
    }
    // Closing is asynchronous: wait for the evicted gateways' close to finish.
    for (let i = 0; i < 100 && server.stats.gatewaysClosed < 2; i++)
      await new Promise((done) => setTimeout(done, 10));
    assert.equal(server.stats.gateways, 2, "two gateways open");
    assert.equal(server.stats.gatewaysClosed, 2, "four settings: the first two closed");
    // The first setting again: a new gateway in front of the same (still open) upstream.
    const again = await post(server.url, { task, sampling: { temperature: 0.1 } });
    assert.equal((await again.json()).end_reason, "answer");
  } finally {
    await server.close();
    await upstream.close?.();
  }
});
