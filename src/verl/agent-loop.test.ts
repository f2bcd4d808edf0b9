/**
 * The Python agent loop inside the double of verl's agent-loop worker (testdata/verl-double), one
 * test per way verl would reject what the loop returns, on the verl versions where it bites. The
 * agent-server is canned here (each task id answers a fixed episode), so each test isolates one
 * behaviour of the loop; agent-server.test.ts and e2e.test.ts run the real one.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { DOUBLE_VERSIONS, type DoubleVersion, runDriver, runWithDouble } from "./testing.ts";

const ok = {
  episode_id: "ep-ok",
  prompt_ids: [1, 2, 3],
  response_ids: [10, 11, 12, 13],
  response_mask: [1, 1, 0, 1],
  response_logprobs: [-0.1, -0.2, 0, -0.3],
  reward_score: 1,
  turn_scores: [0.5, 0],
  turn_spans: [
    [0, 2],
    [3, 4],
  ],
  num_turns: 4,
  correct: true,
  end_reason: "answer",
  error: null,
  failure: null,
  truncated: false,
  metrics: { generate_sequences: 0.5, tool_calls: 0.1, total: 0.6, prefix_breaks: 0 },
  extra_fields: { outcome_terms: { correct: 1 }, turn_terms: { "tool-success": [0.5, 0] } },
};

/** Canned agent-server answers by task id. */
const answers: Record<string, unknown> = {
  ok,
  // What a user's --agent returns: no outcome/turn terms; an upstream without log-probs.
  agent: {
    ...ok,
    episode_id: "ep-agent",
    extra_fields: {},
    response_logprobs: null,
    metrics: { ...ok.metrics, prefix_breaks: 1 },
  },
  // The first model call failed (a 5xx): nothing recorded, a transient infrastructure failure.
  transient: {
    ...ok,
    episode_id: "ep-5xx",
    prompt_ids: [],
    response_ids: [],
    response_mask: [],
    response_logprobs: null,
    reward_score: 0,
    turn_scores: [],
    turn_spans: [],
    num_turns: 1,
    correct: false,
    end_reason: "policy-error",
    error: "the upstream answered 503",
    failure: { class: "infra", code: "upstream-5xx", message: "the upstream answered 503" },
    extra_fields: {},
  },
  "http-400": {
    ...ok,
    failure: {
      class: "infra",
      code: "upstream-4xx",
      message: '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
    },
  },
  "no-ids": { ...ok, failure: { class: "infra", code: "no-token-ids", message: "no token ids" } },
  // A user's agent threw: the agent's failure, not the model's.
  "agent-threw": {
    ...ok,
    reward_score: 0,
    correct: false,
    end_reason: "policy-error",
    failure: { class: "agent", code: "agent-threw", message: "TypeError in the agent" },
  },
  "no-model": {
    ...ok,
    failure: { class: "infra", code: "model-not-found", message: "The model `m` does not exist." },
  },
  // The chat template re-rendered an earlier turn: the response stops at the break, the reward is
  // the whole episode's.
  broken: { ...ok, episode_id: "ep-broken", metrics: { ...ok.metrics, prefix_breaks: 1 } },
  wrong: { ...ok, episode_id: "ep-wrong", reward_score: 0, correct: false },
};
/** Task ids the canned agent-server answers only after this many ms. */
const delays: Record<string, number> = { slow: 3000 };

let server: Server;
let url: string;
const upstreams: string[] = [];
const dir = mkdtempSync(join(tmpdir(), "agentrl-agent-loop-"));

before(async () => {
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    upstreams.push(body.upstream.base_url);
    const id = body.task?.id ?? body.task_id;
    if (delays[id]) await new Promise((done) => setTimeout(done, delays[id]));
    if (res.destroyed) return;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(answers[id]));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  await new Promise((done) => server.close(done));
  rmSync(dir, { recursive: true, force: true });
});

function row(taskId: string) {
  return {
    agent_name: "agentrl_agent",
    raw_prompt: [{ role: "user", content: `question ${taskId}` }],
    reward_model: { style: "rule", ground_truth: "x" },
    extra_info: { index: 0, agentrl: { task_id: taskId } },
  };
}

/** The job's agent-loop YAML, with the agent-server URL in it (and nowhere else). */
function yaml(): string {
  const path = join(dir, "agentrl_agent_loop.yaml");
  writeFileSync(
    path,
    `- name: agentrl_agent\n  _target_: agentrl_agent_loop.AgentrlAgentLoop\n  server_url: ${url}  # only here\n  server_token: null\n  rollout_base_url: http://127.0.0.1:9/v1\n  timeout_s: 30\n`,
  );
  return path;
}

function drive(
  taskIds: string[],
  options: {
    version?: DoubleVersion;
    workers?: number;
    processor?: boolean;
    yamlOnly?: boolean;
    logprobs?: boolean;
  } = {},
) {
  return runDriver(
    {
      agent_loop_config_path: yaml(),
      rollout: { prompt_length: 128, response_length: 16 },
      server_addresses: ["127.0.0.1:9"],
      sampling_params: { temperature: 1.0, logprobs: options.logprobs ?? true },
      rows: taskIds.map(row),
      workers: options.workers ?? 1,
      processor: options.processor ?? false,
    },
    { version: options.version ?? "0.7.1", env: { AGENTRL_AGENT_SERVER: options.yamlOnly ? "" : url } },
  );
}

test("every sample of a worker gets the YAML's keys: verl instantiates the loop per sample from the registry entry", async () => {
  // With @register, the first sample's import replaces the entry: the second has no server_url.
  const { outputs } = await drive(["ok", "ok", "ok"], { yamlOnly: true });
  assert.deepEqual(
    outputs.map((output) => output.extra_fields.agentrl_episode_id),
    ["ep-ok", "ep-ok", "ep-ok"],
  );
});

test("an empty response is one masked pad token (verl < 0.9.0 crashes padding an empty list)", async () => {
  for (const version of ["0.7.1", "0.8.0"] as const) {
    const { outputs, batch } = await drive(["ok", "transient"], { version });
    const empty = outputs[1];
    assert.deepEqual(empty.response_ids, [0], version);
    assert.deepEqual(empty.response_mask, [0], version);
    assert.deepEqual(batch.response_mask[1], new Array(16).fill(0), `${version}: nothing of it trains`);
  }
});

test("extra_fields keys are the same for every sample: DataProto.concat across workers asserts it", async () => {
  // Worker 1 gets an agentrl-loop episode (outcome/turn terms), worker 2 a user agent's (none).
  const { outputs, batch } = await drive(["ok", "agent"], { workers: 2, logprobs: false });
  assert.deepEqual(Object.keys(outputs[0].extra_fields).sort(), Object.keys(outputs[1].extra_fields).sort());
  assert.equal(outputs[1].extra_fields.outcome_terms, null);
  assert.ok(batch.non_tensor_keys.includes("outcome_terms"));
  assert.deepEqual(batch.reward_extra_keys, [
    "acc",
    "agentrl_task_id",
    "agentrl_infra",
    "agentrl_prefix_breaks",
    "agentrl_truncated",
  ]);
});

test("multi_modal_data is {}: verl 0.7.x reads it unguarded when the model has a processor", async () => {
  const { outputs } = await drive(["ok", "ok"], { processor: true });
  assert.deepEqual(outputs[0].multi_modal_data, {});
});

test("log-probs are a list whenever verl asked for them: it torch.cat's the batch's", async () => {
  const { outputs } = await drive(["ok", "agent"]);
  assert.deepEqual(outputs[0].response_logprobs, ok.response_logprobs);
  assert.deepEqual(
    outputs[1].response_logprobs,
    [0, 0, 0, 0],
    "none from the upstream: zeros, the mask decides",
  );
});

test("transformers 5 (verl 0.9.0, main): the fallback prompt is rendered with return_dict=False", async () => {
  for (const version of ["0.9.0", "main"] as const) {
    const { outputs } = await drive(["transient"], { version });
    const rendered = "<|im_start|>user\nquestion transient<|im_end|>\n<|im_start|>assistant\n";
    assert.deepEqual(
      outputs[0].prompt_ids,
      [...rendered].map((c) => c.codePointAt(0)),
      version,
    );
  }
});

test("verl 0.7.0 (no _acquire_server): the rollout server comes from _choose_server's handle", async () => {
  const path = join(dir, "no-base-url.yaml");
  writeFileSync(
    path,
    `- name: agentrl_agent\n  _target_: agentrl_agent_loop.AgentrlAgentLoop\n  server_url: ${url}\n`,
  );
  upstreams.length = 0;
  const { outputs } = await runDriver(
    {
      agent_loop_config_path: path,
      rollout: { prompt_length: 128, response_length: 16 },
      server_addresses: ["10.0.0.7:8123"],
      sampling_params: { temperature: 1.0 },
      rows: [row("ok")],
    },
    { version: "0.7.0", env: { AGENTRL_AGENT_SERVER: url } },
  );
  assert.equal(outputs[0].extra_fields.agentrl_episode_id, "ep-ok");
  assert.deepEqual(upstreams, ["http://10.0.0.7:8123/v1"]);
});

test("infra failures never train: the loop raises on 4xx, missing ids and an unknown model; a transient one is masked", async () => {
  const code = `
import asyncio, json, sys
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
spec = json.load(sys.stdin)
worker = AgentLoopWorker({"actor_rollout_ref": {"rollout": {"prompt_length": 128, "response_length": 16}}}, [], spec["yaml"])
async def one(row):
    try:
        await worker.generate_sequences([row], {"temperature": 1.0, "logprobs": True})
        return "ok"
    except Exception as error:
        return f"{type(error).__name__}: {error}"
print(json.dumps([asyncio.run(one(row)) for row in spec["rows"]]))`;
  const results = JSON.parse(
    await runWithDouble(
      code,
      {
        yaml: yaml(),
        rows: ["http-400", "no-ids", "no-model", "transient"].map(row),
      },
      { env: { AGENTRL_AGENT_SERVER: url } },
    ),
  ) as string[];
  assert.match(results[0], /^InfraFailure: .*\(upstream-4xx\): "auto" tool choice requires/);
  assert.match(results[1], /^InfraFailure: .*\(no-token-ids\)/);
  assert.match(results[2], /^InfraFailure: .*\(model-not-found\)/);
  assert.equal(results[3], "ok");
  const { outputs } = await drive(["transient", "agent-threw"]);
  assert.equal(outputs[0].extra_fields.agentrl_failure_class, "infra");
  assert.equal(outputs[0].extra_fields.reward_extra_info.agentrl_infra, 1);
  assert.equal(outputs[0].reward_score, 0);
  // A user's agent that threw: its tokens are not trained on as if the model wrote them.
  assert.equal(outputs[1].extra_fields.agentrl_failure_class, "agent");
  assert.deepEqual(outputs[1].response_mask, [0, 0, 0, 0]);
  assert.equal(
    outputs[1].extra_fields.reward_extra_info.agentrl_infra,
    0,
    "still the agent's failure in pass@k",
  );
});

test("every doubled verl version takes a mixed batch from two workers (a VL processor, log-probs on)", async () => {
  for (const version of DOUBLE_VERSIONS) {
    const { outputs, batch } = await drive(["ok", "agent", "transient", "ok"], {
      version,
      workers: 2,
      processor: true,
    });
    assert.equal(batch.size, 4, version);
    assert.deepEqual(
      batch.rm_scores?.map((scores) => scores.reduce((a, b) => a + b, 0)),
      [1, 1, 0, 1],
      `${version}: the reward on each sample's last token`,
    );
    assert.equal(outputs[2].extra_fields.agentrl_failure_class, "infra", version);
  }
});

test("a read timeout of the agent-server is a transient infra failure: a masked sample, not a crash", async () => {
  const path = join(dir, "short-timeout.yaml");
  writeFileSync(
    path,
    `- name: agentrl_agent\n  _target_: agentrl_agent_loop.AgentrlAgentLoop\n  server_url: ${url}\n  rollout_base_url: http://127.0.0.1:9/v1\n  timeout_s: 0.5\n`,
  );
  const { outputs } = await runDriver(
    {
      agent_loop_config_path: path,
      rollout: { prompt_length: 128, response_length: 16 },
      server_addresses: ["127.0.0.1:9"],
      sampling_params: { temperature: 1.0, logprobs: true },
      rows: [row("slow"), row("ok")],
    },
    { env: { AGENTRL_AGENT_SERVER: url } },
  );
  const [slow, fine] = outputs;
  assert.equal(slow.extra_fields.agentrl_failure_class, "infra");
  assert.equal(slow.extra_fields.agentrl_failure_code, "agent-server-timeout");
  assert.match(String(slow.extra_fields.agentrl_error), /did not answer within 0\.5 s/);
  assert.deepEqual(slow.response_mask, [0], "nothing of it trains");
  assert.equal(slow.reward_score, 0);
  assert.equal(slow.extra_fields.reward_extra_info.agentrl_infra, 1, "counted toward the infra failure rate");
  assert.ok(slow.prompt_ids.length > 0, "the prompt rendered from raw_prompt");
  assert.equal(fine.extra_fields.agentrl_episode_id, "ep-ok", "the next sample runs as usual");
});

test("a prefix-broken episode trains nothing and stays out of its group's baseline; its reward is still reported", async () => {
  for (const name of ["agentrl_grpo", "agentrl_mt_grpo"]) {
    const rows = ["ok", "broken", "wrong"].map((id) => ({ ...row(id), uid: "group" }));
    const { outputs, batch } = await runDriver(
      {
        agent_loop_config_path: yaml(),
        rollout: { prompt_length: 128, response_length: 16 },
        server_addresses: ["127.0.0.1:9"],
        sampling_params: { temperature: 1.0, logprobs: true },
        rows,
        estimator: { name },
      },
      { env: { AGENTRL_AGENT_SERVER: url, AGENTRL_TURN_WEIGHT: "0" } },
    );
    const broken = outputs[1];
    assert.deepEqual(broken.response_mask, [0, 0, 0, 0], `${name}: none of its tokens trains`);
    assert.equal(broken.reward_score, 1, `${name}: the episode's reward, as measured`);
    assert.equal(broken.extra_fields.agentrl_prefix_breaks, 1);
    assert.equal(broken.extra_fields.agentrl_failure_class, "", "not a failure of any class");
    const advantages = batch.advantages as number[][];
    assert.ok(
      advantages[1].every((value) => value === 0),
      `${name}: advantage 0 on every token`,
    );
    // The group's baseline is {1, 0} without it (mean 0.5, sample std 0.7071), not {1, 1, 0}.
    const first = advantages[0].find((value) => value !== 0);
    assert.ok(
      first !== undefined && Math.abs(first - 0.5 / Math.SQRT1_2) < 1e-4,
      `${name}: ok's advantage ${first} against a baseline without the broken episode`,
    );
  }
});
