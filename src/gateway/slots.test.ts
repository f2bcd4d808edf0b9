/**
 * Slot URLs: a client configured once with `/slots/<slot>/v1` (as an agent's environment is) sends
 * its calls into whichever episode the slot is bound to now; between episodes the slot's calls are
 * refused (409), never recorded into another episode, and so is a call naming (as a worker slot's
 * calls do) an episode other than the one the slot runs.
 */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import OpenAI from "openai";
import { SLOT_EPISODE_HEADER } from "./episodes.ts";
import { startGateway } from "./server.ts";
import { httpUpstream } from "./upstream.ts";

test("a slot URL records into the episode bound to the slot, and is refused when none is", async () => {
  let calls = 0;
  const upstream = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      calls++;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: `c${calls}`,
          object: "chat.completion",
          created: 0,
          model: "m",
          prompt_token_ids: [1, 2],
          choices: [
            {
              index: 0,
              message: { role: "assistant", content: `answer ${calls}` },
              finish_reason: "stop",
              logprobs: { content: [{ token: "a", logprob: -0.5 }] },
              token_ids: [100 + calls],
            },
          ],
          usage: { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 },
        }),
      );
    });
  });
  await new Promise<void>((done) => upstream.listen(0, "127.0.0.1", done));
  const baseURL = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
  const gateway = await startGateway({
    upstream: httpUpstream({ baseURL, model: "m", tokenIds: true }),
    token: "t",
    log: () => {},
  });
  try {
    // One client for the slot's whole life, as a module-level `new OpenAI()` is.
    const client = new OpenAI({ baseURL: `${gateway.slotURL("s0")}/v1`, apiKey: "t", maxRetries: 0 });
    const ask = () =>
      client.chat.completions.create({ model: "x", messages: [{ role: "user", content: "q" }] });
    for (const episode of ["ep-a", "ep-b"]) {
      gateway.openEpisode(episode);
      gateway.bindSlot("s0", episode);
      await ask();
      gateway.bindSlot("s0", null);
      const built = gateway.finishEpisode(episode, { finalAnswer: "done" });
      assert.equal(built.trajectory.turns.length, 1, `${episode}: its own call only`);
    }
    await assert.rejects(
      ask(),
      (error: { status?: number; message?: string }) =>
        error.status === 409 && /slot s0 runs no episode now/.test(error.message ?? ""),
    );
    // A call that names the (ended) episode that made it is refused while the slot runs another.
    gateway.openEpisode("ep-c");
    gateway.bindSlot("s0", "ep-c");
    await assert.rejects(
      client.chat.completions.create(
        { model: "x", messages: [{ role: "user", content: "late" }] },
        { headers: { [SLOT_EPISODE_HEADER]: "ep-a" } },
      ),
      (error: { status?: number; message?: string }) =>
        error.status === 409 &&
        /made by episode ep-a, which has ended; slot s0 now runs episode ep-c/.test(error.message ?? ""),
    );
    await client.chat.completions.create(
      { model: "x", messages: [{ role: "user", content: "own" }] },
      { headers: { [SLOT_EPISODE_HEADER]: "ep-c" } },
    );
    assert.equal(gateway.finishEpisode("ep-c", { finalAnswer: "done" }).trajectory.turns.length, 1);
    assert.equal(calls, 3, "the refused calls never reached the upstream");
  } finally {
    await gateway.close();
    await new Promise<void>((done) => upstream.close(() => done()));
  }
});
