/**
 * Model-aware task pools (`agentrl data select` as a stage): the main line's RL pool (`select`) and
 * the credit and noise runs' (`credit.select`, `noise.select`), each measured once by a model and
 * shared by every run and seed that trains on it.
 */
import { join } from "node:path";
import { mixSeeds } from "../../core/random.ts";
import { DEFAULT_MIX } from "../../data/select.ts";
import { selectDataset } from "../../data/select-dataset.ts";
import type { DatasetTaskOptions } from "../../data/tasks.ts";
import type { RecipeConfig } from "../config.ts";
import type { StageResults, StageSpec } from "../stages.ts";
import { STAGE_SECONDS } from "./costs.ts";
import { ensureFresh } from "./plan.ts";
import { CREDIT_SELECT_STAGE, NOISE_SELECT_STAGE, resultOf, type SelectStageResult } from "./vocabulary.ts";

/** What a task pool is drawn from and how a model measures it (`poolStage`). */
export interface PoolSpec {
  name: string;
  /** The config field the pool's size comes from, named when the selection keeps nothing. */
  field: string;
  select: RecipeConfig["select"];
  /** The stage's cache key config (default: everything below that decides what is measured). */
  config?: Record<string, unknown>;
  /** The model whose samples decide the pool. */
  base: string;
  /** The candidates (train split), less their count (`select.tasks`). */
  candidates: Omit<DatasetTaskOptions, "count">;
  seed: number;
  temperature: number;
  noise: number;
  /** Default: the fresh re-check of the zero-variance groups among the kept tasks. */
  recheck?: boolean;
}

/** A model-aware task pool (`agentrl data select`): candidates the model solves sometimes, 0 < pass < 1. */
export function poolStage(spec: PoolSpec): StageSpec {
  const { select } = spec;
  const rechecks = spec.recheck ?? true;
  return {
    name: spec.name,
    after: [],
    config: spec.config ?? {
      select,
      base: spec.base,
      candidates: spec.candidates,
      seed: spec.seed,
      temperature: spec.temperature,
      noise: spec.noise,
      recheck: rechecks,
    },
    // the re-check measures the selection again: about a third of the candidates at these sizes
    cost: STAGE_SECONDS.select(select.tasks * select.m * (rechecks ? 1 : 0.75)),
    async run(context) {
      let measured = 0;
      const total = select.tasks * select.m;
      const result = await selectDataset({
        policy: spec.base,
        policyOptions: { temperature: spec.temperature },
        tasks: { ...spec.candidates, count: select.tasks },
        m: select.m,
        noise: spec.noise,
        seed: spec.seed,
        mix: select.mix === "all" ? "all" : DEFAULT_MIX,
        recheck: rechecks,
        out: ensureFresh(join(context.dir, "dataset")),
        onProgress: ({ phase }) => {
          if (phase === "measure") measured++;
          context.progress(Math.min(1, measured / total), phase);
        },
      });
      if (result.tasks.length === 0) {
        throw new Error(
          `recipe: model-aware selection kept no task (every one of ${select.tasks} was solved 0% or 100% of ${select.m} times); raise ${spec.field}.tasks or ${spec.field}.m`,
        );
      }
      return {
        directory: result.directory,
        taskIds: result.tasks.map((task) => task.id),
        candidates: select.tasks,
        zeroVarianceBefore: result.selection.zeroVariance.before,
        zeroVarianceAfter: result.selection.zeroVariance.afterFresh,
        dropped: result.selection.dropped,
      } satisfies SelectStageResult;
    },
  };
}

/** The experiments that can train on their own pool, and what their pool's candidates are. */
const EXPERIMENT_POOLS = {
  credit: (config: RecipeConfig) => ({
    name: CREDIT_SELECT_STAGE,
    candidates: { family: config.credit.family },
    seedTags: [0xc5, 0xc6],
    noise: 0,
  }),
  noise: (config: RecipeConfig) => ({
    name: NOISE_SELECT_STAGE,
    candidates: { families: config.noise.families },
    seedTags: [0x4e, 0x4f],
    noise: config.noise.trainRate,
  }),
} satisfies Record<
  string,
  (config: RecipeConfig) => {
    name: string;
    candidates: Omit<DatasetTaskOptions, "count" | "seed">;
    /** Seeds of the candidates and of the measuring rollouts, mixed with the config's seed. */
    seedTags: readonly [number, number];
    noise: number;
  }
>;
type PooledExperiment = keyof typeof EXPERIMENT_POOLS;

/**
 * An experiment's own pool from the strong base (`credit.select`, `noise.select`), sampled at the
 * experiment's temperature and noise: none when the config's pool is null (its runs then draw fresh
 * tasks every step). No re-check: the runs' own `rollout/kept_groups` says how many of their groups
 * kept signal.
 */
export function experimentPoolStages(config: RecipeConfig, experiment: PooledExperiment): StageSpec[] {
  const { select, temperature } = config[experiment];
  if (select === null) return [];
  const pool = EXPERIMENT_POOLS[experiment](config);
  return [
    poolStage({
      name: pool.name,
      field: `${experiment}.select`,
      select,
      base: config.bases.strong,
      candidates: { ...pool.candidates, seed: mixSeeds(config.seed, pool.seedTags[0]) },
      seed: mixSeeds(config.seed, pool.seedTags[1]),
      temperature,
      noise: pool.noise,
      recheck: false,
    }),
  ];
}

/** The RL config field that trains an experiment's runs on its pool: its task ids, or nothing (fresh tasks). */
export function poolTaskIds(
  config: RecipeConfig,
  experiment: PooledExperiment,
  results: StageResults,
): { taskIds?: string[] } {
  if (config[experiment].select === null) return {};
  const { name } = EXPERIMENT_POOLS[experiment](config);
  return { taskIds: resultOf<SelectStageResult>(results, name).taskIds };
}
