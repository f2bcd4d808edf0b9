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
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { hashString, mixSeeds } from "../core/random.ts";
import { DEFAULT_BUDGETS, type EpisodeBudgets, type EpisodeSpec, runEpisodes } from "../env/run-episodes.ts";
import { rolloutTasks, worldToolsFor } from "../env/task-set.ts";
import { withToolNoise } from "../mcp/noise.ts";
import {
  createRunDirectory,
  DEFAULT_RUNS_ROOT,
  directoryRun,
  episodeKey,
  isAbandonedRunDirectory,
  isRunDirectory,
  openRunDirectory,
  openStore,
  type RunRecord,
  type Store,
} from "../store/index.ts";
import { finishRunAfterError } from "../store/run-failure.ts";
import { createCodeTool } from "../tools/code.ts";
import { toolSpec, uniformNoise } from "../tools/index.ts";
import { createPythonTool } from "../tools/python.ts";
import type { Policy } from "../types/policy.ts";
import type { Task, TaskFamily } from "../types/task.ts";
import type { AnyTool } from "../types/tool.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { getVerifier, type VerifierName } from "../verify/index.ts";
import { checkAnswer } from "../world/index.ts";
import { type CurveOptions, curveMetrics, type PassAtKCurves, passAtKCurves } from "./curves.ts";
import { type EvalFiles, writeEvalFiles } from "./eval-files.ts";
import { countByTask, countTotals, type TaskCount, type TaskTotals } from "./task-counts.ts";
import { tokenizerFingerprint } from "./tokenizer-fingerprint.ts";

/** World tasks of one split, drawn as `rolloutTasks` draws them. */
export interface WorldTaskSource {
  type: "world";
  split: "train" | "test";
  count: number;
  /** Seed of the task selection (kept apart from the sampling seed so evals of several models share tasks). */
  seed: number;
  family?: TaskFamily;
}

/** An explicit task list (file tasks: pass their `tools` and `verify` too). */
export interface GivenTaskSource {
  type: "given";
  tasks: readonly Task[];
  /** Name of the set (a file path), recorded in the config. */
  name?: string;
}

export type EvalTaskSource = WorldTaskSource | GivenTaskSource;

/** An MCP server whose tools an eval offers: a command it starts (stdio), or a Streamable HTTP URL. */
export type EvalMcpSetup =
  | { command: string; args: string[] }
  /** `token`: whether the server needs a bearer token (the token itself is never stored). */
  | { url: string; token: boolean };

/** The tools of file tasks, by description (recorded in the config, so a resume rebuilds them). */
export interface EvalToolSetup {
  /** The sandboxed JavaScript code tool (src/tools/code.ts). */
  code: boolean;
  /** The sandboxed Python tool (src/tools/python.ts); absent in older runs. */
  python?: boolean;
  /** A folder of pure-Python wheels the python tool installs (offline) in every interpreter. */
  pythonWheels?: string;
  /** Every tool of one MCP server (src/mcp/client.ts), or none. */
  mcp: EvalMcpSetup | null;
}

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
  tasks:
    | { type: "world"; split: "train" | "test"; count: number; seed: number; family: TaskFamily | null }
    | { type: "given"; name: string | null; count: number };
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

/** State keys of an eval run. */
export const EVAL_TASKS_STATE_KEY = "eval/tasks";
export const EVAL_TOKENIZER_STATE_KEY = "eval/tokenizer";

/** Seed of one episode: a function of the eval seed, the task id and the sample index only. */
export function evalEpisodeSeed(seed: number, taskId: string, sample: number): number {
  return mixSeeds(mixSeeds(seed >>> 0, hashString(taskId)), sample);
}

/** The tasks of a source, checked: non-empty, unique ids. */
export function resolveEvalTasks(source: EvalTaskSource): Task[] {
  const tasks =
    source.type === "world"
      ? rolloutTasks({
          split: source.split,
          count: source.count,
          seed: source.seed,
          ...(source.family ? { family: source.family } : {}),
        })
      : [...source.tasks];
  if (tasks.length === 0) throw new Error("evaluate: the task set is empty");
  const seen = new Set<string>();
  for (const task of tasks) {
    if (seen.has(task.id)) throw new Error(`evaluate: duplicate task id ${task.id}`);
    seen.add(task.id);
  }
  return tasks;
}

/** How an eval's tasks are recorded in its config (world tasks by their recipe, given ones by name). */
export function taskSourceConfig(source: EvalTaskSource, tasks: readonly Task[]): EvalConfig["tasks"] {
  return source.type === "world"
    ? {
        type: "world",
        split: source.split,
        count: source.count,
        seed: source.seed,
        family: source.family ?? null,
      }
    : { type: "given", name: source.name ?? null, count: tasks.length };
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

function normalizeToolSetup(setup: EvalToolSetup): EvalToolSetup {
  const { mcp } = setup;
  return {
    code: setup.code === true,
    ...(setup.python === true ? { python: true } : {}),
    ...(setup.python === true && setup.pythonWheels ? { pythonWheels: setup.pythonWheels } : {}),
    mcp:
      mcp === null
        ? null
        : "command" in mcp
          ? { command: mcp.command, args: [...mcp.args] }
          : { url: mcp.url, token: mcp.token === true },
  };
}

/** The tools of a setup, built once; `tools(task, seed)` adds per-episode noise. `close` ends an MCP connection. */
export interface OpenedTools {
  tools: (task: Task, seed: number) => readonly AnyTool[];
  close(): Promise<void>;
}

/**
 * Builds the tools of a setup: the code tool, then the MCP server's tools (connected now; a server
 * that cannot be reached fails here, before any run is created). Names must be unique.
 */
export async function openToolSetup(
  setup: EvalToolSetup,
  options: { noise?: number; mcpToken?: string } = {},
): Promise<OpenedTools> {
  const base: AnyTool[] = [];
  if (setup.code) base.push(createCodeTool() as AnyTool);
  if (setup.python) {
    base.push(createPythonTool(setup.pythonWheels ? { wheelsDir: setup.pythonWheels } : {}) as AnyTool);
  }
  let close = async () => {};
  const { mcp } = setup;
  if (mcp) {
    if ("url" in mcp && mcp.token && !options.mcpToken) {
      throw new Error(
        `evaluate: the MCP server ${mcp.url} needs a bearer token, which runs never store: give it again (--mcp-token or $AGENTRL_MCP_TOKEN)`,
      );
    }
    const { connectMcpTools } = await import("../mcp/client.ts");
    const spec =
      "command" in mcp
        ? { command: mcp.command, args: mcp.args }
        : { url: mcp.url, ...(options.mcpToken ? { token: options.mcpToken } : {}) };
    let connection: Awaited<ReturnType<typeof connectMcpTools>>;
    try {
      connection = await connectMcpTools(spec);
    } catch (error) {
      const where = "command" in mcp ? [mcp.command, ...mcp.args].join(" ") : mcp.url;
      throw new Error(`evaluate: cannot use the MCP server ${where}: ${(error as Error).message}`);
    }
    close = () => connection.close();
    base.push(...connection.tools);
  }
  const names = base.map((tool) => tool.name);
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice !== undefined) {
    await close();
    throw new Error(`evaluate: two tools are named "${twice}" (the code tool and an MCP tool?)`);
  }
  const noise = options.noise ?? 0;
  const config = uniformNoise(noise);
  return {
    tools: noise > 0 ? (_task, seed) => withToolNoise(base, config, seed) : () => base,
    close,
  };
}

/** Fields of two configs that differ, as `field: stored → new`. */
export function configDifferences(stored: EvalConfig, wanted: EvalConfig): string[] {
  const fields = Object.keys(wanted) as (keyof EvalConfig)[];
  // A field an older run did not record reads as null (its default).
  const show = (value: unknown) => JSON.stringify(value ?? null);
  return fields
    .filter((field) => show(stored[field]) !== show(wanted[field]))
    .map((field) => `${field}: ${show(stored[field])} → ${show(wanted[field])}`);
}

export interface OpenedRun {
  store: Store;
  run: RunRecord;
  directory: string | null;
}

/** Where and how an eval run is stored (the part of the options `openEvalRun` reads). */
export type EvalRunPlacement = Pick<
  EvaluateOptions,
  "persist" | "resume" | "runId" | "runsRoot" | "parentId"
>;

/**
 * Opens the eval's run: in memory (`persist: false`), resumed (same config and task list, else a
 * clear error), or new.
 */
export function openEvalRun(
  options: EvalRunPlacement,
  config: EvalConfig,
  tasks: readonly Task[],
): OpenedRun {
  if (options.persist === false) {
    if (options.resume) throw new Error("evaluate: resume needs a persisted run (persist: true)");
    const store = openStore(":memory:");
    const run = store.createRun({
      id: options.runId ?? "eval",
      kind: "eval",
      config,
      parentId: options.parentId,
    });
    return { store, run, directory: null };
  }
  const root = options.runsRoot ?? DEFAULT_RUNS_ROOT;
  const existing = options.resume ?? (options.runId ? join(root, options.runId) : undefined);
  // A folder a kill left before its run existed is created anew (createRunDirectory takes it over).
  if (
    existing !== undefined &&
    (options.resume !== undefined || (existsSync(existing) && !isAbandonedRunDirectory(existing)))
  ) {
    if (!isRunDirectory(existing)) throw new Error(`cannot resume ${existing}: it is not a run directory`);
    const store = openRunDirectory(existing);
    try {
      let run = directoryRun(store, existing);
      if (run.kind !== "eval")
        throw new Error(`cannot resume ${existing}: it is a ${run.kind} run, not an eval`);
      const differences = configDifferences(run.config as unknown as EvalConfig, config);
      if (differences.length > 0) {
        throw new Error(`cannot resume ${existing}: its config differs (${differences.join("; ")})`);
      }
      // No task list yet: killed right after the run was created; `evaluate` writes it.
      const storedTasks = store.getState<Task[]>(run.id, EVAL_TASKS_STATE_KEY);
      const storedIds = storedTasks?.map((task) => task.id).join("\n");
      if (storedTasks && storedIds !== tasks.map((task) => task.id).join("\n")) {
        throw new Error(`cannot resume ${existing}: its task list differs from the one asked for`);
      }
      if (run.status !== "running") run = store.reopenRun(run.id);
      return { store, run, directory: existing };
    } catch (error) {
      store.close();
      throw error;
    }
  }
  const created = createRunDirectory({
    kind: "eval",
    root,
    config,
    ...(options.runId ? { id: options.runId } : {}),
    ...(options.parentId ? { parentId: options.parentId } : {}),
  });
  return created;
}

/** Runs (or resumes) an eval and returns its counts and curves; see the file comment. */
export async function evaluate(options: EvaluateOptions): Promise<EvalResult> {
  if (!Number.isInteger(options.n) || options.n < 1)
    throw new Error(`evaluate: n must be a positive integer, got ${options.n}`);
  if (options.tools && options.toolSetup) throw new Error("evaluate: give tools or toolSetup, not both");
  if (options.verify && options.verifier) throw new Error("evaluate: give verify or verifier, not both");
  const tasks = resolveEvalTasks(options.tasks);
  const config = buildConfig(options, tasks);
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
    const progress: EvalProgress = { done: resumed, total, correct: 0, policyErrors: 0 };
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
          if (trajectory.endReason === "policy-error") progress.policyErrors++;
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

/** Counts, totals, end reasons and curves of an eval run's stored episodes (keys of `tasks` × n only). */
/**
 * Ends a finished eval's run: its summary and metrics (plus `extraMetrics`) stored, the eval files
 * written beside the run and registered, the run marked completed. Returns the eval's result.
 */
export async function completeEval(done: {
  store: Store;
  runId: string;
  directory: string | null;
  policyId: string;
  config: EvalConfig;
  tasks: readonly Task[];
  curves: CurveOptions | undefined;
  episodes: EvalResult["episodes"];
  extraMetrics?: Record<string, number>;
}): Promise<EvalResult> {
  const { store, runId, directory } = done;
  const summary = summarizeEval(store, runId, done.tasks, done.config.n, done.curves);
  const metrics = {
    ...curveMetrics(summary.curves),
    "eval/policy_errors": summary.totals.policyErrors,
    "eval/solved_fraction": summary.totals.solved / summary.totals.tasks,
    ...done.extraMetrics,
  };
  store.addMetrics(runId, 0, metrics);
  const result: EvalResult = {
    directory,
    runId,
    policyId: done.policyId,
    config: done.config,
    ...summary,
    episodes: done.episodes,
    metrics,
    files: null,
  };
  if (directory !== null) {
    result.files = await writeEvalFiles(directory, result);
    for (const path of Object.values(result.files))
      store.addArtifact(runId, { kind: "report", path: path.slice(directory.length + 1) });
  }
  store.finishRun(runId, "completed", {
    policyId: done.policyId,
    curves: result.curves,
    totals: result.totals,
    endReasons: result.endReasons,
    metrics,
  });
  return result;
}

/** Counts, totals, end reasons and pass@k curves of a finished eval's stored episodes (n per task). */
function summarizeEval(
  store: Store,
  runId: string,
  tasks: readonly Task[],
  n: number,
  curveOptions?: CurveOptions,
) {
  const wanted = new Set<string>();
  for (const task of tasks)
    for (let sample = 0; sample < n; sample++) wanted.add(episodeKey(task.id, sample));
  const endReasons: Record<string, number> = {};
  function* episodes(): Generator<Trajectory> {
    for (const stored of store.iterateTrajectories(runId)) {
      if (!wanted.has(stored.key)) continue;
      endReasons[stored.trajectory.endReason] = (endReasons[stored.trajectory.endReason] ?? 0) + 1;
      yield stored.trajectory;
    }
  }
  const counts = countByTask(episodes(), tasks);
  const short = counts.find((count) => count.n !== n);
  if (short) throw new Error(`evaluate: task ${short.taskId} has ${short.n} stored samples, expected ${n}`);
  return {
    counts,
    totals: countTotals(counts),
    endReasons,
    curves: passAtKCurves(counts, curveOptions),
  };
}
