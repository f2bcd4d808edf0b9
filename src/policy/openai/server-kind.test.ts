/**
 * The server kind of an upstream: detected from the routes each server's double answers (as the
 * real servers do: testing-kinds.ts cites them), named with `--upstream-kind` (a bad name fails with
 * the valid ones), and what doctor says of it: which server, and whether training is possible.
 */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { runDoctor } from "../../doctor/run-doctor.ts";
import { startServerDouble } from "../../gateway/doubles/testing-double.ts";
import { resolveUpstream } from "../../gateway/resolve-upstream.ts";
import type { Upstream } from "../../gateway/upstream.ts";
import { describeServer, detectServer, parseUpstreamKind, versionBefore } from "./server-kind.ts";

let inner: Upstream;
before(async () => {
  inner = await resolveUpstream("models/base-strong");
});
after(() => inner.close?.());

test("each server's double is detected as its kind, with its version", async () => {
  const expected = {
    "vllm-0.11": { kind: "vllm", version: "0.11.2", detectedBy: "GET /version" },
    sglang: { kind: "sglang", version: "0.5.9", detectedBy: "GET /server_info" },
    llamacpp: { kind: "llamacpp", version: "b7200-0000000", detectedBy: "GET /props" },
    ollama: { kind: "ollama", version: "0.13.5", detectedBy: "GET /api/version" },
  } as const;
  for (const [kind, info] of Object.entries(expected)) {
    const double = await startServerDouble(kind as keyof typeof expected, inner);
    try {
      assert.deepEqual(await detectServer(double.url), info, kind);
    } finally {
      await double.close();
    }
  }
  // `agentrl serve` says its name on vLLM's route.
  const serve = inner.baseURL;
  assert.equal((await detectServer(serve)).kind, "agentrl");
  // A server that answers none of the probes is a hosted API: text-only.
  const plain = createServer((_, res) => {
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((resolve) => plain.listen(0, "127.0.0.1", resolve));
  try {
    const info = await detectServer(`http://127.0.0.1:${(plain.address() as AddressInfo).port}/v1`);
    assert.deepEqual(info, { kind: "openai", version: null, detectedBy: "no probe answered" });
  } finally {
    plain.close();
  }
});

test("--upstream-kind: a kind, or an error naming every valid one", () => {
  assert.equal(parseUpstreamKind("sglang"), "sglang");
  assert.throws(
    () => parseUpstreamKind("tgi"),
    /--upstream-kind: "tgi" is not a server kind; expected one of vllm, sglang, llamacpp, ollama, openai, agentrl/,
  );
  assert.equal(versionBefore("0.11.2", [0, 12]), true);
  assert.equal(versionBefore("v0.12.0rc1", [0, 12]), false);
  assert.equal(versionBefore("1.0.0", [0, 12]), false);
});

test("doctor names the server it found and whether training is possible on it", async () => {
  const sglang = { kind: "sglang", version: "0.5.9", detectedBy: "GET /server_info" } as const;
  assert.equal(
    describeServer(sglang),
    "SGLang 0.5.9 (sglang, GET /server_info): exact token ids, training possible",
  );
  const ollama = { kind: "ollama", version: "0.13.5", detectedBy: "GET /api/version" } as const;
  const report = await runDoctor({
    policySpec: "openai:http://127.0.0.1:11434/v1#qwen3",
    server: ollama,
    tasks: { type: "world", split: "test", count: 2, seed: 1, family: "lookup" },
    checks: ["token-exactness"],
  });
  assert.equal(report.ready, false);
  assert.match(String(report.setup.server), /^Ollama 0\.13\.5 \(ollama, GET \/api\/version\): no token ids/);
  const check = report.checks.find((each) => each.id === "token-exactness")!;
  assert.equal(check.ok, false);
  assert.match(check.detail, /Ollama.*training refuses them.*RL needs the exact ids/);
  assert.match(check.changes[0].text, /serve the model with vLLM/);
});
