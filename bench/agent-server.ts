/**
 * The agent-server's cost (src/verl/agent-server.ts): the same episodes run in process and through
 * the agent-server, and the agent-server alone against an instant upstream.
 *
 * - Against `agentrl serve` on models/base-strong (its own process, as a rollout server): each episode (task, seed) is run by the episode
 *   loop in process (the OpenAI policy straight at the server, token ids and log-probs on) and as a
 *   `POST /v1/episodes` with the same seed. The server samples turn k of an episode from (seed, k),
 *   so both sides run the same episodes (checked: the same turn counts) and the difference is the
 *   agent-server's overhead: HTTP in and out, the gateway hop, the id bookkeeping, the reward.
 *   Sequentially (per-episode milliseconds) and with 32 episodes at once (episodes/s), the
 *   in-process side both as independent episodes (like the agent-server's) and in lock-step (one
 *   batched call per turn for all 32, which the embedded server batches better).
 * - Against an instant fake upstream (a two-turn episode: a search call, then an answer, with
 *   consistent token ids): what one agent-server process can do when the model costs nothing, the
 *   figure that sizes how many agent-server processes a cluster's rollout servers need.
 */
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { runEpisodes } from "../src/env/run-episodes.ts";
import { rolloutTasks, worldToolsFor } from "../src/env/task-set.ts";
import { createOpenAiPolicy } from "../src/policy/openai/index.ts";
import type { Task } from "../src/types/task.ts";
import { startAgentServer } from "../src/verl/agent-server.ts";
import { checkAnswer } from "../src/world/index.ts";

const SEQUENTIAL = 24;
const CONCURRENT = 64;
const WIDTH = 32;

/** `agentrl serve` on the checkpoint in its own process, as a rollout server is. */
async function servedCheckpoint(): Promise<{ baseURL: string; model: string; close(): Promise<void> }> {
  const child = spawn(
    process.execPath,
    ["bin/agentrl.js", "serve", "--policy", "models/base-strong", "--port", "0", "--json"],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const info = await new Promise<{ url: string; model: string }>((done, fail) => {
    let text = "";
    child.stdout.on("data", (chunk) => {
      text += chunk;
      const line = text.split("\n").find((candidate) => candidate.startsWith("{"));
      if (line) done(JSON.parse(line));
    });
    child.on("exit", (code) => fail(new Error(`agentrl serve exited ${code} before listening`)));
  });
  return {
    baseURL: info.url,
    model: info.model,
    close: () =>
      new Promise((done) => {
        child.once("exit", () => done());
        child.kill("SIGTERM");
      }),
  };
}

/** An OpenAI-compatible upstream that answers at once: turn 0 searches, turn 1 answers. */
async function instantUpstream() {
  const contexts = new Map<number, number[]>();
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method === "GET") {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(JSON.stringify({ object: "list", data: [{ id: "instant", object: "model" }] }));
    }
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    const seed = Number(body.seed);
    const previous = contexts.get(seed);
    const prompt = previous ? [...previous, 900, 901, 902] : [1, 2, 3, 4, 5, 6, 7, 8];
    const turn = previous ? 1 : 0;
    const sampled = turn === 0 ? [40, 41, 42, 43] : [50, 51];
    contexts.set(seed, [...prompt, ...sampled]);
    if (turn === 1) contexts.delete(seed);
    const message =
      turn === 0
        ? {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: `call-${seed}`,
                type: "function",
                function: { name: "search", arguments: JSON.stringify({ query: "zenda" }) },
              },
            ],
          }
        : { role: "assistant", content: "42" };
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id: "x",
        object: "chat.completion",
        created: 0,
        model: "instant",
        prompt_token_ids: prompt,
        choices: [
          {
            index: 0,
            message,
            finish_reason: turn === 0 ? "tool_calls" : "stop",
            token_ids: sampled,
            logprobs: {
              content: sampled.map((id) => ({ token: String(id), logprob: -0.5, top_logprobs: [] })),
            },
          },
        ],
        usage: { prompt_tokens: prompt.length, completion_tokens: sampled.length, total_tokens: 0 },
      }),
    );
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return { server, baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` };
}

/** Wall time, and this process's CPU time (user + system), of `work`. */
async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; cpuMs: number; value: T }> {
  const started = performance.now();
  const cpu = process.cpuUsage();
  const value = await work();
  const used = process.cpuUsage(cpu);
  return { ms: performance.now() - started, cpuMs: (used.user + used.system) / 1000, value };
}

/** `count` requests, at most `width` in flight. */
async function throughRequests(
  url: string,
  bodies: readonly unknown[],
  width: number,
): Promise<{ turns: number; reward: number }[]> {
  const out: { turns: number; reward: number }[] = new Array(bodies.length);
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) {
      const index = next++;
      const response = await fetch(`${url}/v1/episodes`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(bodies[index]),
      });
      if (!response.ok) throw new Error(`agent-server answered ${response.status}: ${await response.text()}`);
      const episode = await response.json();
      if (episode.error) throw new Error(`bench episode failed: ${episode.error}`);
      out[index] = { turns: episode.turn_spans.length, reward: episode.reward_score };
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, bodies.length) }, worker));
  return out;
}

export async function benchAgentServer(): Promise<Record<string, number | null>> {
  const upstream = await servedCheckpoint();
  const server = await startAgentServer({
    port: 0,
    concurrency: CONCURRENT,
    upstreamAllow: [upstream.baseURL],
    log: () => {},
  });
  const tasks = rolloutTasks({ split: "test", count: CONCURRENT, seed: 1 });
  const body = (task: Task, seed: number) => ({
    task,
    seed,
    upstream: { base_url: upstream.baseURL },
    sampling: { temperature: 1, top_p: 1, logprobs: true },
  });
  const inProcess = async (episodes: { task: Task; seed: number }[], width: number) => {
    const policy = createOpenAiPolicy({
      baseURL: upstream.baseURL,
      model: upstream.model,
      concurrency: width,
      maxRetries: 0,
      logprobs: true,
      tokenIds: true,
    });
    return runEpisodes({ policy, episodes, tools: worldToolsFor(), verify: checkAnswer, batchSize: width });
  };
  const figures: Record<string, number | null> = {};
  try {
    // Warm both paths (policy load, first compiles, the gateway) before timing.
    await inProcess([{ task: tasks[0], seed: 99 }], 1);
    await throughRequests(server.url, [body(tasks[0], 99)], 1);

    const sequential = tasks.slice(0, SEQUENTIAL).map((task, i) => ({ task, seed: 1000 + i }));
    // Alternating one episode each way, so a change in the machine's load hits both sides alike.
    let localMs = 0;
    let remoteMs = 0;
    let same = true;
    for (const { task, seed } of sequential) {
      const local = await timed(() => inProcess([{ task, seed }], 1));
      const remote = await timed(() => throughRequests(server.url, [body(task, seed)], 1));
      localMs += local.ms;
      remoteMs += remote.ms;
      same &&= local.value[0].turns.length === remote.value[0].turns;
    }
    if (!same) process.stderr.write("bench agent-server: the two paths ran different episodes\n");
    figures.agent_server_same_episodes = same ? 1 : 0;
    figures.inprocess_episode_ms = localMs / SEQUENTIAL;
    figures.agent_server_episode_ms = remoteMs / SEQUENTIAL;
    figures.agent_server_overhead_ms = (remoteMs - localMs) / SEQUENTIAL;

    const wide = tasks.map((task, i) => ({ task, seed: 2000 + i }));
    const localWide = await timed(() => inProcess(wide, WIDTH));
    const remoteWide = await timed(() =>
      throughRequests(
        server.url,
        wide.map(({ task, seed }) => body(task, seed)),
        WIDTH,
      ),
    );
    // The same, each episode its own loop (as verl runs them, and as the agent-server does): the
    // embedded server then batches calls as they come instead of one lock-step batch per turn.
    const localApart = await timed(async () => {
      let next = 0;
      const worker = async () => {
        while (next < wide.length) await inProcess([wide[next++]], 1);
      };
      await Promise.all(Array.from({ length: WIDTH }, worker));
    });
    figures.inprocess_lockstep_eps_c32 = wide.length / (localWide.ms / 1000);
    figures.inprocess_eps_c32 = wide.length / (localApart.ms / 1000);
    figures.agent_server_eps_c32 = wide.length / (remoteWide.ms / 1000);
    figures.agent_server_vs_inprocess_c32 = localApart.ms / remoteWide.ms;
    // CPU of this process per episode (the model runs in its own): the loop alone, and the loop
    // behind the agent-server (its HTTP, the gateway hop, the bookkeeping) plus the bench's client.
    figures.inprocess_cpu_ms_per_episode = localApart.cpuMs / wide.length;
    figures.agent_server_cpu_ms_per_episode = remoteWide.cpuMs / wide.length;
  } finally {
    await server.close();
    await upstream.close();
  }

  // The agent-server alone: an upstream that costs nothing.
  const instant = await instantUpstream();
  const alone = await startAgentServer({
    port: 0,
    concurrency: 256,
    upstreamAllow: [instant.baseURL],
    log: () => {},
  });
  try {
    const tasks = rolloutTasks({ split: "test", count: 256, seed: 2 });
    const body = (task: Task, seed: number) => ({
      task,
      seed,
      upstream: { base_url: instant.baseURL },
      sampling: { temperature: 1, logprobs: true },
    });
    await throughRequests(alone.url, [body(tasks[0], 1)], 1);
    const one = await timed(() =>
      throughRequests(
        alone.url,
        tasks.slice(0, 64).map((task, i) => body(task, 10 + i)),
        1,
      ),
    );
    figures.agent_server_instant_episode_ms = one.ms / 64;
    const many = await timed(() =>
      throughRequests(
        alone.url,
        tasks.map((task, i) => body(task, 100 + i)),
        64,
      ),
    );
    if (many.value.some((episode) => episode.turns !== 2))
      throw new Error("bench agent-server: the instant upstream's episodes are not two turns");
    figures.agent_server_instant_eps_c64 = tasks.length / (many.ms / 1000);
    figures.agent_server_instant_cpu_ms_per_episode = many.cpuMs / tasks.length;
  } finally {
    await alone.close();
    await new Promise((done) => instant.server.close(done));
  }
  return figures;
}
