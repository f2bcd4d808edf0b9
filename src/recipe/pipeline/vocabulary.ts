/**
 * What the recipe's stages are called and what they return, and the test tasks they evaluate on:
 * the plan (pipeline.ts) builds stages under these names and the report (report.ts,
 * experiments/) reads their results by them.
 */
import { datasetTasks } from "../../data/tasks.ts";
import { CORPUS_MIXES } from "../../pretrain/corpus.ts";
import type { Task } from "../../types/task.ts";
import type { RecipeConfig } from "../config.ts";
import type { StageResults } from "../stages.ts";

/** The template the shipped bases' pretraining corpus withheld: pass@k = 0 there before SFT. */
export const WITHHELD_TEMPLATE = CORPUS_MIXES.strong.withheldTemplates[0];

/** The test tasks every main-line checkpoint is evaluated on (deterministic in the config). */
export function recipeEvalTasks(config: RecipeConfig): Task[] {
  const seed = config.eval.taskSeed;
  const tasks = datasetTasks({
    count: config.eval.tasks,
    seed,
    split: "test",
    excludeTemplates: [WITHHELD_TEMPLATE],
  });
  if (config.eval.withheldTasks === 0) return tasks;
  return tasks.concat(
    datasetTasks({
      count: config.eval.withheldTasks,
      seed: seed + 1,
      split: "test",
      template: WITHHELD_TEMPLATE,
    }),
  );
}

/**
 * The noise the noise runs are judged at (whether each learned, noise-aware against naive): the one
 * they trained under, or the highest evaluated rate when that one is not among the rates.
 */
export function noiseJudgedRate(noise: RecipeConfig["noise"]): number {
  return noise.rates.includes(noise.trainRate) ? noise.trainRate : Math.max(...noise.rates);
}

/** Samples per task of the noise evaluation at `rate`. */
export function noiseEvalN(noise: RecipeConfig["noise"], rate: number): number {
  return rate === noiseJudgedRate(noise) ? noise.evalN : noise.curveN;
}

/** Test tasks of the noise experiment (all families, withheld template left out). */
export function noiseEvalTasks(config: RecipeConfig): Task[] {
  return datasetTasks({
    count: config.noise.evalTasks,
    seed: config.eval.taskSeed + 2,
    split: "test",
    excludeTemplates: [WITHHELD_TEMPLATE],
  });
}

/** Test tasks of the credit experiment's verdicts: the family's own, the same for every estimator. */
export function creditTestTasks(config: RecipeConfig): Task[] {
  return datasetTasks({
    count: config.credit.testTasks,
    seed: config.eval.taskSeed + 3,
    split: "test",
    family: config.credit.family,
  });
}

export interface SelectStageResult {
  directory: string;
  taskIds: string[];
  candidates: number;
  /** Zero-variance groups among the candidates, and among the selected tasks on m fresh rollouts. */
  zeroVarianceBefore: number;
  zeroVarianceAfter: number | null;
  dropped: { unsolved: number; alwaysSolved: number };
}

export interface DataStageResult {
  directory: string;
  trajectories: number;
  provenance: Record<string, unknown>;
  /**
   * Every dataset of the stage (SFT trains on all of them): real data holds the expert's and, with
   * `data.modelSamples`, the strong base's own kept rollouts. Absent in older results: `[directory]`.
   */
  directories?: string[];
  /** Trajectories kept per source (real data). */
  sources?: { name: string; directory: string; trajectories: number; episodes: number }[];
}

export interface BoundaryStageResult {
  directory: string;
  labels: string[];
  perplexity: {
    trajectoriesOf: string;
    scoredBy: string;
    perplexity: number | null;
    tokens: number;
    scored: number;
  }[];
  solvable: { a: string; b: string; onlyA: number; onlyB: number; both: number; neither: number }[];
  notes: string[];
}

/** Main-line model names: the start of each RL run and its RL result. */
export const MAIN_STARTS = ["base", "sft-real", "sft-stitched", "weak"] as const;
export type MainStart = (typeof MAIN_STARTS)[number];

export function creditStageName(estimator: string): string {
  return `credit-${estimator}`;
}
/** The credit experiment's final evaluation of one model ("base" or an estimator) on its test tasks. */
export function creditEvalStageName(model: string): string {
  return `credit-eval-${model}`;
}
export function noiseRlStageName(variant: "naive" | "aware"): string {
  return `noise-rl-${variant}`;
}
/** The noise experiment's evaluations of one model: one eval per rate, keyed by the rate. */
export function noiseEvalStageName(model: string): string {
  return `noise-eval-${model}`;
}
/** The credit runs' task pool (`credit.select`), shared by every estimator and seed. */
export const CREDIT_SELECT_STAGE = "credit-select";
/** The noise runs' task pool (`noise.select`), shared by both runs and every seed. */
export const NOISE_SELECT_STAGE = "noise-select";
/** The credit-fidelity sample (one per training seed: `replicaStage(FIDELITY_STAGE, r)`). */
export const FIDELITY_STAGE = "credit-fidelity";

/** A stage result by name (the plan guarantees it ran before the stages that read it). */
export function resultOf<T>(results: StageResults, name: string): T {
  if (!(name in results)) throw new Error(`recipe: no result for stage "${name}"`);
  return results[name] as T;
}

/** Every dataset directory of a data stage's result. */
export function dataDirectories(result: DataStageResult): string[] {
  return result.directories ?? [result.directory];
}

/**
 * The stage of `name` at training seed index r (seed config.seed + r): the first seed keeps the
 * plain name (a single-seed run's stages and caches as before), later ones get `@s<r + 1>`.
 */
export function replicaStage(name: string, r: number): string {
  return r === 0 ? name : `${name}@s${r + 1}`;
}

/** The training seeds of a config, in order. */
export function trainingSeeds(config: RecipeConfig): number[] {
  return Array.from({ length: config.seeds }, (_, r) => config.seed + r);
}
