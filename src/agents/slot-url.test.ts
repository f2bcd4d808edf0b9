/**
 * The base URL an `--agent` function is handed is its slot's own (`/slots/<slot>/v1`), which the
 * gateway maps to the episode the slot runs now: an Agents SDK agent that sets the SDK's global
 * default client from it inside the function (the SDK's default provider then keeps that first
 * client for the slot's life) is recorded whole on every episode, not only on each slot's first
 * (against the embedded base, which returns token ids). And the mapping never moves a call into
 * another episode: a call an episode left running after its agent returned is refused when it
 * reaches the slot during the next episode, and recorded in neither.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { resolveEvalTasks } from "../eval/eval-tasks.ts";
import { startGateway } from "../gateway/server.ts";
import { httpUpstream } from "../gateway/upstream.ts";
import { openRunDirectory } from "../store/index.ts";
import { evaluateAgent } from "./evaluate-agent.ts";
import { runAgentEpisode } from "./run-episode.ts";
import { workerSlot } from "./worker-slot.ts";

test("an Agents SDK agent that sets its global client from the handed baseURL keeps every episode", async () => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-slot-url-"));
  try {
    const result = await evaluateAgent({
      agentPath: "src/agents/testing-sdk-handed-client.ts",
      policy: "models/base-strong",
      tasks: { type: "world", split: "test", count: 5, seed: 3 },
      n: 4,
      concurrency: 8,
      retries: 0,
      runsRoot: root,
      runId: "slot-url",
    });
    assert.equal(result.metrics["gateway/failed_calls"], 0, "no failed call");
    assert.equal(result.metrics["gateway/prefix_breaks"], 0, "no prefix break");
    const store = openRunDirectory(join(root, "slot-url"));
    try {
      const trajectories = store.trajectories(store.listRuns()[0].id);
      assert.equal(trajectories.length, 20, "every episode stored");
      const failed = trajectories.filter((trajectory) => trajectory.failure !== undefined);
      assert.deepEqual(
        failed.map((trajectory) => `${trajectory.id}: ${trajectory.failure?.message}`),
        [],
        "no failed episode",
      );
      for (const trajectory of trajectories) {
        assert.ok(trajectory.turns.length > 0, `${trajectory.id} has turns`);
        assert.ok(trajectory.prompt.tokenIds.length > 0, `${trajectory.id}: prompt ids`);
        for (const [k, turn] of trajectory.turns.entries())
          assert.ok(turn.tokenIds.length > 0, `${trajectory.id}: turn ${k} has its sampled ids`);
      }
    } finally {
      store.close();
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

/** An OpenAI-compatible upstream that answers every call with the last user message echoed back. */
async function echoUpstream() {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      const messages = (JSON.parse(body) as { messages: { content: string }[] }).messages;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: "c",
          object: "chat.completion",
          choices: [
            {
              index: 0,
              message: { role: "assistant", content: `echo ${messages.at(-1)?.content}` },
              finish_reason: "stop",
            },
          ],
        }),
      );
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

// Episode 1 calls once, then leaves a call scheduled 300 ms later and returns; episode 2 waits for
// that stray call (answering with its HTTP status), then makes its own call.
const STRAY_AGENT = `
let episodes = 0;
export default async (task, { baseURL, apiKey }) => {
  const ask = (content) =>
    fetch(baseURL + "/chat/completions", {
      method: "POST",
      headers: { authorization: "Bearer " + apiKey, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content }] }),
    }).then((response) => response.status);
  if (++episodes === 1) {
    await ask("first episode");
    globalThis.stray = new Promise((done) => setTimeout(done, 300)).then(() => ask("stray of the first episode"));
    return "one";
  }
  const strayStatus = await globalThis.stray;
  await ask("second episode");
  return String(strayStatus);
};
`;

test("a call an episode left running is refused in the slot's next episode, recorded in neither", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "agentrl-slot-stray-"));
  const upstream = await echoUpstream();
  const gateway = await startGateway({
    upstream: httpUpstream({ baseURL: upstream.baseURL, model: "m" }),
    token: "t",
    log: () => {},
  });
  const module = join(dir, "agent.mjs");
  writeFileSync(module, STRAY_AGENT);
  const slot = workerSlot({ path: module, slotURL: gateway.slotURL("s0"), env: {}, memoryMb: 256 });
  t.after(async () => {
    await slot.close();
    await gateway.close();
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const tasks = resolveEvalTasks({ type: "world", split: "test", count: 2, seed: 5 });
  const episode = (index: number) =>
    runAgentEpisode({
      gateway,
      slot,
      slotId: "s0",
      task: tasks[index],
      key: `k${index}`,
      seed: index,
      verify: () => false,
      apiKey: "t",
      timeoutMs: 10_000,
    });
  const prompts = (turns: { trajectory: { prompt: { text: string } } }) => turns.trajectory.prompt.text;
  const first = await episode(0);
  const second = await episode(1);
  assert.equal(first.trajectory.finalAnswer, "one");
  assert.equal(second.trajectory.finalAnswer, "409", "the stray call was refused");
  assert.equal(prompts(first), "first episode");
  assert.equal(first.trajectory.turns.length, 1, "the stray call is not in the first episode");
  assert.equal(prompts(second), "second episode");
  assert.equal(second.trajectory.turns.length, 1, "nor in the second");
});
