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

import { DEFAULT_BUDGETS } from "../env/run-episodes.ts";
import type { CurveOptions } from "../eval/curves.ts";
import { EVAL_TASKS_STATE_KEY, openEvalRun } from "../eval/eval-run.ts";
import { completeEval } from "../eval/eval-summary.ts";
import { type EvalTaskSource, resolveEvalTasks, taskSourceConfig } from "../eval/eval-tasks.ts";
import { type EvalConfig, type EvalProgress, type EvalResult, evalEpisodeSeed } from "../eval/run-eval.ts";
import type { ResolveUpstreamOptions } from "../gateway/resolve-upstream.ts";
import { episodeKey } from "../store/index.ts";
import { finishRunAfterError } from "../store/run-failure.ts";
import { isInfraFailure } from "../types/failure.ts";
import type { Task } from "../types/task.ts";
import { getVerifier, type VerifierName } from "../verify/index.ts";
import { checkAnswer } from "../world/index.ts";
import { type AgentRunner, openAgentRunner } from "./agent-runner.ts";
import { type AgentSourceOptions, agentSourceName, agentSourceOf } from "./agent-source.ts";

export interface EvaluateAgentOptions extends AgentSourceOptions {
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
  /**
   * The module (or, for `--agent-cmd`, the command: `module` is then `cmd:<command>`), and the
   * model behind the gateway as `--policy` named it.
   */
  agent: { module: string; command?: string; policy: string; timeoutMs: number; memoryMb?: number };
}

export const AGENT_EVAL_DEFAULTS = {
  concurrency: 8,
  timeoutMs: 120_000,
  maxTurnTokens: 32,
  retries: 1,
} as const;

export async function evaluateAgent(options: EvaluateAgentOptions): Promise<EvalResult> {
  if (!Number.isInteger(options.n) || options.n < 1)
    throw new Error(`evaluateAgent: n must be a positive integer, got ${options.n}`);
  const tasks = resolveEvalTasks(options.tasks);
  const timeoutMs = options.timeoutMs ?? AGENT_EVAL_DEFAULTS.timeoutMs;
  const concurrency = Math.max(1, options.concurrency ?? AGENT_EVAL_DEFAULTS.concurrency);
  const maxTurnTokens = options.maxTurnTokens ?? AGENT_EVAL_DEFAULTS.maxTurnTokens;
  const retries = Math.max(0, options.retries ?? AGENT_EVAL_DEFAULTS.retries);
  const source = options.tasks;
  const agentSource = agentSourceOf(options);
  const agentName =
    agentSourceName(agentSource) === "function" ? String(options.agentPath) : agentSourceName(agentSource);
  const config: AgentEvalConfig = {
    policy: `agent:${agentName}@${options.policy}`,
    tasks: taskSourceConfig(source, tasks),
    n: options.n,
    seed: options.seed ?? 1,
    temperature: options.temperature ?? null,
    topP: options.topP ?? null,
    noise: 0,
    budgets: { ...DEFAULT_BUDGETS, maxTurnTokens },
    verifier: options.verifier ?? null,
    toolSetup: null,
    agent: {
      module: agentName,
      ...(agentSource.kind === "command" ? { command: agentSource.command } : {}),
      policy: options.policy,
      timeoutMs,
      ...(agentSource.kind === "module" && agentSource.memoryMb !== undefined
        ? { memoryMb: agentSource.memoryMb }
        : {}),
    },
  };
  const verify = config.verifier ? getVerifier(config.verifier) : checkAnswer;
  const { store, run, directory } = openEvalRun(options, config, tasks);
  let runner: AgentRunner | null = null;
  try {
    runner = await openAgentRunner({
      agent: agentSource,
      policy: options.policy,
      policyId: config.policy,
      ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
      ...(options.topP !== undefined ? { topP: options.topP } : {}),
      maxTurnTokens,
      ...(options.upstream ? { upstream: options.upstream } : {}),
      verify,
      timeoutMs,
      retries,
      concurrency,
      record: { store, runId: run.id },
      ...(options.signal ? { signal: options.signal } : {}),
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
      infraFailures: 0,
    };
    options.onProgress?.({ ...progress });
    let prefixBreaks = 0;
    const failures = { agent: 0, infra: 0, policy: 0, tool: 0 };
    await runner.run(
      pending.map((item) => ({
        task: item.task,
        key: item.key,
        seed: evalEpisodeSeed(config.seed, item.task.id, item.sample),
      })),
      (item, episode) => {
        store.addTrajectory(run.id, episode.trajectory, { key: item.key });
        prefixBreaks += episode.prefixBreaks;
        progress.done++;
        if (episode.trajectory.correct) progress.correct++;
        if (isInfraFailure(episode.trajectory)) progress.infraFailures++;
        else if (episode.trajectory.endReason === "policy-error") progress.policyErrors++;
        if (episode.trajectory.failure) failures[episode.trajectory.failure.class]++;
        options.onProgress?.({ ...progress });
      },
    );
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
        "gateway/calls": runner.gateway.stats.calls,
        "gateway/failed_calls": runner.gateway.stats.failedCalls,
        // Calls a server without token ids answered: their turns are text-only (labelled, never trained on).
        "gateway/text_only_calls": runner.gateway.stats.textOnlyCalls,
        // Episodes of this session by failure class (agent: the agent's own; infra: the upstream's).
        "agent/failed_episodes": failures.agent,
        "agent/infra_failed_episodes": failures.infra,
      },
    });
  } catch (error) {
    finishRunAfterError(store, run.id, error, options.signal);
    throw error;
  } finally {
    await runner?.close();
    store.close();
  }
}
