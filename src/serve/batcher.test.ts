/**
 * The act batcher: requests of concurrent clients share one `act` even when they reach it a few
 * event-loop turns apart (as a gateway's forwards do), a request after a quiet spell starts at
 * once, and a failed batch fails only the request that broke it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createMockPolicy } from "../policy/mock.ts";
import type { PolicyContext, PolicyStep } from "../types/policy.ts";
import { createActBatcher } from "./batcher.ts";

function recordingPolicy() {
  const batches: string[][] = [];
  const mock = createMockPolicy(() => "<answer> 4 </answer>");
  const policy = {
    ...mock,
    async act(contexts: readonly PolicyContext[]): Promise<PolicyStep[]> {
      batches.push(contexts.map((context) => context.episodeId));
      if (contexts.some((context) => context.episodeId === "bad")) throw new Error("bad context");
      return mock.act(contexts);
    },
  };
  return { policy, batches };
}

const context = (episodeId: string): PolicyContext =>
  ({
    episodeId,
    task: { id: episodeId, question: "q", answer: "4", family: "chat" },
    prompt: { text: "q", tokenIds: [] },
    turns: [],
    seed: 1,
    maxTokens: 8,
  }) as unknown as PolicyContext;

/** Resolves after `turns` turns of the event loop (setImmediate, as request parsing takes). */
const turns = async (count: number) => {
  for (let i = 0; i < count; i++) await new Promise((done) => setImmediate(done));
};

/** Requests b, c and d, each two loop turns after the one before (as a gateway's forwards come). */
async function spacedRequests(batcher: ReturnType<typeof createActBatcher>) {
  const pending = [batcher.act([context("b")])];
  await turns(2);
  pending.push(batcher.act([context("c")]));
  await turns(2);
  pending.push(batcher.act([context("d")]));
  await Promise.all(pending);
}

test("requests a few loop turns apart after a busy spell share one act; a lone one waits for nothing", async () => {
  const { policy, batches } = recordingPolicy();
  const batcher = createActBatcher(policy, 64, { gatherMs: 50 });
  // a first request after a quiet spell runs alone, at once
  const started = performance.now();
  await batcher.act([context("a")]);
  assert.ok(performance.now() - started < 40, "a lone request does not wait the gather window");
  // right after it (the policy was busy a moment ago) three requests arrive two turns apart
  await spacedRequests(batcher);
  assert.deepEqual(batches, [["a"], ["b", "c", "d"]]);
});

test("without the wait (gatherMs 0) the same requests run one act each", async () => {
  const { policy, batches } = recordingPolicy();
  const batcher = createActBatcher(policy, 64, { gatherMs: 0 });
  await batcher.act([context("a")]);
  await spacedRequests(batcher);
  assert.deepEqual(batches, [["a"], ["b"], ["c"], ["d"]]);
});

test("requests the server is still reading hold the batch (arriving), up to the window", async () => {
  const { policy, batches } = recordingPolicy();
  let arriving = 1;
  const batcher = createActBatcher(policy, 64, { gatherMs: 1000, arriving: () => arriving });
  const first = batcher.act([context("x")]);
  await turns(3);
  arriving = 0;
  const second = batcher.act([context("y")]);
  await Promise.all([first, second]);
  assert.deepEqual(batches, [["x", "y"]]);
});

test("a batch that throws is retried request by request: only the bad one fails", async () => {
  const { policy, batches } = recordingPolicy();
  const batcher = createActBatcher(policy, 64, { gatherMs: 50 });
  await batcher.act([context("warm")]);
  const good = batcher.act([context("ok")]);
  const bad = batcher.act([context("bad")]);
  await assert.rejects(bad, /bad context/);
  assert.equal((await good).length, 1);
  assert.deepEqual(batches.slice(1), [["ok", "bad"], ["ok"], ["bad"]]);
});
