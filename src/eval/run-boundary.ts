/**
 * `runBoundary`: loads eval runs, compares them on their shared tasks (`analyzeBoundary`), scores
 * each run's correct trajectories under every model that has a scorer (perplexity, policy tokens
 * only), and writes `boundary.json`, `boundary-passk.svg` and a self-contained `boundary.html`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Trajectory } from "../types/trajectory.ts";
import { analyzeBoundary, type BoundaryAnalysis, type BoundaryOptions } from "./boundary.ts";
import { renderBoundaryPage } from "./boundary-page.ts";
import { evalRunModelSpec } from "./embedded-scorer.ts";
import {
  type EvalRunData,
  firstCorrectTrajectories,
  loadEvalRun,
  readCorrectTrajectories,
  uniqueLabels,
} from "./eval-run-data.ts";
import { passAtKChart } from "./passk-chart.ts";
import { type PerplexityResult, perplexityUnder, type TokenScorer } from "./perplexity.ts";

export interface RunBoundaryOptions {
  /** Eval run directories, at least two. */
  directories: readonly string[];
  /** Folder for the files (created); null writes nothing. */
  out: string | null;
  curves?: BoundaryOptions;
  /** The scorer of a run's model, or null when it cannot be scored (perplexity is skipped for it). */
  scorerFor?: (run: EvalRunData) => Promise<TokenScorer | null>;
  /** Correct trajectories scored per run (default 256, a seeded choice). */
  perplexityTrajectories?: number;
  /** Example solutions shown per "solved by one model only" list (default 3). */
  examples?: number;
  seed?: number;
}

export interface BoundaryRunInfo {
  label: string;
  directory: string;
  runId: string;
  status: string;
  policy: string;
  policyId: string | null;
  n: number;
  tasks: number;
  config: EvalRunData["config"];
}

export interface PerplexityEntry {
  /** Whose correct trajectories. */
  trajectoriesOf: string;
  /** Under which run's model. */
  scoredBy: string;
  result: PerplexityResult;
}

export interface BoundaryResult {
  runs: BoundaryRunInfo[];
  analysis: BoundaryAnalysis;
  perplexity: PerplexityEntry[];
  /** Why some perplexities are missing (a run without a scorable model). */
  perplexityNotes: string[];
  files: { html: string; json: string; svg: string } | null;
}

/** An example solution shown in the page: a task solved by one run only, with one correct trajectory. */
export interface BoundaryExample {
  pair: string;
  solvedBy: string;
  taskId: string;
  question: string;
  trajectory: Trajectory;
}

export async function runBoundary(options: RunBoundaryOptions): Promise<BoundaryResult> {
  if (options.directories.length < 2) {
    throw new Error(`boundary: give at least two eval run directories, got ${options.directories.length}`);
  }
  const loaded = options.directories.map(loadEvalRun);
  const labels = uniqueLabels(loaded);
  loaded.forEach((run, i) => {
    run.label = labels[i];
  });
  const analysis = analyzeBoundary(
    loaded.map((run) => ({ label: run.label, counts: run.counts })),
    options.curves,
  );
  for (const run of loaded) {
    if (run.status !== "completed") {
      analysis.warnings.push(`${run.label}: the eval run is ${run.status}; its counts are partial`);
    }
  }
  const shared = new Set(analysis.tasks);
  const { perplexity, notes } = await scorePerplexities(loaded, shared, options);
  const runs: BoundaryRunInfo[] = loaded.map((run) => ({
    label: run.label,
    directory: run.directory,
    runId: run.runId,
    status: run.status,
    policy: run.config.policy,
    policyId: run.policyId,
    n: run.config.n,
    tasks: run.tasks.length,
    config: run.config,
  }));
  const result: BoundaryResult = { runs, analysis, perplexity, perplexityNotes: notes, files: null };
  if (options.out !== null) {
    result.files = await writeBoundaryFiles(options.out, result, collectExamples(loaded, analysis, options));
  }
  return result;
}

async function scorePerplexities(
  runs: readonly EvalRunData[],
  shared: ReadonlySet<string>,
  options: RunBoundaryOptions,
): Promise<{ perplexity: PerplexityEntry[]; notes: string[] }> {
  const perplexity: PerplexityEntry[] = [];
  const notes: string[] = [];
  if (!options.scorerFor) {
    notes.push("perplexity not computed: no scorer was given");
    return { perplexity, notes };
  }
  const limit = options.perplexityTrajectories ?? 256;
  const samples = runs.map((run) => readCorrectTrajectories(run.directory, shared, limit, options.seed ?? 0));
  for (const scoringRun of runs) {
    const scorer = await options.scorerFor(scoringRun);
    if (!scorer) {
      notes.push(
        `${scoringRun.label}: no scoring model (policy "${evalRunModelSpec(scoringRun.config)}" is not a checkpoint)`,
      );
      continue;
    }
    try {
      for (let i = 0; i < runs.length; i++) {
        perplexity.push({
          trajectoriesOf: runs[i].label,
          scoredBy: scoringRun.label,
          result: await perplexityUnder(samples[i], scorer, { storedTokenizer: runs[i].tokenizer }),
        });
      }
    } finally {
      await scorer.close?.();
    }
  }
  return { perplexity, notes };
}

function collectExamples(
  runs: readonly EvalRunData[],
  analysis: BoundaryAnalysis,
  options: RunBoundaryOptions,
): BoundaryExample[] {
  const perList = options.examples ?? 3;
  if (perList <= 0) return [];
  const byLabel = new Map(runs.map((run) => [run.label, run]));
  const examples: BoundaryExample[] = [];
  for (const pair of analysis.pairs) {
    for (const [solvedBy, ids] of [
      [pair.a, pair.solvable.onlyA],
      [pair.b, pair.solvable.onlyB],
    ] as const) {
      const run = byLabel.get(solvedBy)!;
      const picked = ids.slice(0, perList);
      const found = firstCorrectTrajectories(run.directory, picked);
      for (const taskId of picked) {
        const trajectory = found.get(taskId);
        if (!trajectory) continue;
        const task = run.tasks.find((candidate) => candidate.id === taskId);
        examples.push({
          pair: `${pair.a} vs ${pair.b}`,
          solvedBy,
          taskId,
          question: task?.question ?? "",
          trajectory,
        });
      }
    }
  }
  return examples;
}

/** The JSON document of a boundary comparison (per-trajectory perplexities left out). */
export function boundaryJson(result: Omit<BoundaryResult, "files">) {
  const { runs, ...analysis } = result.analysis;
  return {
    ...analysis,
    runs: result.runs.map((info, i) => ({ ...info, ...runs[i] })),
    perplexity: result.perplexity.map((entry) => {
      const { perTrajectory: _, ...summary } = entry.result;
      return { trajectoriesOf: entry.trajectoriesOf, scoredBy: entry.scoredBy, ...summary };
    }),
    perplexityNotes: result.perplexityNotes,
  };
}

async function writeBoundaryFiles(
  out: string,
  result: BoundaryResult,
  examples: readonly BoundaryExample[],
): Promise<{ html: string; json: string; svg: string }> {
  mkdirSync(out, { recursive: true });
  const files = {
    html: join(out, "boundary.html"),
    json: join(out, "boundary.json"),
    svg: join(out, "boundary-passk.svg"),
  };
  const svg = await passAtKChart(
    result.analysis.runs.map((run) => ({ name: run.label, curve: run.curves.overall })),
    `pass@k on ${result.analysis.tasks.length} shared tasks`,
  );
  writeFileSync(files.json, `${JSON.stringify(boundaryJson(result), null, 2)}\n`);
  writeFileSync(files.svg, svg);
  writeFileSync(files.html, await renderBoundaryPage(result, svg, examples));
  return files;
}
