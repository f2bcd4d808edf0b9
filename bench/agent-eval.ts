/**
 * `eval --agent` against the in-process `eval` of the same model and tasks, in one run: 64
 * test-world tasks x n = 4 (256 episodes: 16 x 4 was mostly the slots' start at 32) of
 * models/base-strong, the paper's sampling (temperature 0.6, top-p 0.95), 32 tokens a turn. In
 * process: `evaluate` (the episode loop, batch 64). As an agent: `evaluateAgent` with
 * examples/agents/openai-env.ts (a module-level `new OpenAI()` from the environment) in worker
 * slots at the default concurrency of 8, and again at 32, through the gateway in front of the
 * same checkpoint served in process.
 *
 * - `agent_eval_episodes_per_s`, `agent_eval_32_episodes_per_s`: the agent's episodes/s at 8 and 32.
 * - `agent_eval_ratio`, `agent_eval_32_ratio`: those over the in-process `eval`'s (goal: >= 0.5).
 * - `agent_eval_no_model_ratio`: the same agent at 8 slots with the scripted expert as the model
 *   (no neural compute; it makes a few more calls per episode, all correct) over the in-process
 *   `eval`: the ceiling the agent's own code, HTTP and recording leave on this machine.
 * - `agent_eval_model_share`: of the slots' time (wall x concurrency), the share spent waiting for
 *   a model call (the recorded call latencies; the rest: checkpoint load and slot start before the
 *   first call, the agent's own code and tools, HTTP) at concurrency 8; said on stderr with the
 *   time of the first call.
 *
 * Both sides are timed from the start of their run, loading the checkpoint included.
 *
 * One warm-up of each first (the decode programs, the worlds' search indexes, the worker imports
 * are then in the file cache).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { evaluateAgent } from "../src/agents/evaluate-agent.ts";
import { evaluate } from "../src/eval/run-eval.ts";
import type { GatewayCall } from "../src/gateway/types.ts";
import { loadEmbeddedPolicy } from "../src/policy/embedded/index.ts";
import { openRunDirectory } from "../src/store/index.ts";

const BASE = "models/base-strong";
const AGENT = "examples/agents/openai-env.ts";
const sampling = { temperature: 0.6, topP: 0.95 };

/** Both sides are timed from the start, loading the checkpoint included (the agent's gateway loads its own). */
async function inProcess(count: number, n: number): Promise<number> {
  const started = performance.now();
  const policy = await loadEmbeddedPolicy(BASE, sampling);
  try {
    const result = await evaluate({
      policy,
      tasks: { type: "world", split: "test", count, seed: 1 },
      n,
      ...sampling,
      batchSize: 64,
      persist: false,
      curves: { bootstrap: false },
    });
    return result.totals.samples / ((performance.now() - started) / 1000);
  } finally {
    await policy.close();
  }
}

async function asAgent(count: number, n: number, concurrency: number, policy = BASE) {
  const root = mkdtempSync(join(tmpdir(), "agentrl-bench-agent-eval-"));
  try {
    const started = performance.now();
    const result = await evaluateAgent({
      agentPath: AGENT,
      policy,
      tasks: { type: "world", split: "test", count, seed: 1 },
      n,
      ...sampling,
      concurrency,
      runsRoot: root,
      runId: "bench",
      curves: { bootstrap: false },
    });
    const seconds = (performance.now() - started) / 1000;
    const store = openRunDirectory(join(root, "bench"));
    let modelMs = 0;
    let firstCall = Number.POSITIVE_INFINITY;
    try {
      const run = store.listRuns()[0];
      for (const key of store.stateKeys(run.id)) {
        if (!key.startsWith("gateway/calls/")) continue;
        const call = store.getState<GatewayCall>(run.id, key)!;
        modelMs += call.latencyMs;
        firstCall = Math.min(firstCall, Date.parse(call.startedAt));
      }
    } finally {
      store.close();
    }
    return {
      perSecond: result.totals.samples / seconds,
      modelShare: modelMs / (seconds * 1000 * concurrency),
      firstCallMs: firstCall - (Date.now() - seconds * 1000),
      calls: result.metrics["gateway/calls"] ?? 0,
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

export async function benchAgentEval(): Promise<Record<string, number>> {
  await inProcess(4, 4);
  await asAgent(4, 4, 8);
  const reference = await inProcess(64, 4);
  const at8 = await asAgent(64, 4, 8);
  const at32 = await asAgent(64, 4, 32);
  // the same agent, gateway and server with the scripted expert behind them: no model compute, so
  // what is left is the agent's own work, HTTP and recording (the path's ceiling on this machine)
  const scripted = await asAgent(64, 4, 8, "expert");
  process.stderr.write(
    `bench: agent eval at concurrency 8: ${at8.calls} calls, ${(100 * at8.modelShare).toFixed(0)}% of slot time waiting for the model, first call ${Math.round(at8.firstCallMs)} ms after the start (checkpoint load, slot start)\n`,
  );
  return {
    agent_eval_episodes_per_s: at8.perSecond,
    agent_eval_ratio: at8.perSecond / reference,
    agent_eval_32_episodes_per_s: at32.perSecond,
    agent_eval_32_ratio: at32.perSecond / reference,
    agent_eval_model_share: at8.modelShare,
    agent_eval_no_model_ratio: scripted.perSecond / reference,
  };
}
