/**
 * `evaluate`: pass@k of a policy on a task set. Samples n episodes per task, stores every
 * trajectory in an eval run directory as it ends (key `episodeKey(task.id, sample)`), and computes
 * per-task counts and pass@k curves overall, per family and per template.
 *
 *   const result = await evaluate({ policy, tasks: { type: "world", split: "test", count: 100, seed: 1 }, n: 64 });
 *   result.curves.overall   // [{ k: 1, passAtK, lower, upper }, …, { k: 64, … }]
 *
 * Resumable: pointed at an existing run (`resume`, or a `runId` whose folder exists) it checks the
 * config is the same, skips the keys already stored and samples the rest, so a killed eval loses at
 * most the episodes in flight. Episode seeds are a function of (eval seed, task id, sample index)
 * only, so a resumed eval draws exactly the episodes an uninterrupted one would have.
 *
 * Episodes are ordered sample-major (sample 0 of every task, then sample 1, …) so a partial run
 * has about the same n on every task, and go through `runEpisodes` in chunks so memory stays flat.
 *
 * Task files (`{ type: "given" }` tasks read by src/tasks) name their verifier (`verifier: "math"`)
 * and their tools (`toolSetup`: the code tool, an MCP server) instead of passing functions, so both
 * are recorded in the config and a resume rebuilds them; an MCP connection is opened before the run
 * and closed when it ends, and `noise` wraps those tools client-side with labelled failures.
 *
 * This file is the driver; its parts live beside it: the task sources (eval-tasks.ts), the tool
 * setups (eval-tools.ts), opening or resuming the run (eval-run.ts), and the summary that completes
 * it (eval-summary.ts).
 */
import { hashString, mixSeeds } from "../core/random.ts";
import { DEFAULT_BUDGETS, type EpisodeBudgets, type EpisodeSpec, runEpisodes } from "../env/run-episodes.ts";
import { worldToolsFor } from "../env/task-set.ts";
import { episodeKey, type RunRecord, type Store } from "../store/index.ts";
import { finishRunAfterError } from "../store/run-failure.ts";
import { toolSpec, uniformNoise } from "../tools/index.ts";
import { isInfraFailure } from "../types/failure.ts";
import type { Policy } from "../types/policy.ts";
import type { Task } from "../types/task.ts";
import type { AnyTool } from "../types/tool.ts";
import { checkTasksForVerifier, getVerifier, type VerifierName } from "../verify/index.ts";
import { checkAnswer } from "../world/index.ts";
import type { CurveOptions, PassAtKCurves } from "./curves.ts";
import type { EvalFiles } from "./eval-files.ts";
import { EVAL_TASKS_STATE_KEY, EVAL_TOKENIZER_STATE_KEY, openEvalRun } from "./eval-run.ts";
import { completeEval } from "./eval-summary.ts";
import {
  type EvalTaskConfig,
  type EvalTaskSource,
  resolveEvalTasks,
  taskSourceConfig,
  taskSourceName,
} from "./eval-tasks.ts";
import { type EvalToolSetup, normalizeToolSetup, openToolSetup } from "./eval-tools.ts";
import type { TaskCount, TaskTotals } from "./task-counts.ts";
import { tokenizerFingerprint } from "./tokenizer-fingerprint.ts";

/** Budgets for endpoint policies and task files: real models think in long turns (`agentrl eval`'s defaults there). */
export const LONG_FORM_BUDGETS: Readonly<Pick<EpisodeBudgets, "maxTurnTokens" | "maxTokens">> = {
  maxTurnTokens: 4096,
  maxTokens: 16384,
};

/**
 * The budgets an eval uses unless told otherwise: the episode loop's `DEFAULT_BUDGETS` (sized for the
 * embedded model on world tasks), with `LONG_FORM_BUDGETS` for a chat (endpoint) policy or file tasks.
 */
export function defaultEvalBudgets(options: { chat: boolean; fileTasks: boolean }): EpisodeBudgets {
  return options.chat || options.fileTasks
    ? { ...DEFAULT_BUDGETS, ...LONG_FORM_BUDGETS }
    : { ...DEFAULT_BUDGETS };
}

/** The run config: everything that decides which episodes an eval draws (compared on resume). */
export interface EvalConfig {
  /** How the policy was named (`--policy`), else its id. */
  policy: string;
  tasks: EvalTaskConfig;
  /** Samples per task. */
  n: number;
  /** Sampling seed. */
  seed: number;
  /** Sampling parameters the policy was built with (null: not given). */
  temperature: number | null;
  topP: number | null;
  /** Total tool failure rate of the uniform noise model (0: none; null: a custom tool factory). */
  noise: number | null;
  budgets: EpisodeBudgets;
  /** The verifier by name (null: the world's `checkAnswer`, or a custom `verify`). Absent in older runs. */
  verifier?: VerifierName | null;
  /** Tools built from a setup (null: the world's tools, or a custom factory). Absent in older runs. */
  toolSetup?: EvalToolSetup | null;
}

export interface EvalProgress {
  /** Episodes stored so far, including those found on resume. */
  done: number;
  total: number;
  correct: number;
  policyErrors: number;
  /** Episodes that failed for an infra reason (not samples: out of pass@k's n). */
  infraFailures: number;
}

export interface EvaluateOptions {
  policy: Policy;
  /** How the policy was named, recorded in the config (default `policy.id`). */
  policySpec?: string;
  tasks: EvalTaskSource;
  /** Samples per task. */
  n: number;
  /** Sampling seed (default 1). */
  seed?: number;
  /** Recorded in the config; the caller builds the policy with them (the paper's curves: 0.6 / 0.95). */
  temperature?: number;
  topP?: number;
  /** Total tool failure rate, split evenly over the failure modes (world tools, or a `toolSetup`'s; not custom `tools`). */
  noise?: number;
  /** Tools of an episode (default: the task's world tools with `noise`). Excludes `toolSetup`. */
  tools?: (task: Task, seed: number) => readonly AnyTool[];
  /**
   * Tools from a recorded setup (file tasks): `{ code: false, mcp: null }` is no tools at all. With
   * `noise`, each episode's tools get stale-result noise seeded by the episode seed, labelled
   * `injected`. Excludes `tools`.
   */
  toolSetup?: EvalToolSetup;
  /** Bearer token of an MCP `url` setup with `token: true` (never stored in the run). */
  mcpToken?: string;
  /** Correctness of a final answer (default: the world's `checkAnswer`). Excludes `verifier`. */
  verify?: (task: Task, answer: string | null) => boolean | Promise<boolean>;
  /** A verifier by name (src/verify), recorded in the config. Excludes `verify`. */
  verifier?: VerifierName;
  budgets?: Partial<EpisodeBudgets>;
  /** Episodes advanced together (default 64; large for embedded models, the concurrency for endpoints). */
  batchSize?: number;
  curves?: CurveOptions;
  /** Root of run directories (default `runs`). */
  runsRoot?: string;
  /** Name of the run directory; an existing one is resumed. */
  runId?: string;
  parentId?: string;
  /** Run state written when the run is created (a recipe stage's run name), key → JSON value. */
  runState?: Readonly<Record<string, unknown>>;
  /** A run directory to resume (its config must match). */
  resume?: string;
  /** false: keep everything in memory (no run directory, no files), for in-process evals. Default true. */
  persist?: boolean;
  /** Called once the run is open, before sampling: where it lives and how much is left. */
  onStart?: (info: { directory: string | null; runId: string; total: number; resumed: number }) => void;
  onProgress?: (progress: EvalProgress) => void;
  signal?: AbortSignal;
}

export interface EvalResult {
  /** The run directory, or null when `persist` is false. */
  directory: string | null;
  runId: string;
  policyId: string;
  config: EvalConfig;
  counts: TaskCount[];
  curves: PassAtKCurves;
  totals: TaskTotals;
  /** Episodes found stored on resume, and sampled by this call. */
  episodes: { resumed: number; sampled: number };
  endReasons: Record<string, number>;
  /** `eval/pass@<k>`, `eval/pass^<k>` and their `eval/<family>/…` forms, `eval/policy_errors`, `eval/solved_fraction`. */
  metrics: Record<string, number>;
  files: EvalFiles | null;
}

/** Seed of one episode: a function of the eval seed, the task id and the sample index only. */
export function evalEpisodeSeed(seed: number, taskId: string, sample: number): number {
  return mixSeeds(mixSeeds(seed >>> 0, hashString(taskId)), sample);
}

function buildConfig(options: EvaluateOptions, tasks: readonly Task[]): EvalConfig {
  return {
    policy: options.policySpec ?? options.policy.id,
    tasks: taskSourceConfig(options.tasks, tasks),
    n: options.n,
    seed: options.seed ?? 1,
    temperature: options.temperature ?? null,
    topP: options.topP ?? null,
    noise: options.tools ? null : (options.noise ?? 0),
    budgets: { ...DEFAULT_BUDGETS, ...options.budgets },
    verifier: options.verifier ?? null,
    toolSetup: options.toolSetup ? normalizeToolSetup(options.toolSetup) : null,
  };
}

/** Runs (or resumes) an eval and returns its counts and curves; see the file comment. */
export async function evaluate(options: EvaluateOptions): Promise<EvalResult> {
  if (!Number.isInteger(options.n) || options.n < 1)
    throw new Error(`evaluate: n must be a positive integer, got ${options.n}`);
  if (options.tools && options.toolSetup) throw new Error("evaluate: give tools or toolSetup, not both");
  if (options.verify && options.verifier) throw new Error("evaluate: give verify or verifier, not both");
  const tasks = resolveEvalTasks(options.tasks);
  const config = buildConfig(options, tasks);
  if (config.verifier) checkTasksForVerifier(config.verifier, tasks, taskSourceName(config.tasks));
  const verify = options.verify ?? (config.verifier ? getVerifier(config.verifier) : checkAnswer);
  const { policy } = options;
  const batchSize = Math.max(1, options.batchSize ?? 64);
  const opened = config.toolSetup
    ? await openToolSetup(config.toolSetup, {
        noise: config.noise ?? 0,
        ...(options.mcpToken ? { mcpToken: options.mcpToken } : {}),
      })
    : null;
  const tools =
    opened?.tools ??
    options.tools ??
    worldToolsFor(config.noise ? { noise: uniformNoise(config.noise) } : {});

  let run: RunRecord;
  let store: Store;
  let directory: string | null;
  try {
    ({ store, run, directory } = openEvalRun(options, config, tasks));
  } catch (error) {
    await opened?.close();
    throw error;
  }
  try {
    if (!store.getState(run.id, EVAL_TASKS_STATE_KEY)) {
      store.transaction(() => {
        store.setState(run.id, EVAL_TASKS_STATE_KEY, tasks);
        for (const [key, value] of Object.entries(options.runState ?? {})) store.setState(run.id, key, value);
        store.setToolSpecs(run.id, tools(tasks[0], config.seed).map(toolSpec));
        if (policy.tokenizer)
          store.setState(run.id, EVAL_TOKENIZER_STATE_KEY, tokenizerFingerprint(policy.tokenizer));
      });
    }
    const stored = store.episodeKeys(run.id);
    const pending: EpisodeSpec[] = [];
    for (let sample = 0; sample < config.n; sample++) {
      for (const task of tasks) {
        const key = episodeKey(task.id, sample);
        if (!stored.has(key))
          pending.push({ task, seed: evalEpisodeSeed(config.seed, task.id, sample), id: key });
      }
    }
    const total = tasks.length * config.n;
    const resumed = total - pending.length;
    options.onStart?.({ directory, runId: run.id, total, resumed });
    const progress: EvalProgress = { done: resumed, total, correct: 0, policyErrors: 0, infraFailures: 0 };
    if (resumed > 0) {
      progress.correct = store.countTrajectories(run.id, { correct: true });
    }
    options.onProgress?.({ ...progress });

    // Chunks of several batches: the batch stays full inside a chunk, and memory holds one chunk.
    const chunkSize = Math.max(256, batchSize * 8);
    for (let start = 0; start < pending.length; start += chunkSize) {
      await runEpisodes({
        policy,
        episodes: pending.slice(start, start + chunkSize),
        tools,
        verify,
        budgets: config.budgets,
        batchSize,
        ...(options.signal ? { signal: options.signal } : {}),
        onEpisode: (trajectory) => {
          // The key is the episode id (set above), so a rerun of this episode is a no-op.
          store.addTrajectory(run.id, trajectory, { key: trajectory.id });
          progress.done++;
          if (trajectory.correct) progress.correct++;
          if (isInfraFailure(trajectory)) progress.infraFailures++;
          else if (trajectory.endReason === "policy-error") progress.policyErrors++;
          options.onProgress?.({ ...progress });
        },
      });
    }

    return await completeEval({
      store,
      runId: run.id,
      directory,
      policyId: policy.id,
      config,
      tasks,
      curves: options.curves,
      episodes: { resumed, sampled: pending.length },
    });
  } catch (error) {
    finishRunAfterError(store, run.id, error, options.signal);
    throw error;
  } finally {
    store.close();
    await opened?.close();
  }
}
