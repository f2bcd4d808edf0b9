import assert from "node:assert/strict";
import { test } from "node:test";
import { createMockPolicy } from "../policy/mock.ts";
import type { PolicyContext } from "../types/policy.ts";
import { startChatServer } from "./server.ts";

test("one policy whatever the sampling settings: temperature and top_p travel with each request", async () => {
  const loads: { temperature: number; topP: number }[] = [];
  const seen: PolicyContext[] = [];
  const server = await startChatServer({
    loadPolicy: (sampling) => {
      loads.push(sampling);
      return createMockPolicy((context) => {
        seen.push(context);
        return "ok";
      });
    },
    model: "m",
    port: 0,
    defaults: { temperature: 0.7, topP: 0.9 },
    log: () => {},
  });
  try {
    const settings = [{ temperature: 0.2 }, { temperature: 1.3, top_p: 0.5 }, { top_p: 0.8 }, {}];
    for (const sampling of settings) {
      const response = await fetch(`${server.url}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], ...sampling }),
      });
      assert.equal(response.status, 200);
    }
    assert.deepEqual(loads, [{ temperature: 0.7, topP: 0.9 }], "loaded once, with the defaults");
    assert.deepEqual(
      seen.map((context) => context.sampling),
      [
        { temperature: 0.2, topP: 0.9 },
        { temperature: 1.3, topP: 0.5 },
        { temperature: 0.7, topP: 0.8 },
        { temperature: 0.7, topP: 0.9 },
      ],
    );
  } finally {
    await server.close();
  }
});

test("requestSampling false: the policy samples with its own settings whatever a request asks", async () => {
  const seen: PolicyContext[] = [];
  const server = await startChatServer({
    loadPolicy: () =>
      createMockPolicy((context) => {
        seen.push(context);
        return "ok";
      }),
    requestSampling: false,
    model: "m",
    port: 0,
    log: () => {},
  });
  try {
    const response = await fetch(`${server.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], temperature: 0.3 }),
    });
    assert.equal(response.status, 200);
    assert.deepEqual(
      seen.map((context) => context.sampling),
      [undefined],
    );
  } finally {
    await server.close();
  }
});
