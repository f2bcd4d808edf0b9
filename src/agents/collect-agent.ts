/**
 * `agentrl data collect --agent <module>`: a user's agent's real episodes, through the recording
 * gateway in front of `--policy`, kept by rejection sampling into a dataset that `data stats`,
 * `filter`, `select` and `export` read like any collected one. It is `collectDataset`
 * (src/data/collect.ts) with the agent in place of the episode loop: the same tasks (train worlds,
 * template shares), episode seeds and ids (`<task>#<sample>`), filter, per-task quota, chunked
 * storage (a crash loses at most one chunk), provenance and counts, and the resume: run again with
 * the same `out` and settings, it continues after the last committed chunk (an episode in flight at
 * the kill runs again under a fresh gateway episode id; its earlier calls stay in the state under
 * the old id, referenced by no trajectory). What differs: the agent runs its
 * own tools, so no tool noise is injected (`noise: 0`); the trajectories are gateway trajectories
 * (exact token ids when the upstream returns them), with every call kept in the run's state under
 * `gateway/calls/<episode>/<seq>`; and the episodes run `concurrency` at a time, each under a
 * timeout, rerun when an upstream call failed (as `eval --agent`).
 */
import { hashString, mixSeeds } from "../core/random.ts";
import {
  COLLECT_PROGRESS_STATE_KEY,
  type CollectCounts,
  type CollectDatasetResult,
  type CollectOptions,
  type CollectProgress,
  emptyCollectCounts,
  keepPassing,
  openCollection,
  sampleQuota,
} from "../data/collect.ts";
import { formatFilter, parseFilter } from "../data/filter.ts";
import { type DatasetTaskOptions, datasetTasks } from "../data/tasks.ts";
import type { ResolveUpstreamOptions } from "../gateway/resolve-upstream.ts";
import { finishRunAfterError } from "../store/run-failure.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { checkAnswer } from "../world/index.ts";
import { type AgentEpisodeItem, type AgentRunner, openAgentRunner } from "./agent-runner.ts";
import { type AgentSourceOptions, agentSourceName, agentSourceOf } from "./agent-source.ts";
import { AGENT_EVAL_DEFAULTS } from "./evaluate-agent.ts";

export interface CollectAgentDatasetOptions extends AgentSourceOptions {
  /** The model behind the gateway: checkpoint, scripted name or `openai:<url>#<model>`. */
  policy: string;
  temperature?: number;
  topP?: number;
  /** Tokens per call when the agent sends no max_tokens (in-process upstream; default 32). */
  maxTurnTokens?: number;
  upstream?: Omit<ResolveUpstreamOptions, "temperature" | "topP" | "maxTokens">;
  /** Which tasks (train worlds unless `split` says otherwise). */
  tasks: DatasetTaskOptions;
  seed: number;
  /** Filter spec (`correct`, `correct,no-format-error`, `all`…; default `correct`). */
  filter?: string;
  samplesPerTask?: number;
  maxKeptPerTask?: number;
  /** Episodes running at once (default 8). */
  concurrency?: number;
  /** Milliseconds an episode may run (default 120 000). */
  timeoutMs?: number;
  /** Reruns of an episode that failed because an upstream call did (default 1). */
  retries?: number;
  /** Tasks per chunk (default 256). */
  chunkTasks?: number;
  /**
   * Dataset directory (`runs/<id>`); default a new `<runsRoot>/dataset-<date>`. An existing one
   * that an interrupted collection with the same settings left is continued.
   */
  out?: string;
  runsRoot?: string;
  parentId?: string;
  onProgress?: CollectOptions["onProgress"];
  signal?: AbortSignal;
}

export interface CollectAgentDatasetResult extends CollectDatasetResult {
  /** Gateway totals over every episode run (kept or not) of the committed chunks. */
  gateway: GatewayTotals;
}

/** A type, not an interface: `printCollect` reads it as a record of numbers. */
type GatewayTotals = {
  calls: number;
  failedCalls: number;
  prefixBreaks: number;
};

/** The progress committed with each chunk: `collectDataset`'s, with the gateway totals so far. */
interface AgentCollectProgress extends CollectProgress {
  gateway: GatewayTotals;
}

export async function collectAgentDataset(
  options: CollectAgentDatasetOptions,
): Promise<CollectAgentDatasetResult> {
  const filter = parseFilter(options.filter ?? "correct");
  const { samples, maxKept } = sampleQuota(options);
  const timeoutMs = options.timeoutMs ?? AGENT_EVAL_DEFAULTS.timeoutMs;
  const maxTurnTokens = options.maxTurnTokens ?? AGENT_EVAL_DEFAULTS.maxTurnTokens;
  const tasks = datasetTasks(options.tasks);
  const agentSource = agentSourceOf(options);
  const agentName =
    agentSource.kind === "function" ? String(options.agentPath) : agentSourceName(agentSource);
  const policyName = `agent:${agentName}@${options.policy}`;
  const provenance = {
    policy: policyName,
    policyId: policyName,
    agent: {
      module: agentName,
      ...(agentSource.kind === "command" ? { command: agentSource.command } : {}),
      policy: options.policy,
      timeoutMs,
    },
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    ...(options.topP !== undefined ? { topP: options.topP } : {}),
    // The agent calls its own tools: the gateway injects no tool noise.
    noise: 0,
    seed: options.seed,
    filter: formatFilter(filter),
    tasks: { split: "train", ...options.tasks },
    samplesPerTask: samples,
    maxKeptPerTask: maxKept,
    budgets: { maxTurnTokens },
  };
  const { directory, store, run } = openCollection({
    out: options.out,
    runsRoot: options.runsRoot,
    config: provenance,
    parentId: options.parentId,
  });
  const result = (counts: CollectCounts, gateway: GatewayTotals): CollectAgentDatasetResult => ({
    directory,
    runId: run.id,
    provenance: { source: "collect", ...provenance },
    ...counts,
    gateway,
  });
  if (run.status === "completed") {
    store.close();
    const { gateway, ...counts } = run.summary as unknown as CollectCounts & { gateway: GatewayTotals };
    return result(counts, gateway);
  }
  const done = store.getState<AgentCollectProgress>(run.id, COLLECT_PROGRESS_STATE_KEY);
  const counts: CollectCounts = structuredClone(done?.counts ?? emptyCollectCounts(tasks.length));
  const before: GatewayTotals = done?.gateway ?? { calls: 0, failedCalls: 0, prefixBreaks: 0 };
  let prefixBreaks = 0;
  let runner: AgentRunner | null = null;
  // This process's gateway counts added to those of the chunks committed before a resume.
  const gatewayTotals = (): GatewayTotals => ({
    calls: before.calls + (runner?.gateway.stats.calls ?? 0),
    failedCalls: before.failedCalls + (runner?.gateway.stats.failedCalls ?? 0),
    prefixBreaks: before.prefixBreaks + prefixBreaks,
  });
  try {
    runner = await openAgentRunner({
      agent: agentSource,
      policy: options.policy,
      policyId: policyName,
      ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
      ...(options.topP !== undefined ? { topP: options.topP } : {}),
      maxTurnTokens,
      ...(options.upstream ? { upstream: options.upstream } : {}),
      verify: checkAnswer,
      timeoutMs,
      retries: Math.max(0, options.retries ?? AGENT_EVAL_DEFAULTS.retries),
      concurrency: Math.max(1, options.concurrency ?? AGENT_EVAL_DEFAULTS.concurrency),
      record: { store, runId: run.id },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const total = tasks.length * samples;
    const chunk = Math.max(1, options.chunkTasks ?? 256);
    for (let start = done?.tasksDone ?? 0; start < tasks.length; start += chunk) {
      const chunkTasks = tasks.slice(start, start + chunk);
      const items: AgentEpisodeItem[] = chunkTasks.flatMap((task) =>
        Array.from({ length: samples }, (_, sample) => ({
          task,
          seed: mixSeeds(mixSeeds(options.seed, hashString(task.id)), sample),
          key: `${task.id}#${sample}`,
        })),
      );
      const bySample = chunkTasks.map(() => new Array<Trajectory>(samples));
      const position = new Map(items.map((item, i) => [item, i]));
      await runner.run(items, (item, episode) => {
        const index = position.get(item)!;
        bySample[Math.floor(index / samples)][index % samples] = {
          ...episode.trajectory,
          info: { ...episode.trajectory.info, source: "collect", noise: 0 },
        };
        prefixBreaks += episode.prefixBreaks;
        counts.episodes++;
        options.onProgress?.({ episodes: counts.episodes, total, kept: counts.kept });
      });
      if (options.signal?.aborted) throw new Error("collect: stopped");
      // An episode the agent's code or the infrastructure failed is not the model's sample: never data.
      const samplesOfModel = bySample.map((samplesOfTask) =>
        samplesOfTask.filter((trajectory) => {
          const failed = trajectory.failure?.class;
          if (failed !== "agent" && failed !== "infra") return true;
          counts.rejected++;
          counts.rejections[`${failed}-failure`] = (counts.rejections[`${failed}-failure`] ?? 0) + 1;
          return false;
        }),
      );
      const kept = keepPassing(samplesOfModel, filter, maxKept, counts);
      // The chunk's kept episodes and the progress after it, together: a kill keeps both or neither.
      const progress: AgentCollectProgress = {
        tasksDone: Math.min(tasks.length, start + chunk),
        counts,
        gateway: gatewayTotals(),
      };
      store.transaction(() => {
        store.addTrajectories(run.id, kept);
        store.setState(run.id, COLLECT_PROGRESS_STATE_KEY, progress);
      });
      options.onProgress?.({ episodes: counts.episodes, total, kept: counts.kept });
    }
    const gateway = gatewayTotals();
    store.finishRun(run.id, "completed", { ...counts, gateway });
    return result(counts, gateway);
  } catch (error) {
    finishRunAfterError(store, run.id, error, options.signal);
    throw error;
  } finally {
    await runner?.close();
    store.close();
  }
}
