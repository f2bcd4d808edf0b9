/**
 * An episode that failed because the upstream did is rerun (`retries`), and one that still fails
 * is stored as `policy-error` carrying an `infra` failure (`upstream-failed`), counted in
 * `agent/infra_failed_episodes` and `eval/infra_failures`, never as the agent's failure, and out of the denominator. The upstream is a fake OpenAI server whose first
 * answer is malformed and whose later answers are a plain "42".
 */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import openaiAgent from "../../examples/agents/openai.ts";
import { evaluateAgent } from "./evaluate-agent.ts";
import type { AgentFunction } from "./types.ts";

async function flakyUpstream(badAnswers: number) {
  let served = 0;
  const server = createServer((req, res) => {
    // The gateway's probes for the server's kind (GET) find nothing: a plain OpenAI-compatible server.
    if (req.method === "GET") {
      res.writeHead(404);
      return res.end();
    }
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      served++;
      if (served <= badAnswers) return res.end(JSON.stringify({ choices: "broken" }));
      res.end(
        JSON.stringify({
          id: "c",
          object: "chat.completion",
          choices: [{ index: 0, message: { role: "assistant", content: "42" }, finish_reason: "stop" }],
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    spec: `openai:http://127.0.0.1:${(server.address() as AddressInfo).port}/v1#fake`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const common = {
  agentPath: "examples/agents/openai.ts",
  agent: openaiAgent as unknown as AgentFunction,
  tasks: { type: "world" as const, split: "test" as const, count: 1, seed: 1 },
  n: 1,
  persist: false,
};

test("an upstream failure is retried with the same seed; the retried episode is recorded", async () => {
  const upstream = await flakyUpstream(1);
  try {
    const result = await evaluateAgent({ ...common, policy: upstream.spec, retries: 1 });
    assert.equal(result.totals.policyErrors, 0);
    assert.equal(result.endReasons.answer, 1);
    assert.equal(result.metrics["gateway/failed_calls"], 1);
    assert.equal(result.metrics["agent/infra_failed_episodes"], 0, "the retry succeeded");
  } finally {
    await upstream.close();
  }
});

test("without retries left, the failed episode is an infra failure, not the agent's: counted, out of the denominator", async () => {
  const upstream = await flakyUpstream(2);
  try {
    const result = await evaluateAgent({ ...common, policy: upstream.spec, retries: 1 });
    // The upstream's malformed answer is the infrastructure's failure, not a sample of the agent.
    assert.equal(result.totals.samples, 0);
    assert.equal(result.totals.infraFailures, 1);
    assert.equal(result.totals.policyErrors, 0);
    assert.equal(result.endReasons["policy-error"], 1);
    assert.equal(result.metrics["agent/infra_failed_episodes"], 1);
    assert.equal(result.metrics["agent/failed_episodes"], 0, "the agent threw because the upstream failed");
    assert.equal(result.metrics["eval/infra_failures"], 1);
    assert.deepEqual(result.curves.ks, [], "nothing was measured");
  } finally {
    await upstream.close();
  }
});
