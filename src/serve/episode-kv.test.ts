/**
 * A caller that names its episode (`x-agentrl-episode-id`, sent by the gateway) gets the same policy
 * episode id on each of its calls, so the embedded policy keeps that episode's KV cache between
 * calls instead of prefilling the conversation again (it is not released after a call; unnamed
 * calls are); a second call of the episode while one is in
 * flight, and a call naming none, get ids of their own.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createMockPolicy } from "../policy/mock.ts";
import { EPISODE_ID_HEADER } from "../policy/openai/spec.ts";
import type { PolicyContext, PolicyStep } from "../types/policy.ts";
import { startChatServer } from "./server.ts";

test("a named episode keeps its policy episode id across calls; concurrent or unnamed calls do not share it", async () => {
  const seen: string[] = [];
  const released: string[] = [];
  let hold: Promise<void> | null = null;
  const mock = createMockPolicy(() => "<answer> 4 </answer>");
  const policy = {
    ...mock,
    async act(contexts: readonly PolicyContext[]): Promise<PolicyStep[]> {
      seen.push(...contexts.map((context) => context.episodeId));
      if (hold) await hold;
      return mock.act(contexts);
    },
    release(episodeIds: readonly string[]) {
      released.push(...episodeIds);
    },
  };
  const server = await startChatServer({ loadPolicy: () => policy, model: "m", port: 0, log: () => {} });
  const call = (episode?: string) =>
    fetch(`${server.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(episode ? { [EPISODE_ID_HEADER]: episode } : {}) },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "what is 2 + 2 ?" }] }),
    }).then((response) => {
      assert.equal(response.status, 200);
      return response.json();
    });
  try {
    await call("ep-1");
    await call("ep-1");
    assert.equal(seen[0], seen[1], "the same episode id on both calls");
    assert.deepEqual(released, [], "a named episode is not released between its calls (its KV cache stays)");
    await call();
    await call();
    assert.notEqual(seen[2], seen[3], "unnamed calls are episodes of their own");
    assert.deepEqual(released, [seen[2], seen[3]], "an unnamed call's episode is released after it");
    let release = () => {};
    hold = new Promise((done) => {
      release = done;
    });
    const first = call("ep-2");
    while (seen.length < 5) await new Promise((done) => setTimeout(done, 5));
    // The second arrives while the first is in the policy (the batcher queues it meanwhile).
    const second = call("ep-2");
    while (server.stats.requests < 6) await new Promise((done) => setTimeout(done, 5));
    release();
    await Promise.all([first, second]);
    assert.notEqual(seen[4], seen[5], "a concurrent call of the same episode gets its own id");
    assert.deepEqual(
      released.slice(2),
      [seen[5]],
      "the concurrent call's own id is released, the named one kept",
    );
  } finally {
    await server.close();
  }
});
