/**
 * `evaluateAgent`: pass@k of a user's agent module. Each task is run n times through an in-process
 * recording gateway in front of `policy` (a checkpoint served in process, or `openai:<url>#<model>`),
 * at most `concurrency` episodes at a time, each under `timeoutMs`. Episodes are stored as they end
 * in an eval run directory under the same keys, seeds, config and files as `evaluate`
 * (src/eval/run-eval.ts), so `passk`, `boundary`, `data export` and the report read them like any
 * other eval; every gateway call is kept in the run's state under `gateway/calls/<episode>/<seq>`.
 *
 * Resumable like `evaluate`: a killed run is rerun with the same `runId` (or `resume`), stored keys
 * are skipped, and only the rest are run. An episode in flight at the kill is run again from the
 * start under a fresh gateway episode id, so it is neither lost nor stored twice. An episode that
 * failed because an upstream call failed (not the agent) is rerun up to `retries` times with the
 * same seed (`info.attempts`); one that still fails is stored as `policy-error`, in the denominator.
 */

import { randomBytes } from "node:crypto";
import { DEFAULT_BUDGETS } from "../env/run-episodes.ts";
import type { CurveOptions } from "../eval/curves.ts";
import {
  completeEval,
  EVAL_TASKS_STATE_KEY,
  EVAL_TOKENIZER_STATE_KEY,
  type EvalConfig,
  type EvalProgress,
  type EvalResult,
  type EvalTaskSource,
  evalEpisodeSeed,
  openEvalRun,
  resolveEvalTasks,
  taskSourceConfig,
} from "../eval/run-eval.ts";
import { tokenizerFingerprint } from "../eval/tokenizer-fingerprint.ts";
import { type ResolveUpstreamOptions, resolveUpstream } from "../gateway/resolve-upstream.ts";
import { startGateway } from "../gateway/server.ts";
import type { GatewayInfo } from "../gateway/trajectory.ts";
import { toolSpecsFromRequest } from "../serve/context.ts";
import type { ChatTool } from "../serve/request.ts";
import { episodeKey } from "../store/index.ts";
import type { Task } from "../types/task.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { getVerifier, type VerifierName } from "../verify/index.ts";
import { checkAnswer } from "../world/index.ts";
import { loadAgent } from "./load-agent.ts";
import { runAgentEpisode } from "./run-episode.ts";
import type { AgentFunction } from "./types.ts";

export interface EvaluateAgentOptions {
  /** Path of the agent module (recorded in the config). */
  agentPath: string;
  /** The loaded agent (default: imported from `agentPath`). */
  agent?: AgentFunction;
  /** The model behind the gateway: checkpoint, scripted name or `openai:<url>#<model>`. */
  policy: string;
  tasks: EvalTaskSource;
  n: number;
  seed?: number;
  temperature?: number;
  topP?: number;
  /** Tokens per call when the agent sends no max_tokens (in-process upstream; default 32, the loop's per-turn budget). */
  maxTurnTokens?: number;
  verifier?: VerifierName;
  /** Episodes running at once (default 8). */
  concurrency?: number;
  /** Milliseconds an episode may run (default 120 000). */
  timeoutMs?: number;
  /** Reruns of an episode that failed because an upstream call did (default 1). */
  retries?: number;
  upstream?: Omit<ResolveUpstreamOptions, "temperature" | "topP" | "maxTokens">;
  runsRoot?: string;
  runId?: string;
  resume?: string;
  persist?: boolean;
  curves?: CurveOptions;
  onStart?: (info: { directory: string | null; runId: string; total: number; resumed: number }) => void;
  onProgress?: (progress: EvalProgress) => void;
  signal?: AbortSignal;
}

/** The eval config of an agent run: `EvalConfig` with the agent recorded beside the policy. */
export interface AgentEvalConfig extends EvalConfig {
  /** The module, and the model behind the gateway as `--policy` named it. */
  agent: { module: string; policy: string; timeoutMs: number };
}

export const AGENT_EVAL_DEFAULTS = {
  concurrency: 8,
  timeoutMs: 120_000,
  maxTurnTokens: 32,
  retries: 1,
} as const;

/** A failed episode with a failed upstream call: the infrastructure's failure, worth a rerun. */
function upstreamFailed(trajectory: Trajectory): boolean {
  const info = trajectory.info?.gateway as GatewayInfo | undefined;
  return trajectory.endReason === "policy-error" && (info?.failedCalls ?? 0) > 0;
}

export async function evaluateAgent(options: EvaluateAgentOptions): Promise<EvalResult> {
  if (!Number.isInteger(options.n) || options.n < 1)
    throw new Error(`evaluateAgent: n must be a positive integer, got ${options.n}`);
  const tasks = resolveEvalTasks(options.tasks);
  const timeoutMs = options.timeoutMs ?? AGENT_EVAL_DEFAULTS.timeoutMs;
  const concurrency = Math.max(1, options.concurrency ?? AGENT_EVAL_DEFAULTS.concurrency);
  const maxTurnTokens = options.maxTurnTokens ?? AGENT_EVAL_DEFAULTS.maxTurnTokens;
  const retries = Math.max(0, options.retries ?? AGENT_EVAL_DEFAULTS.retries);
  const source = options.tasks;
  const config: AgentEvalConfig = {
    policy: `agent:${options.agentPath}@${options.policy}`,
    tasks: taskSourceConfig(source, tasks),
    n: options.n,
    seed: options.seed ?? 1,
    temperature: options.temperature ?? null,
    topP: options.topP ?? null,
    noise: 0,
    budgets: { ...DEFAULT_BUDGETS, maxTurnTokens },
    verifier: options.verifier ?? null,
    toolSetup: null,
    agent: { module: options.agentPath, policy: options.policy, timeoutMs },
  };
  const verify = config.verifier ? getVerifier(config.verifier) : checkAnswer;
  const agent = options.agent ?? (await loadAgent(options.agentPath));
  const { store, run, directory } = openEvalRun(options, config, tasks);
  const token = randomBytes(24).toString("hex");
  let gateway: Awaited<ReturnType<typeof startGateway>> | null = null;
  try {
    const upstream = await resolveUpstream(options.policy, {
      ...options.upstream,
      ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
      ...(options.topP !== undefined ? { topP: options.topP } : {}),
      maxTokens: maxTurnTokens,
    });
    let toolsRecorded = store.toolSpecs(run.id) !== undefined;
    let tokenizerRecorded = store.getState(run.id, EVAL_TOKENIZER_STATE_KEY) !== undefined;
    gateway = await startGateway({
      upstream,
      token,
      policyId: config.policy,
      onCall: (call) => {
        // The tools the agent offered, once, for exports (`tools` of the OpenAI JSONL).
        if (!toolsRecorded && Array.isArray(call.request.tools) && call.request.tools.length > 0) {
          store.setToolSpecs(run.id, toolSpecsFromRequest(call.request.tools as ChatTool[]));
          toolsRecorded = true;
        }
        store.setState(run.id, `gateway/calls/${call.episodeId}/${String(call.seq).padStart(4, "0")}`, call);
        // An in-process model's tokenizer is known once a call has loaded it: perplexity and
        // exports then reuse the stored ids instead of re-encoding the texts.
        if (!tokenizerRecorded && upstream.tokenizer) {
          store.setState(run.id, EVAL_TOKENIZER_STATE_KEY, tokenizerFingerprint(upstream.tokenizer));
          tokenizerRecorded = true;
        }
      },
    });
    if (!store.getState(run.id, EVAL_TASKS_STATE_KEY)) store.setState(run.id, EVAL_TASKS_STATE_KEY, tasks);
    const stored = store.episodeKeys(run.id);
    const pending: { task: Task; sample: number; key: string }[] = [];
    for (let sample = 0; sample < config.n; sample++)
      for (const task of tasks) {
        const key = episodeKey(task.id, sample);
        if (!stored.has(key)) pending.push({ task, sample, key });
      }
    const total = tasks.length * config.n;
    const resumed = total - pending.length;
    options.onStart?.({ directory, runId: run.id, total, resumed });
    const progress: EvalProgress = {
      done: resumed,
      total,
      correct: resumed > 0 ? store.countTrajectories(run.id, { correct: true }) : 0,
      policyErrors: 0,
    };
    options.onProgress?.({ ...progress });
    let prefixBreaks = 0;
    let next = 0;
    const worker = async () => {
      while (next < pending.length && !options.signal?.aborted) {
        const item = pending[next++];
        const attemptEpisode = () =>
          runAgentEpisode({
            gateway: gateway!,
            agent,
            task: item.task,
            key: item.key,
            seed: evalEpisodeSeed(config.seed, item.task.id, item.sample),
            verify,
            apiKey: token,
            timeoutMs,
            ...(options.signal ? { signal: options.signal } : {}),
          });
        let episode = await attemptEpisode();
        // An episode that failed because the upstream did (not the agent) is run again, same seed.
        for (let attempt = 1; attempt <= retries && upstreamFailed(episode.trajectory); attempt++) {
          if (options.signal?.aborted) break;
          episode = await attemptEpisode();
          episode.trajectory.info = { ...episode.trajectory.info, attempts: attempt + 1 };
        }
        if (options.signal?.aborted) return; // an episode cut by the stop is run again on resume
        store.addTrajectory(run.id, episode.trajectory, { key: item.key });
        prefixBreaks += episode.prefixBreaks;
        progress.done++;
        if (episode.trajectory.correct) progress.correct++;
        if (episode.trajectory.endReason === "policy-error") progress.policyErrors++;
        options.onProgress?.({ ...progress });
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, pending.length) }, worker));
    if (options.signal?.aborted) throw new Error("evaluateAgent: stopped");

    return await completeEval({
      store,
      runId: run.id,
      directory,
      policyId: config.policy,
      config,
      tasks,
      curves: options.curves,
      episodes: { resumed, sampled: pending.length },
      extraMetrics: {
        "gateway/prefix_breaks": prefixBreaks,
        "gateway/calls": gateway.stats.calls,
        "gateway/failed_calls": gateway.stats.failedCalls,
      },
    });
  } catch (error) {
    store.finishRun(run.id, options.signal?.aborted ? "interrupted" : "failed", { error: String(error) });
    throw error;
  } finally {
    await gateway?.close();
    store.close();
  }
}
