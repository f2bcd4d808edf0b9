/**
 * The defects the gateway had in front of real servers, each as it happened (issue 35), against
 * the servers' doubles (doubles/testing-kinds.ts) or their own bytes:
 * - vLLM ≤ 0.11 streamed a tool call without its ids: named `--upstream-kind vllm` (no version
 *   known, so the call is streamed) the short record is refused as `infra`, not stored short;
 * - `include_reasoning: false` made vLLM drop ids: the gateway no longer passes it on, and takes the
 *   reasoning out of the agent's answer itself;
 * - reasoning text was dropped while its ids were recorded: it is kept on the turn and passed on;
 * - a flat error body (SGLang) lost its message; a mid-stream error chunk was a success.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { parseCompletion, tokenIdsVerdict, upstreamErrorMessage } from "./completion.ts";
import { QUESTION, TOOLS } from "./doubles/testing-contract.ts";
import { startServerDouble } from "./doubles/testing-double.ts";
import { resolveUpstream } from "./resolve-upstream.ts";
import { startGateway } from "./server.ts";
import { StreamAssembler } from "./stream.ts";
import { buildTrajectory } from "./trajectory.ts";
import type { GatewayCall } from "./types.ts";
import type { Upstream } from "./upstream.ts";

let inner: Upstream;
before(async () => {
  inner = await resolveUpstream("models/base-strong");
});
after(() => inner.close?.());

async function oneCall(
  kind: Parameters<typeof startServerDouble>[0],
  body: Record<string, unknown>,
  upstreamKind?: "vllm",
) {
  const double = await startServerDouble(kind, inner);
  const calls: GatewayCall[] = [];
  const upstream = await resolveUpstream(`openai:${double.url}#${double.model}`, {
    ...(upstreamKind ? { upstreamKind } : {}),
  });
  const gateway = await startGateway({ upstream, log: () => {}, onCall: (call) => calls.push(call) });
  try {
    const response = await fetch(`${gateway.episodeURL("e")}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", seed: 3, messages: QUESTION, ...body }),
    });
    const text = await response.text();
    return { status: response.status, text, call: calls.at(-1)!, truth: double.calls.at(-1)! };
  } finally {
    await gateway.close();
    await double.close();
  }
}

test("vLLM 0.11 streams a tool call without its ids: detected, it is asked unstreamed; named without a version, the short record is refused", async () => {
  const detected = await oneCall("vllm-0.11", { tools: TOOLS, stream: true });
  assert.equal(detected.call.request.stream, false, "0.11 with tools: asked unstreamed");
  assert.deepEqual(detected.call.choices[0].tokenIds, detected.truth.completionIds);
  assert.ok(detected.truth.toolCalls > 0, "the model called the tool");
  const named = await oneCall("vllm-0.11", { tools: TOOLS, stream: true }, "vllm");
  assert.equal(named.call.request.stream, true);
  assert.equal(named.call.failure?.class, "infra");
  assert.match(String(named.call.failure?.code), /^(missing|short)-token-ids$/);
  assert.match(String(named.call.error), /vLLM/);
});

test("include_reasoning: false is not passed to vLLM (which would drop the ids); the agent still gets no reasoning", async () => {
  const { call, truth, text } = await oneCall("vllm", { include_reasoning: false });
  assert.equal(call.request.include_reasoning, undefined);
  assert.equal(call.error, undefined);
  assert.deepEqual(call.promptTokenIds, truth.promptIds);
  assert.deepEqual(call.choices[0].tokenIds, truth.completionIds);
  assert.doesNotMatch(text, /reasoning/);
});

test("reasoning text is kept beside its ids, unstreamed and streamed", () => {
  const completion = {
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: "4213", reasoning_content: "look it up" },
        finish_reason: "stop",
        token_ids: [5, 6, 7],
      },
    ],
    prompt_token_ids: [1, 2],
    usage: { completion_tokens: 3 },
  };
  const parsed = parseCompletion(completion, "vllm");
  assert.ok(!("error" in parsed));
  assert.equal(parsed.choices[0].reasoning, "look it up");
  assert.equal(tokenIdsVerdict(parsed), null);
  const stream = new StreamAssembler();
  stream.push(
    'data: {"choices":[{"index":0,"delta":{"reasoning":"look "},"token_ids":[5]}],"prompt_token_ids":[1,2]}\n\n' +
      'data: {"choices":[{"index":0,"delta":{"reasoning":"it up"},"token_ids":[6]}]}\n\n' +
      'data: {"choices":[{"index":0,"delta":{"content":"4213"},"token_ids":[7],"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
  );
  const streamed = parseCompletion(stream.completion(), "vllm");
  assert.ok(!("error" in streamed));
  assert.equal(streamed.choices[0].reasoning, "look it up");
  assert.deepEqual(streamed.choices[0].tokenIds, [5, 6, 7]);
  const call: GatewayCall = {
    episodeId: "e",
    seq: 0,
    api: "chat",
    startedAt: "",
    latencyMs: 1,
    stream: true,
    request: { messages: [{ role: "user", content: "q" }] },
    response: null,
    ...streamed,
  };
  const { trajectory } = buildTrajectory([call], {
    episodeId: "e",
    taskId: "t",
    family: "f",
    policyId: "p",
    seed: 1,
    finalAnswer: "4213",
  });
  assert.equal(trajectory.turns[0].reasoning, "look it up");
  assert.deepEqual(trajectory.turns[0].tokenIds, [5, 6, 7]);
});

test("ids read where each server puts them; a partial record is a failure, a record with none is text-only", () => {
  const sglang = parseCompletion(
    {
      choices: [{ index: 0, message: { content: "a" }, prompt_token_ids: [1, 2], response_token_ids: [3] }],
    },
    "sglang",
  );
  assert.ok(!("error" in sglang));
  assert.deepEqual([sglang.promptTokenIds, sglang.choices[0].tokenIds], [[1, 2], [3]]);
  const sglext = parseCompletion(
    { choices: [{ message: { content: "a" } }], sglext: { input_ids: [1], output_ids: [2, 3] } },
    "sglang",
  );
  assert.ok(!("error" in sglext));
  assert.deepEqual([sglext.promptTokenIds, sglext.choices[0].tokenIds], [[1], [2, 3]]);
  const llama = parseCompletion(
    { choices: [{ message: { content: "a" }, logprobs: { content: [{ id: 9, token: "a", logprob: -1 }] } }] },
    "llamacpp",
  );
  assert.ok(!("error" in llama));
  assert.deepEqual(llama.choices[0].tokenIds, [9]);
  // gpt-oss on vLLM 0.10.2: prompt ids, completion ids null.
  const nulled = parseCompletion(
    { choices: [{ message: { content: "a" }, token_ids: null }], prompt_token_ids: [1] },
    "vllm",
  );
  assert.ok(!("error" in nulled));
  assert.equal(tokenIdsVerdict(nulled)?.code, "missing-token-ids");
  const short = parseCompletion(
    {
      choices: [{ message: { content: "a" }, token_ids: [4] }],
      prompt_token_ids: [1],
      usage: { completion_tokens: 9 },
    },
    "vllm",
  );
  assert.ok(!("error" in short));
  assert.deepEqual(tokenIdsVerdict(short), {
    class: "infra",
    code: "short-token-ids",
    message: "the upstream returned 1 completion token ids for 9 completion tokens (usage.completion_tokens)",
  });
  const none = parseCompletion({ choices: [{ message: { content: "a" } }] }, "ollama");
  assert.ok(!("error" in none));
  assert.equal(tokenIdsVerdict(none), null);
});

test("error bodies nested or flat, and a mid-stream error chunk", () => {
  assert.equal(upstreamErrorMessage({ error: { message: "too long" } }), "too long");
  assert.equal(upstreamErrorMessage({ object: "error", message: "too long", code: 400 }), "too long");
  assert.equal(upstreamErrorMessage({ detail: "x" }), null);
  const stream = new StreamAssembler();
  stream.push(
    'data: {"choices":[{"index":0,"delta":{"content":"par"}}]}\n\ndata: {"error":{"message":"engine died","code":500}}\n\ndata: [DONE]\n\n',
  );
  assert.equal(stream.done, true);
  assert.equal(stream.upstreamError, "engine died");
});

test("an upstream built without a kind (verl's rollout servers) is asked every unstreamed way: SGLang's ids are read", async () => {
  const { httpUpstream } = await import("./upstream.ts");
  for (const kind of ["sglang", "vllm"] as const) {
    const double = await startServerDouble(kind, inner);
    const calls: GatewayCall[] = [];
    const gateway = await startGateway({
      upstream: httpUpstream({ baseURL: double.url, model: double.model }),
      log: () => {},
      onCall: (call) => calls.push(call),
    });
    try {
      await (
        await fetch(`${gateway.episodeURL("e")}/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "m", seed: 3, messages: QUESTION }),
        })
      ).text();
      assert.equal(calls[0].error, undefined, kind);
      assert.deepEqual(calls[0].promptTokenIds, double.calls[0].promptIds, kind);
      assert.deepEqual(calls[0].choices[0].tokenIds, double.calls[0].completionIds, kind);
    } finally {
      await gateway.close();
      await double.close();
    }
  }
});

test("a flat error body (SGLang) reaches the agent nested, with its message, and the record keeps it", async () => {
  const { status, text, call } = await oneCall("sglang", { max_tokens: 100_000 });
  assert.equal(status, 400);
  const body = JSON.parse(text) as { error?: { message?: string } };
  assert.match(String(body.error?.message), /maximum context length/);
  assert.match(String(call.error), /the upstream answered 400: Requested token count exceeds/);
});
