/**
 * Cached, resumable pipeline stages. A stage has a name, the stages it reads, the slice of config
 * it depends on and a rough cost; its key is the SHA-256 of (name, config slice, the keys of its
 * dependencies), so changing one stage's config redoes that stage and everything downstream, and
 * nothing else. Each stage works in `<root>/stages/<name>/` and ends by writing `stage.json`
 * (`status: "completed"`, its key, its JSON result):
 *
 *   - completed with the same key      → the stored result is used, nothing runs;
 *   - started with the same key        → the stage runs again in its folder, and the trainers and
 *     evals inside resume from what they stored (checkpoints, episodes), so a crash loses at most
 *     the step in flight;
 *   - any other key (the config changed) → the folder is deleted and the stage runs from scratch.
 *
 * Paths under the root in a stored result are written relative to it (`<root>/stages/…`) and read
 * back under the root the pipeline runs with, so a folder moved, or run from another working
 * directory, keeps its cache and its report.
 *
 * Progress: the plan's total cost is the sum of the costs of the stages that will run; each stage
 * reports its own fraction done, so one bar with one ETA covers the whole pipeline.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join, normalize, sep } from "node:path";

export interface StageContext {
  /** The stage's own folder (created). */
  dir: string;
  /** Reports the fraction of the stage done, in [0, 1], with a short status line. */
  progress(fraction: number, info?: string): void;
  signal?: AbortSignal;
  /** Threads this stage should use (the cores divided among the stages running with it). */
  threads?: number;
}

/** Results of the stages run so far, by stage name. */
export type StageResults = Record<string, unknown>;

export interface StageSpec {
  name: string;
  /** Stages whose results this one reads (they come earlier in the plan). */
  after: readonly string[];
  /** Everything of the config this stage depends on (hashed into its key). */
  config: unknown;
  /** Estimated cost (seconds on the reference machine; only the shares matter), for the ETA. */
  cost: number;
  run(context: StageContext, results: StageResults): Promise<unknown>;
}

interface StageFile {
  name: string;
  key: string;
  status: "running" | "completed";
  startedAt: string;
  finishedAt?: string;
  seconds?: number;
  result?: unknown;
}

export interface StageOutcome {
  name: string;
  key: string;
  cached: boolean;
  seconds: number;
}

export interface RunStagesOptions {
  root: string;
  /** Hashed into every key: bump it when what a stage computes changes without its config changing. */
  version?: number;
  /** Called when a stage starts and as it progresses: overall fraction of the work left at the start. */
  onProgress?: (update: { stage: string; done: number; total: number; info?: string }) => void;
  onStage?: (outcome: StageOutcome & { event: "start" | "end" }) => void;
  signal?: AbortSignal;
  /**
   * Stages run at once (default 1): a stage starts as soon as the stages it reads are done, in plan
   * order, while fewer than this many run. Each is told its share of `cores` (default: `parallel`).
   */
  parallel?: number;
  cores?: number;
  /** Runs one stage's work (default: `stage.run` in this process; recipe.ts uses child processes). */
  execute?: (stage: StageSpec, context: StageContext, results: StageResults) => Promise<unknown>;
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** The cache key of a stage: its name, its config slice and its dependencies' keys. */
export function stageKey(name: string, config: unknown, dependencyKeys: readonly string[]): string {
  return createHash("sha256")
    .update(stableJson({ name, config, after: dependencyKeys }))
    .digest("hex")
    .slice(0, 16);
}

/** How a stored result spells the pipeline's root. */
const ROOT_MARK = "<root>";

/** `value` with every string naming `from` or a path under it rewritten to start with `to` instead. */
function withRoot(value: unknown, from: string, to: string): unknown {
  if (typeof value === "string") {
    if (value === from) return to;
    return value.startsWith(from + sep) ? to + value.slice(from.length) : value;
  }
  if (Array.isArray(value)) return value.map((item) => withRoot(item, from, to));
  if (value !== null && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withRoot(v, from, to)]));
  return value;
}

/** The root as the stages' paths spell it (`join` normalises them). */
const rootPrefix = (root: string) => normalize(root).replace(/[\\/]+$/, "") || ".";

function readStageFile(root: string, name: string): StageFile | null {
  const path = join(stageDir(root, name), "stage.json");
  if (!existsSync(path)) return null;
  let file: StageFile;
  try {
    file = JSON.parse(readFileSync(path, "utf8")) as StageFile;
  } catch {
    return null; // a torn write: treated as a stage that never finished
  }
  return { ...file, result: withRoot(file.result, ROOT_MARK, rootPrefix(root)) };
}

/** The stored result of a completed stage of the pipeline under `root`, or null. */
export function completedStageResult<T>(root: string, name: string): T | null {
  const file = readStageFile(root, name);
  return file?.status === "completed" ? (file.result as T) : null;
}

const stageDir = (root: string, name: string) => join(root, "stages", name);

function writeStageFile(root: string, file: StageFile): void {
  const path = join(stageDir(root, file.name), "stage.json");
  const stored = { ...file, result: withRoot(file.result, rootPrefix(root), ROOT_MARK) };
  writeFileSync(`${path}.tmp`, `${JSON.stringify(stored, null, 2)}\n`);
  renameSync(`${path}.tmp`, path); // atomic: a crash leaves the old file or the new one, never half of one
}

/**
 * Runs the stages in order (each after its dependencies), reusing completed ones whose key has not
 * changed. Returns every stage's result and what ran.
 */
export async function runStages(
  stages: readonly StageSpec[],
  options: RunStagesOptions,
): Promise<{ results: StageResults; outcomes: StageOutcome[] }> {
  const keys = new Map<string, string>();
  const names = new Set<string>();
  for (const stage of stages) {
    if (names.has(stage.name)) throw new Error(`recipe: stage "${stage.name}" is defined twice`);
    for (const dependency of stage.after) {
      if (!names.has(dependency))
        throw new Error(`recipe: stage "${stage.name}" needs "${dependency}", which does not come before it`);
    }
    names.add(stage.name);
    keys.set(
      stage.name,
      stageKey(
        stage.name,
        { version: options.version ?? 0, config: stage.config },
        stage.after.map((dependency) => keys.get(dependency)!),
      ),
    );
  }
  const dirOf = (name: string) => stageDir(options.root, name);
  const stored = new Map(stages.map((stage) => [stage.name, readStageFile(options.root, stage.name)]));
  const isCached = (name: string) => {
    const file = stored.get(name);
    return file?.status === "completed" && file.key === keys.get(name);
  };
  const total = stages.filter((stage) => !isCached(stage.name)).reduce((sum, stage) => sum + stage.cost, 0);
  const results: StageResults = {};
  const outcomes: StageOutcome[] = [];
  const parallel = Math.max(1, options.parallel ?? 1);
  // Work finished (cost units), and the running stages' own progress (fraction × cost).
  let done = 0;
  const partial = new Map<string, number>();
  const report = (stage: string, info?: string) =>
    options.onProgress?.({
      stage,
      done: done + [...partial.values()].reduce((a, b) => a + b, 0),
      total,
      info,
    });
  // One failure stops the others (their trainers checkpoint on abort) before it is thrown.
  const stop = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;

  const runOne = async (stage: StageSpec, threads: number) => {
    const key = keys.get(stage.name)!;
    const dir = dirOf(stage.name);
    const existing = stored.get(stage.name) ?? null;
    if (existing && existing.key !== key) rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const startedAt = new Date().toISOString();
    writeStageFile(options.root, { name: stage.name, key, status: "running", startedAt });
    options.onStage?.({ name: stage.name, key, cached: false, seconds: 0, event: "start" });
    const started = performance.now();
    const context: StageContext = {
      dir,
      signal,
      threads,
      progress: (fraction, info) => {
        partial.set(stage.name, stage.cost * Math.min(1, Math.max(0, fraction)));
        report(stage.name, info);
      },
    };
    context.progress(0);
    const result = await (options.execute
      ? options.execute(stage, context, results)
      : stage.run(context, results));
    const seconds = (performance.now() - started) / 1000;
    writeStageFile(options.root, {
      name: stage.name,
      key,
      status: "completed",
      startedAt,
      finishedAt: new Date().toISOString(),
      seconds,
      result,
    });
    results[stage.name] = result;
    partial.delete(stage.name);
    done += stage.cost;
    report(stage.name);
    const outcome = { name: stage.name, key, cached: false, seconds };
    outcomes.push(outcome);
    options.onStage?.({ ...outcome, event: "end" });
  };

  // Stages start in plan order as soon as the stages they read are done, up to `parallel` at once.
  const waiting = [...stages];
  const running = new Map<string, Promise<void>>();
  let failure: unknown = null;
  while (waiting.length > 0 || running.size > 0) {
    options.signal?.throwIfAborted();
    const ready = failure
      ? []
      : waiting.filter((stage) => stage.after.every((dependency) => dependency in results));
    for (const stage of ready) {
      const existing = stored.get(stage.name);
      if (existing && isCached(stage.name)) {
        waiting.splice(waiting.indexOf(stage), 1);
        results[stage.name] = existing.result;
        const outcome = {
          name: stage.name,
          key: keys.get(stage.name)!,
          cached: true,
          seconds: existing.seconds ?? 0,
        };
        outcomes.push(outcome);
        options.onStage?.({ ...outcome, event: "end" });
      }
    }
    const startable = ready.filter((stage) => !(stage.name in results)).slice(0, parallel - running.size);
    // The cores are shared among the stages running at once.
    const threads = Math.max(1, Math.floor((options.cores ?? parallel) / (running.size + startable.length)));
    for (const stage of startable) {
      waiting.splice(waiting.indexOf(stage), 1);
      const run = runOne(stage, threads).then(
        () => {
          running.delete(stage.name);
        },
        (error: unknown) => {
          running.delete(stage.name);
          if (!failure) failure = error;
          stop.abort();
        },
      );
      running.set(stage.name, run);
    }
    if (running.size === 0) {
      if (failure) break;
      if (waiting.some((stage) => !(stage.name in results))) {
        // Newly cached results may have unblocked stages: look again before giving up.
        if (ready.length > 0) continue;
        throw new Error(`recipe: stages ${waiting.map((s) => s.name).join(", ")} cannot start`);
      }
      break;
    }
    await Promise.race(running.values());
  }
  if (failure) throw failure;
  // Outcomes in plan order, whatever order the stages finished in.
  const order = new Map(stages.map((stage, index) => [stage.name, index]));
  outcomes.sort((a, b) => order.get(a.name)! - order.get(b.name)!);
  return { results, outcomes };
}
