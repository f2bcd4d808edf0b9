/**
 * verl's side without verl or a GPU: the Python `agentrl_agent` loop, run by Debian's python3 the
 * way verl's AgentLoopWorker runs it (against a stub of verl's agent-loop interface, testdata/),
 * calls a real agent-server whose rollout server is `agentrl serve` on the committed base-strong
 * checkpoint, reached through a recording proxy (what the rollout server really answered).
 *
 * Checked against the proxy's record, not against the agent-server's own bookkeeping: the prompt is
 * the first call's exact context ids; the response is exactly the later context, with mask 1 on
 * precisely the ids each call sampled and their log-probs, 0 on the observation ids between; the
 * reward is the world verifier's verdict on the answer the model gave; a hundred concurrent
 * episodes all come back, each once, and all are stored.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import openaiAgent from "../../examples/agents/openai.ts";
import type { AgentFunction } from "../agents/types.ts";
import { rolloutTasks } from "../env/task-set.ts";
import { resolveUpstream } from "../gateway/resolve-upstream.ts";
import type { Upstream } from "../gateway/upstream.ts";
import { createRunDirectory } from "../store/index.ts";
import type { Task } from "../types/task.ts";
import { checkAnswer } from "../world/index.ts";
import { startAgentServer } from "./agent-server.ts";
import { runDriver } from "./testing.ts";

interface RecordedCall {
  prompt: number[];
  sampled: number[];
  logprobs: number[];
  content: string | null;
  toolCalls: number;
  seed: number;
  temperature: number;
}

/** A pass-through proxy in front of the rollout server that keeps what it answered. */
async function recordingProxy(
  target: string,
): Promise<{ server: Server; address: string; calls: RecordedCall[] }> {
  const calls: RecordedCall[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const upstream = await fetch(`${target}${(req.url ?? "/").replace(/^\/v1/, "")}`, {
      method: req.method,
      headers: { "content-type": "application/json" },
      ...(req.method === "POST" ? { body: Buffer.concat(chunks) } : {}),
    });
    const text = await upstream.text();
    if (req.method === "POST" && upstream.ok) {
      const body = JSON.parse(text);
      const choice = body.choices[0];
      calls.push({
        prompt: body.prompt_token_ids,
        sampled: choice.token_ids,
        logprobs: choice.logprobs.content.map((entry: { logprob: number }) => entry.logprob),
        content: choice.message.content,
        toolCalls: choice.message.tool_calls?.length ?? 0,
        seed: JSON.parse(Buffer.concat(chunks).toString("utf8")).seed,
        temperature: JSON.parse(Buffer.concat(chunks).toString("utf8")).temperature,
      });
    }
    res.writeHead(upstream.status, { "content-type": "application/json" });
    res.end(text);
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return { server, address: `127.0.0.1:${(server.address() as AddressInfo).port}`, calls };
}

const runPython = (input: unknown) => runDriver(input);

function startsWith(ids: readonly number[], prefix: readonly number[]): boolean {
  return prefix.length <= ids.length && prefix.every((id, i) => ids[i] === id);
}

function verlRow(task: Task, index: number) {
  return {
    data_source: "agentrl/world",
    agent_name: "agentrl_agent",
    raw_prompt: [{ role: "user", content: task.question }],
    ability: task.family,
    reward_model: { style: "rule", ground_truth: task.answer },
    extra_info: { split: "test", index, agentrl: { task_id: task.id, task: JSON.stringify(task) } },
  };
}

async function fixture() {
  const upstream: Upstream = await resolveUpstream("models/base-strong", { maxTokens: 32 });
  const proxy = await recordingProxy(upstream.baseURL);
  const root = mkdtempSync(join(tmpdir(), "agentrl-agent-server-"));
  const { store, run } = createRunDirectory({ kind: "rollout", root, id: "verl", config: {} });
  const token = "agent-server-test-token";
  // A port nothing listens on: the rollout server that is down (allowed, like the proxy).
  const dead = createServer();
  await new Promise<void>((done) => dead.listen(0, "127.0.0.1", done));
  const deadPort = (dead.address() as AddressInfo).port;
  await new Promise((done) => dead.close(done));
  const server = await startAgentServer({
    port: 0,
    token,
    upstreamAllow: [`http://${proxy.address}/v1`, `http://127.0.0.1:${deadPort}/v1`],
    // Short episodes keep the test quick; the checks do not depend on the length.
    budgets: { maxTurns: 4 },
    onEpisode: ({ trajectory }) => store.addTrajectory(run.id, trajectory, { key: trajectory.id }),
    log: () => {},
  });
  return {
    proxy,
    deadPort,
    server,
    store,
    run,
    token,
    async close() {
      await server.close();
      await new Promise((done) => proxy.server.close(done));
      await upstream.close?.();
      store.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

let f: Awaited<ReturnType<typeof fixture>>;
before(async () => {
  f = await fixture();
});
after(async () => {
  await f.close();
});

test("verl's agent loop (python3, verl double) gets the exact sampled ids, mask, log-probs and the verifier's reward; 100 concurrent episodes, none lost", async () => {
  {
    const tasks = rolloutTasks({ split: "test", count: 25, seed: 5, family: "lookup" });
    // GRPO-like: each task 4 times, all 100 rows at once.
    const rows = Array.from({ length: 100 }, (_, i) => verlRow(tasks[i % tasks.length], i));
    const byIndex = (i: number) => tasks[i % tasks.length];
    const result = await runPython({
      loop_config: {
        name: "agentrl_agent",
        _target_: "agentrl_agent_loop.AgentrlAgentLoop",
        server_url: f.server.url,
        server_token: f.token,
      },
      rollout: { prompt_length: 256, response_length: 1024 },
      server_addresses: [f.proxy.address],
      sampling_params: { temperature: 1.0, top_p: 1.0, top_k: -1, logprobs: true },
      rows,
    });
    const { outputs } = result;
    assert.equal(outputs.length, 100);
    assert.equal(result.acquired, 100, "each episode was assigned a rollout server by verl's manager");
    assert.equal(result.released, 100, "and released it");
    const ids = new Set(outputs.map((output) => output.extra_fields.agentrl_episode_id));
    assert.equal(ids.size, 100, "every episode is its own");

    const episodes = new Map<number, RecordedCall[]>();
    for (const call of f.proxy.calls) episodes.set(call.seed, [...(episodes.get(call.seed) ?? []), call]);
    for (const calls of episodes.values()) calls.sort((a, b) => a.prompt.length - b.prompt.length);
    const used = new Set<number>();
    let multiTurn = 0;
    const rewards = new Set<number>();
    outputs.forEach((output, i) => {
      const where = `row ${i} (${output.extra_fields.agentrl_episode_id})`;
      assert.equal(output.extra_fields.agentrl_error, null, `${where}: ${output.extra_fields.agentrl_error}`);
      const full = [...output.prompt_ids, ...output.response_ids];
      // This episode's calls, as the rollout server answered them (the proxy groups them by the
      // episode's seed): each must extend the context, the first exactly at the prompt.
      const P = output.prompt_ids.length;
      const expected = (calls: RecordedCall[]) => {
        const mask = output.response_ids.map(() => 0);
        const logprobs = output.response_ids.map(() => 0);
        for (const call of calls)
          call.sampled.forEach((_, t) => {
            mask[call.prompt.length - P + t] = 1;
            logprobs[call.prompt.length - P + t] = call.logprobs[t];
          });
        return { mask, logprobs };
      };
      const exact = (calls: RecordedCall[]) => {
        const last = calls[calls.length - 1];
        if (
          calls[0].prompt.length !== P ||
          last.prompt.length - P + last.sampled.length !== output.response_ids.length
        )
          return false;
        if (!calls.every((call) => startsWith(full, [...call.prompt, ...call.sampled]))) return false;
        const { mask, logprobs } = expected(calls);
        return (
          mask.every((m, t) => m === output.response_mask[t]) &&
          logprobs.every((lp, t) => lp === output.response_logprobs?.[t])
        );
      };
      assert.ok(output.response_logprobs, `${where}: log-probs asked for and returned`);
      const match = [...episodes.entries()].find(([seed, calls]) => !used.has(seed) && exact(calls));
      assert.ok(
        match,
        `${where}: prompt, response, mask 1 exactly on sampled ids and their log-probs are one recorded episode's`,
      );
      used.add(match[0]);
      const chain = match[1];
      const spans = output.extra_fields.turn_spans;
      assert.equal(spans.length, chain.length, `${where}: one span per call`);
      assert.equal(output.extra_fields.turn_scores.length, spans.length);
      const last = chain.reduce((a, b) => (b.prompt.length > a.prompt.length ? b : a));
      // Observations in the response, plus the tool result of a last tool call that hit a budget.
      const shown = spans.filter(([, e], k) => k < spans.length - 1 && e < spans[k + 1][0]).length;
      const trailing =
        last.toolCalls > 0 && output.extra_fields.agentrl_end_reason.startsWith("max-") ? 1 : 0;
      assert.equal(output.num_turns, 1 + spans.length + shown + trailing, `${where}: num_turns`);
      if (chain.length > 1) multiTurn++;

      // The reward is the world verifier's verdict on the answer the model gave.
      const task = byIndex(i);
      const correct = output.extra_fields.agentrl_end_reason === "answer" && checkAnswer(task, last.content);
      assert.equal(output.reward_score, correct ? 1 : 0, `${where}: reward`);
      assert.equal(output.extra_fields.agentrl_correct, correct);
      assert.deepEqual(output.extra_fields.reward_extra_info, {
        acc: correct ? 1 : 0,
        agentrl_task_id: task.id,
        agentrl_infra: 0,
        agentrl_prefix_breaks: 0,
        agentrl_truncated: 0,
      });
      assert.equal(output.extra_fields.agentrl_failure_class, "");
      rewards.add(output.reward_score);
    });
    assert.ok(multiTurn > 20, `multi-turn episodes with observations exercised (${multiTurn})`);
    assert.deepEqual([...rewards].sort(), [0, 1], "both outcomes occur: the reward check can fail");

    // All stored, each once, with the same ids.
    const stored = f.store.trajectories(f.run.id);
    assert.equal(stored.length, 100);
    const storedIds = new Set(
      stored.map((t) => (t.info?.gateway as { episodeId: string } | undefined)?.episodeId),
    );
    assert.deepEqual(storedIds, ids);
  }
});

test("the response is cut to response_length as verl cuts it, spans clipped; a prefix of the exact sequence", async () => {
  {
    const tasks = rolloutTasks({ split: "test", count: 6, seed: 9, family: "lookup" });
    const base = {
      loop_config: {
        name: "agentrl_agent",
        _target_: "agentrl_agent_loop.AgentrlAgentLoop",
        server_url: f.server.url,
        server_token: f.token,
        rollout_base_url: `http://${f.proxy.address}/v1`,
      },
      server_addresses: [f.proxy.address],
      sampling_params: { temperature: 1.0, top_p: 1.0, top_k: -1, logprobs: false },
      rows: tasks.map((task, i) => verlRow(task, i)),
    };
    const cut = 5;
    const { outputs, acquired } = await runPython({
      ...base,
      rollout: { prompt_length: 256, response_length: cut },
    });
    assert.equal(acquired, 0, "rollout_base_url given: verl's manager is not asked");
    for (const output of outputs) {
      assert.ok(output.response_ids.length <= cut);
      assert.equal(output.response_logprobs, null, "verl did not ask for log-probs");
      const full = [...output.prompt_ids, ...output.response_ids];
      assert.ok(
        f.proxy.calls.some(
          (call) => startsWith([...call.prompt, ...call.sampled], full) || startsWith(full, call.prompt),
        ),
        "a prefix of what the rollout server saw",
      );
      for (const [s, e] of output.extra_fields.turn_spans) assert.ok(s < cut && e <= cut);
    }
    assert.ok(
      outputs.some((output) => output.response_ids.length === cut),
      "some responses were cut",
    );
  }
});

test("a rollout server that is down: a sample masked out as infra (prompt from raw_prompt, one masked pad token, reward 0)", async () => {
  const { deadPort } = f;
  const tasks = rolloutTasks({ split: "test", count: 2, seed: 4 });
  const { outputs } = await runPython({
    loop_config: {
      name: "agentrl_agent",
      _target_: "agentrl_agent_loop.AgentrlAgentLoop",
      server_url: f.server.url,
      server_token: f.token,
      rollout_base_url: `http://127.0.0.1:${deadPort}/v1`,
    },
    rollout: { prompt_length: 256, response_length: 64 },
    server_addresses: [],
    sampling_params: { temperature: 1.0, top_p: 1.0, top_k: -1, logprobs: true },
    rows: tasks.map((task, i) => verlRow(task, i)),
  });
  outputs.forEach((output, i) => {
    // The double's tokenizer: one id per character of its chat template.
    const rendered = `<|im_start|>user\n${tasks[i].question}<|im_end|>\n<|im_start|>assistant\n`;
    assert.deepEqual(
      output.prompt_ids,
      [...rendered].map((c) => c.codePointAt(0)!),
      "the prompt rendered by verl's tokenizer",
    );
    assert.deepEqual(output.response_ids, [0], "one pad token");
    assert.deepEqual(output.response_mask, [0], "masked: nothing of it trains");
    assert.deepEqual(output.response_logprobs, [0]);
    assert.equal(output.reward_score, 0);
    assert.equal(output.extra_fields.agentrl_end_reason, "policy-error");
    assert.equal(output.extra_fields.agentrl_failure_class, "infra");
    assert.equal(output.extra_fields.agentrl_failure_code, "upstream-unreachable");
    assert.equal(output.extra_fields.reward_extra_info.agentrl_infra, 1);
    assert.ok(output.extra_fields.agentrl_error);
  });
  // The agent-server itself down: retried, then an error naming it (an infrastructure failure).
  await assert.rejects(
    runPython({
      loop_config: {
        name: "agentrl_agent",
        _target_: "agentrl_agent_loop.AgentrlAgentLoop",
        server_url: `http://127.0.0.1:${deadPort}`,
        connect_retries: 1,
      },
      rollout: { prompt_length: 256, response_length: 64 },
      server_addresses: ["127.0.0.1:1"],
      sampling_params: { temperature: 1.0 },
      rows: [verlRow(tasks[0], 0)],
    }),
    new RegExp(
      `AgentServerError: agentrl agent-server http://127.0.0.1:${deadPort} unreachable.*\\(2 tries\\)`,
    ),
  );
});

test("--agent: a user's agent through the agent-server gets exact ids and the verifier's reward, at verl's temperature", async () => {
  const server = await startAgentServer({
    port: 0,
    agent: openaiAgent as unknown as AgentFunction,
    upstreamAllow: [`http://${f.proxy.address}/v1`],
    log: () => {},
  });
  try {
    const tasks = rolloutTasks({ split: "test", count: 6, seed: 13, family: "lookup" });
    const before = f.proxy.calls.length;
    const outputs = await Promise.all(
      tasks.map(async (task) => {
        const response = await fetch(`${server.url}/v1/episodes`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            task,
            upstream: { base_url: `http://${f.proxy.address}/v1` },
            sampling: { temperature: 0.7, logprobs: true },
          }),
        });
        assert.equal(response.status, 200);
        return response.json();
      }),
    );
    const calls = f.proxy.calls.slice(before);
    assert.ok(calls.length >= tasks.length);
    assert.ok(
      calls.every((call) => call.temperature === 0.7),
      "the agent sends no temperature: verl's is forced on every call",
    );
    outputs.forEach((output, i) => {
      assert.equal(output.error, null);
      const full = [...output.prompt_ids, ...output.response_ids];
      const own = calls.filter((call) => startsWith(full, [...call.prompt, ...call.sampled]));
      const P = output.prompt_ids.length;
      assert.ok(own.some((call) => call.prompt.length === P));
      const mask = output.response_ids.map(() => 0);
      for (const call of own)
        call.sampled.forEach((_, t) => {
          mask[call.prompt.length - P + t] = 1;
        });
      assert.deepEqual(output.response_mask, mask, `episode ${i}: mask 1 exactly on sampled ids`);
      const last = own.reduce((a, b) => (b.prompt.length > a.prompt.length ? b : a));
      const correct = output.end_reason === "answer" && checkAnswer(tasks[i], last.content);
      assert.equal(output.reward_score, correct ? 1 : 0);
    });
  } finally {
    await server.close();
  }
});

test("an upstream that never answers: the episode times out as a failed episode; a full queue answers 503", async () => {
  const hanging = createServer(() => {});
  await new Promise<void>((done) => hanging.listen(0, "127.0.0.1", done));
  const base_url = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/v1`;
  const server = await startAgentServer({
    port: 0,
    concurrency: 1,
    maxQueue: 0,
    episodeTimeoutMs: 400,
    upstreamAllow: [base_url],
    log: () => {},
  });
  try {
    const [task] = rolloutTasks({ split: "test", count: 1, seed: 3 });
    const post = () =>
      fetch(`${server.url}/v1/episodes`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ task, upstream: { base_url, model: "m" } }),
      });
    const first = post();
    await new Promise((done) => setTimeout(done, 100));
    const second = await post();
    assert.equal(second.status, 503, "one running, none may wait");
    const timedOut = await (await first).json();
    assert.equal(timedOut.end_reason, "policy-error");
    assert.equal(timedOut.reward_score, 0);
    assert.match(timedOut.error, /timed out|timeout|aborted/i);
  } finally {
    await server.close();
    hanging.closeAllConnections();
    await new Promise((done) => hanging.close(done));
  }
});

test("failures are data, bad requests are 400 naming the field, the token is required", async () => {
  const dead = createServer();
  await new Promise<void>((done) => dead.listen(0, "127.0.0.1", done));
  const deadPort = (dead.address() as AddressInfo).port;
  await new Promise((done) => dead.close(done));
  const scripted = await resolveUpstream("expert");
  const server = await startAgentServer({
    port: 0,
    token: "secret",
    upstreamAllow: [`http://127.0.0.1:${deadPort}/v1`, "http://x/v1", scripted.baseURL],
    log: () => {},
  });
  try {
    const [task] = rolloutTasks({ split: "test", count: 1, seed: 1 });
    const post = (body: unknown, token = "secret") =>
      fetch(`${server.url}/v1/episodes`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      });
    const unauthorized = await post({ task }, "wrong");
    assert.equal(unauthorized.status, 401);

    // A rollout server that is down: a failed episode with reward 0, not an HTTP error.
    const down = await post({ task, upstream: { base_url: `http://127.0.0.1:${deadPort}/v1`, model: "m" } });
    assert.equal(down.status, 200);
    const failed = await down.json();
    assert.equal(failed.end_reason, "policy-error");
    assert.equal(failed.reward_score, 0);
    assert.deepEqual([failed.failure.class, failed.failure.code], ["infra", "upstream-unreachable"]);
    assert.match(failed.error, /ECONNREFUSED|could not be reached|fetch failed/i);
    // The same when even its model cannot be listed.
    const unlisted = await (
      await post({ task, upstream: { base_url: `http://127.0.0.1:${deadPort}/v1` } })
    ).json();
    assert.equal(unlisted.end_reason, "policy-error");
    assert.equal(unlisted.reward_score, 0);
    assert.deepEqual([unlisted.failure.class, unlisted.failure.code], ["infra", "upstream-unreachable"]);

    const bad = await post({ task, upstream: { base_url: "http://x/v1" }, sampling: { temperature: 7 } });
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).error.message, /sampling\.temperature/);
    const unknown = await post({ task, upstream: { base_url: "http://x/v1" }, tempreature: 1 });
    assert.equal(unknown.status, 400);
    assert.match((await unknown.json()).error.message, /tempreature/);
    const wrongTruth = await post({ task, upstream: { base_url: "http://x/v1" }, ground_truth: "not it" });
    assert.equal(wrongTruth.status, 400);
    assert.match((await wrongTruth.json()).error.message, /ground_truth/);
    const missing = await post({ task_id: "nope", upstream: { base_url: "http://x/v1" } });
    assert.equal(missing.status, 400);
    assert.match((await missing.json()).error.message, /task_id nope/);
    const fileTask = await post({
      task: { ...task, worldSeed: undefined },
      upstream: { base_url: "http://x/v1" },
    });
    assert.equal(fileTask.status, 400);
    assert.match((await fileTask.json()).error.message, /--verifier/);
    // A rollout server without token ids (a scripted policy): said, never papered over with made-up ids.
    const plain = await (await post({ task, upstream: { base_url: scripted.baseURL } })).json();
    assert.equal(plain.end_reason, "answer");
    assert.deepEqual(plain.response_ids, []);
    assert.match(plain.error, /returned no token ids/);
    assert.deepEqual([plain.failure.class, plain.failure.code], ["infra", "no-token-ids"]);
    const health = await (await fetch(`${server.url}/health`)).json();
    assert.equal(health.episodes, 3);
    assert.equal(health.failed, 2);
  } finally {
    await server.close();
    await scripted.close?.();
  }
});
