/**
 * `agentrl verl import`: verl's generation dumps (`trainer.rollout_data_dir` or
 * `trainer.validation_data_dir`) into agentrl eval runs, so `agentrl boundary` and the report
 * compute unbiased pass@k, solvable sets and crossovers on them (verl's `best@N` is a
 * with-replacement bootstrap that reads low).
 *
 * A dump folder holds `<global_step>.jsonl`, one line per sample (verl's `_dump_generations`):
 *   { "input": decoded prompt, "output": decoded response (tool turns included), "gts": ground truth,
 *     "score": the sample's reward, "step": N, <reward_extra_info keys: acc, pred, agentrl_task_id, …> }
 * There is no uid: each prompt appears n times (`val_kwargs.n` or `rollout.n`). Samples are grouped
 * per task by, in order of preference:
 *   1. `agentrl_task_id` (written by agentrl_reward.py, the tool mode's compute_score);
 *   2. the task whose question the input contains, among `tasks` (the job's val/train parquet or a
 *      task file; the longest matching question wins, and among tasks that share it, the one whose
 *      answer is the line's ground truth);
 *   3. the input text itself (task id `verl/<hash of input>`), the same across steps and runs.
 * A sample is correct when its `acc` is positive if the line has one, else when `score` ≥
 * `threshold` (default 1: a binary outcome reward).
 *
 * A sample that failed outside the policy (`agentrl_infra` > 0, written by agentrl's agent loop)
 * is not a sample of the policy: it is left out before grouping (out of every pass@k denominator)
 * and counted as `infra`.
 *
 * Each step becomes one eval run (`<prefix>-step<N>`) whose n is the smallest number of samples a
 * task has in that step; a task's first n samples in file order are kept (the choice never looks at
 * outcomes), and the count dropped is reported.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join, relative } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { DEFAULT_BUDGETS } from "../env/run-episodes.ts";
import type { EvalFiles } from "../eval/eval-files.ts";
import { EVAL_TASKS_STATE_KEY } from "../eval/eval-run.ts";
import { completeEval } from "../eval/eval-summary.ts";
import type { EvalConfig, EvalResult } from "../eval/run-eval.ts";
import {
  createRunDirectoryStaged,
  DEFAULT_RUNS_ROOT,
  episodeKey,
  isRunDirectory,
  openRunDirectory,
} from "../store/index.ts";
import type { Task } from "../types/task.ts";
import type { Trajectory } from "../types/trajectory.ts";

/** One line of a verl dump, as read. */
export interface VerlDumpLine {
  input: string;
  output: string;
  gts: unknown;
  score: number;
  step: number;
  [key: string]: unknown;
}

/** The `<step>.jsonl` files of a dump folder (or one file), by step. */
export function dumpFiles(path: string): { step: number; path: string }[] {
  if (statSync(path).isFile()) {
    const step = Number(basename(path).replace(/\.jsonl$/, ""));
    return [{ step: Number.isInteger(step) ? step : 0, path }];
  }
  const files = readdirSync(path)
    .filter((name) => /^\d+\.jsonl$/.test(name))
    .map((name) => ({ step: Number(name.slice(0, -".jsonl".length)), path: join(path, name) }))
    .sort((a, b) => a.step - b.step);
  if (files.length === 0)
    throw new Error(
      `verl import: ${path} holds no <step>.jsonl files (a verl rollout_data_dir or validation_data_dir)`,
    );
  return files;
}

/** Lines of one dump file, checked field by field. */
export function readDumpFile(path: string): VerlDumpLine[] {
  const lines: VerlDumpLine[] = [];
  const text = readFileSync(path, "utf8");
  text.split("\n").forEach((raw, i) => {
    if (!raw.trim()) return;
    const where = `${path}:${i + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new Error(`${where}: invalid JSON: ${(error as Error).message}`);
    }
    const line = value as Record<string, unknown>;
    if (!line || typeof line !== "object") throw new Error(`${where}: a dump line must be a JSON object`);
    if (typeof line.input !== "string")
      throw new Error(`${where}: "input" must be a string (verl's decoded prompt)`);
    if (typeof line.output !== "string")
      throw new Error(`${where}: "output" must be a string (the decoded response)`);
    if (typeof line.score !== "number" || !Number.isFinite(line.score))
      throw new Error(`${where}: "score" must be a finite number`);
    lines.push(line as VerlDumpLine);
  });
  return lines;
}

function inputId(input: string): string {
  return `verl/${createHash("sha256").update(input, "utf8").digest("hex").slice(0, 16)}`;
}

/** Correctness of one sample (see the file comment). */
export function sampleCorrect(line: VerlDumpLine, threshold: number): boolean {
  const acc = line.acc;
  if (typeof acc === "number") return acc > 0;
  if (typeof acc === "boolean") return acc;
  return line.score >= threshold;
}

/** The task of a line: by `agentrl_task_id`, by question, else by input (see the file comment). */
export function taskMatcher(tasks: readonly Task[]): (line: VerlDumpLine) => Task {
  const byId = new Map(tasks.map((task) => [task.id, task]));
  const byQuestion = [...tasks]
    .filter((task) => task.question.trim() !== "")
    .sort((a, b) => b.question.length - a.question.length);
  const byInput = new Map<string, Task>();
  return (line) => {
    const id = typeof line.agentrl_task_id === "string" ? line.agentrl_task_id : "";
    const known = id ? byId.get(id) : undefined;
    if (known) return known;
    let task = byInput.get(line.input);
    if (task) return task;
    task = questionMatch(byQuestion, line);
    if (!task) {
      const answer = typeof line.gts === "string" ? line.gts : JSON.stringify(line.gts ?? null);
      task = {
        id: id || inputId(line.input),
        question: line.input,
        answer,
        family: typeof line.data_source === "string" ? line.data_source : "verl",
      };
    }
    byInput.set(line.input, task);
    return task;
  };
}

/**
 * The task whose question the input holds: the longest such question; among tasks with that same
 * question, the one whose answer is the line's ground truth. Undefined when none matches or when
 * two tasks stay indistinguishable (the caller then groups by the input text).
 */
function questionMatch(byLongestQuestion: readonly Task[], line: VerlDumpLine): Task | undefined {
  const first = byLongestQuestion.find((candidate) => line.input.includes(candidate.question.trim()));
  if (!first) return undefined;
  const same = byLongestQuestion.filter((candidate) => candidate.question.trim() === first.question.trim());
  if (same.length === 1) return first;
  const gts = typeof line.gts === "string" ? line.gts : undefined;
  const byAnswer = same.filter((candidate) => candidate.answer === gts);
  return byAnswer.length === 1 ? byAnswer[0] : undefined;
}

export interface VerlImportOptions {
  /** Dump folder or one `<step>.jsonl`. */
  path: string;
  /** Tasks to map inputs onto (the job's parquet or a task file, read by the caller). */
  tasks?: readonly Task[];
  /** Only these steps (default all). */
  steps?: readonly number[];
  /** Score at or above which a sample without `acc` is correct (default 1). */
  threshold?: number;
  runsRoot?: string;
  /** Run ids are `<prefix>-step<N>` (default `verl-<folder name>`). */
  prefix?: string;
  /** Policy label of the runs (default the prefix and step). */
  label?: string;
}

export interface VerlImportedRun {
  step: number;
  directory: string;
  runId: string;
  tasks: number;
  n: number;
  /** Samples beyond n that were not imported (tasks with more samples than the smallest group). */
  dropped: number;
  /** Samples left out because they failed outside the policy (`agentrl_infra`). */
  infra: number;
  /** True when an earlier import of the same dump file had already completed this run. */
  alreadyImported: boolean;
  result: EvalResult;
}

/** One step's dump, read, checked and grouped by task before anything is written. */
interface PreparedStep {
  file: { step: number; path: string };
  groups: Map<string, { task: Task; lines: VerlDumpLine[] }>;
  tasks: Task[];
  n: number;
  dropped: number;
  /** Samples left out because they failed outside the policy. */
  infra: number;
}

/**
 * Imports every (chosen) step of a dump folder as one eval run each, all or nothing: every file is
 * read and checked before any run is written (a bad line in any step imports no step), and each run
 * directory appears whole or not at all (createRunDirectoryStaged). Running the same import again
 * (after a kill) keeps the steps an earlier import of the same files completed and adds the rest.
 */
export async function importVerlDumps(options: VerlImportOptions): Promise<VerlImportedRun[]> {
  const threshold = options.threshold ?? 1;
  const prefix =
    options.prefix ?? `verl-${basename(options.path.replace(/\/+$/, "")).replace(/\.jsonl$/, "")}`;
  let files = dumpFiles(options.path);
  if (options.steps) {
    const wanted = new Set(options.steps);
    const missing = options.steps.filter((step) => !files.some((file) => file.step === step));
    if (missing.length > 0)
      throw new Error(
        `verl import: no dump for step ${missing.join(", ")} in ${options.path} (has ${files.map((f) => f.step).join(", ")})`,
      );
    files = files.filter((file) => wanted.has(file.step));
  }
  const match = taskMatcher(options.tasks ?? []);
  const prepared = files.map((file): PreparedStep => {
    const all = readDumpFile(file.path);
    if (all.length === 0) throw new Error(`verl import: ${file.path} is empty`);
    const lines = all.filter((line) => !(typeof line.agentrl_infra === "number" && line.agentrl_infra > 0));
    const infra = all.length - lines.length;
    if (lines.length === 0)
      throw new Error(`verl import: every sample of ${file.path} failed outside the policy (agentrl_infra)`);
    const groups = new Map<string, { task: Task; lines: VerlDumpLine[] }>();
    for (const line of lines) {
      const task = match(line);
      const group = groups.get(task.id) ?? { task, lines: [] };
      group.lines.push(line);
      groups.set(task.id, group);
    }
    const n = Math.min(...[...groups.values()].map((group) => group.lines.length));
    const tasks = [...groups.values()].map((group) => group.task);
    return { file, groups, tasks, n, dropped: lines.length - n * tasks.length, infra };
  });
  const root = options.runsRoot ?? DEFAULT_RUNS_ROOT;
  const imported: VerlImportedRun[] = [];
  for (const { file, groups, tasks, n, dropped, infra } of prepared) {
    const runId = `${prefix}-step${file.step}`;
    const label = options.label ? `${options.label} step ${file.step}` : runId;
    const config: EvalConfig & { source: Record<string, unknown> } = {
      policy: label,
      tasks: { type: "given", name: file.path, count: tasks.length },
      n,
      seed: 0,
      temperature: null,
      topP: null,
      noise: null,
      budgets: { ...DEFAULT_BUDGETS },
      verifier: null,
      toolSetup: null,
      source: { type: "verl-dump", path: file.path, step: file.step, threshold, dropped, infra },
    };
    const summary = { step: file.step, runId, tasks: tasks.length, n, dropped, infra };
    const existing = join(root, runId);
    if (existsSync(existing)) {
      const result = completedImport(existing, runId, config);
      imported.push({ ...summary, directory: existing, alreadyImported: true, result });
      continue;
    }
    const { directory, value } = await createRunDirectoryStaged(
      { kind: "eval", id: runId, config, root },
      async ({ directory: staging, store, run }) => {
        store.setState(run.id, EVAL_TASKS_STATE_KEY, tasks);
        const trajectories = [...groups.values()].flatMap((group) =>
          group.lines
            .slice(0, n)
            .map((line, sample) => dumpTrajectory(line, group.task, sample, label, threshold)),
        );
        store.addTrajectories(run.id, trajectories, { key: (trajectory) => trajectory.id });
        return completeEval({
          store,
          runId: run.id,
          directory: staging,
          policyId: label,
          config,
          tasks,
          curves: undefined,
          episodes: { resumed: 0, sampled: n * tasks.length },
        });
      },
    );
    imported.push({ ...summary, directory, alreadyImported: false, result: movedResult(value, directory) });
  }
  return imported;
}

/** An eval result whose files were written in the staging folder, with the paths of the final one. */
function movedResult(result: EvalResult, directory: string): EvalResult {
  const staging = result.directory ?? directory;
  const moved = (path: string) => join(directory, relative(staging, path));
  return {
    ...result,
    directory,
    files: result.files && {
      json: moved(result.files.json),
      svg: moved(result.files.svg),
      html: moved(result.files.html),
    },
  };
}

/**
 * The result of a run an earlier import completed, read back from its store; an error when the
 * folder holds something else (another source, or a run that is not a completed eval).
 */
function completedImport(
  directory: string,
  runId: string,
  config: EvalConfig & { source: object },
): EvalResult {
  if (!isRunDirectory(directory))
    throw new Error(`verl import: ${directory} exists and is not a run directory`);
  const store = openRunDirectory(directory);
  try {
    const run = store.getRun(runId);
    const stored = run?.config as (EvalConfig & { source?: object }) | undefined;
    if (run?.status !== "completed" || !isDeepStrictEqual(stored?.source, config.source))
      throw new Error(
        `verl import: ${directory} already holds ${run ? `a ${run.status} run "${runId}"` : "other runs"} that is not this dump's import; choose another --out or --prefix`,
      );
    const summary = run.summary as Pick<
      EvalResult,
      "policyId" | "curves" | "totals" | "endReasons" | "metrics"
    >;
    const files = readEvalFiles(directory);
    return {
      directory,
      runId,
      policyId: summary.policyId,
      config: run.config as unknown as EvalConfig,
      counts: JSON.parse(readFileSync(files.json, "utf8")).counts,
      curves: summary.curves,
      totals: summary.totals,
      endReasons: summary.endReasons,
      episodes: { resumed: store.countTrajectories(runId), sampled: 0 },
      metrics: summary.metrics,
      files,
    };
  } finally {
    store.close();
  }
}

function readEvalFiles(directory: string): EvalFiles {
  return {
    json: join(directory, "passk.json"),
    svg: join(directory, "passk.svg"),
    html: join(directory, "passk.html"),
  };
}

/** A dump line as a one-turn trajectory (text only: verl's dumps keep no token ids). */
function dumpTrajectory(
  line: VerlDumpLine,
  task: Task,
  sample: number,
  policyId: string,
  threshold: number,
): Trajectory {
  const { input, output, gts, score, step, ...extra } = line;
  const correct = sampleCorrect(line, threshold);
  return {
    id: episodeKey(task.id, sample),
    taskId: task.id,
    family: task.family,
    policyId,
    seed: sample,
    prompt: { text: input, tokenIds: [] },
    turns: [
      {
        index: 0,
        text: output,
        tokenIds: [],
        logprobs: null,
        action: { type: "answer", answer: output },
        rewards: {},
      },
    ],
    finalAnswer: output,
    correct,
    outcomeReward: score,
    endReason: "answer",
    info: { verl: { step, gts: gts ?? null, ...extra } },
  };
}
