/**
 * The gateway's per-episode state is bounded: an episode left without `/end` is ended (and handed
 * to `onEpisode`, so nothing is lost) once idle past its TTL, and an episode past its call or byte
 * limit is refused further calls with the limit named.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createMockPolicy } from "../policy/mock.ts";
import { type ChatServer, startChatServer } from "../serve/server.ts";
import { startGateway } from "./server.ts";
import type { BuiltEpisode } from "./trajectory.ts";
import { httpUpstream } from "./upstream.ts";

let serve: ChatServer;
before(async () => {
  serve = await startChatServer({
    loadPolicy: () => createMockPolicy(() => "hello"),
    model: "m",
    port: 0,
    log: () => {},
  });
});
after(() => serve.close());

const call = (url: string, episode: string, content = "hi") =>
  fetch(`${url}/episodes/${episode}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", messages: [{ role: "user", content }] }),
  });

test("an episode idle past its TTL is ended as failed and recorded; a late call is refused", async () => {
  const ended: BuiltEpisode[] = [];
  const gateway = await startGateway({
    upstream: httpUpstream({ baseURL: serve.url, model: "m" }),
    episodeTtlMs: 300,
    onEpisode: (episode) => ended.push(episode),
    log: () => {},
  });
  try {
    assert.equal((await call(gateway.url, "forgotten")).status, 200);
    assert.equal((await call(gateway.url, "kept-alive")).status, 200);
    // Keep one episode busy (a call every ~40 ms, well within the TTL) while the other goes idle.
    const deadline = Date.now() + 5000;
    while (ended.length === 0 && Date.now() < deadline) {
      await new Promise((done) => setTimeout(done, 40));
      assert.equal((await call(gateway.url, "kept-alive")).status, 200);
    }
    assert.deepEqual(
      ended.map((episode) => episode.trajectory.id),
      ["forgotten"],
      "only the idle episode expired",
    );
    const [expired] = ended;
    assert.equal(expired.trajectory.endReason, "policy-error");
    assert.equal(expired.trajectory.turns.length, 1, "its call was kept");
    assert.deepEqual(
      { class: expired.trajectory.failure?.class, code: expired.trajectory.failure?.code },
      { class: "agent", code: "episode-expired" },
      "its agent never ended it: an agent failure, not the policy's",
    );
    assert.match(
      String(expired.trajectory.info?.error),
      /episode expired: no call, reward or \/end for 0\.3 s/,
    );
    const late = await call(gateway.url, "forgotten");
    assert.equal(late.status, 409);
  } finally {
    await gateway.close();
  }
});

test("an episode past its call or byte limit is refused with the limit named", async () => {
  const gateway = await startGateway({
    upstream: httpUpstream({ baseURL: serve.url, model: "m" }),
    maxEpisodeCalls: 2,
    maxEpisodeBytes: 2000,
    log: () => {},
  });
  try {
    assert.equal((await call(gateway.url, "chatty")).status, 200);
    assert.equal((await call(gateway.url, "chatty")).status, 200);
    const third = await call(gateway.url, "chatty");
    assert.equal(third.status, 413);
    assert.match(
      (await third.json()).error.message,
      /episode chatty has made 2 calls, the limit \(maxEpisodeCalls/,
    );
    // Another episode is not affected; a big one hits the byte limit.
    assert.equal((await call(gateway.url, "big", "x".repeat(3000))).status, 200);
    const over = await call(gateway.url, "big");
    assert.equal(over.status, 413);
    assert.match(
      (await over.json()).error.message,
      /episode big holds \d+ bytes of calls, the limit \(maxEpisodeBytes/,
    );
    const ended = gateway.finishEpisode("chatty", { finalAnswer: null });
    assert.equal(ended.trajectory.turns.length, 2);
  } finally {
    await gateway.close();
  }
});

test("an episode that hit its call or byte limit is recorded as the agent's failure, not the policy's", async () => {
  const ended: BuiltEpisode[] = [];
  const gateway = await startGateway({
    upstream: httpUpstream({ baseURL: serve.url, model: "m" }),
    maxEpisodeCalls: 2,
    maxEpisodeBytes: 2000,
    onEpisode: (episode) => ended.push(episode),
    log: () => {},
  });
  try {
    assert.equal((await call(gateway.url, "looping")).status, 200);
    assert.equal((await call(gateway.url, "looping")).status, 200);
    assert.equal((await call(gateway.url, "looping")).status, 413);
    // Ended over HTTP with an answer the agent gave anyway, as an agent catching the 413 would.
    const end = await fetch(`${gateway.url}/episodes/looping/end`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ answer: "hello" }),
    });
    assert.equal(end.status, 200);
    assert.equal((await call(gateway.url, "hoarding", "x".repeat(3000))).status, 200);
    assert.equal((await call(gateway.url, "hoarding")).status, 413);
    gateway.finishEpisode("hoarding", { finalAnswer: null });
    const byId = new Map(ended.map((episode) => [episode.trajectory.id, episode.trajectory]));
    assert.deepEqual(
      { class: byId.get("looping")?.failure?.class, code: byId.get("looping")?.failure?.code },
      { class: "agent", code: "episode-call-limit" },
    );
    assert.match(
      byId.get("looping")?.failure?.message ?? "",
      /has made 2 calls, the limit \(maxEpisodeCalls/,
    );
    assert.deepEqual(
      { class: byId.get("hoarding")?.failure?.class, code: byId.get("hoarding")?.failure?.code },
      { class: "agent", code: "episode-byte-limit" },
    );
    // An episode within its limits carries no failure of that kind.
    assert.equal((await call(gateway.url, "fine")).status, 200);
    assert.equal(gateway.finishEpisode("fine", { finalAnswer: "hello" }).trajectory.failure, undefined);
  } finally {
    await gateway.close();
  }
});
