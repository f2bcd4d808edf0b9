/**
 * What the step builders of one training seed share (pipeline.ts `seedStages`): the seed's config
 * and the main line's test tasks, and the helpers every step uses to evaluate a model on them, find
 * a trained model, and sample like every other evaluation.
 */
import { rmSync } from "node:fs";
import { mixSeeds } from "../../core/random.ts";
import type { Task } from "../../types/task.ts";
import type { RecipeConfig } from "../config.ts";
import { evalStage, type RlStageResult, type SftStageResult } from "../stage-runs.ts";
import type { StageContext, StageResults, StageSpec } from "../stages.ts";
import { STAGE_SECONDS } from "./costs.ts";
import { recipeEvalTasks, resultOf } from "./vocabulary.ts";

/** One training seed's plan: its config (`config.seed` is the seed) and the main-line test tasks. */
export interface SeedPlan {
  config: RecipeConfig;
  /** The test tasks every main-line checkpoint is evaluated on (`recipeEvalTasks`). */
  evalTasks: Task[];
  /** Episodes of one main-line evaluation. */
  evalEpisodes: number;
}

export function seedPlan(config: RecipeConfig): SeedPlan {
  const evalTasks = recipeEvalTasks(config);
  return { config, evalTasks, evalEpisodes: evalTasks.length * config.eval.n };
}

/**
 * A main-line evaluation: the model `policyOf` names (from the results of `after`) on the plan's
 * test tasks. A base's name is part of the key; a trained model's is its dependency's key.
 */
export function mainEval(
  plan: SeedPlan,
  name: string,
  after: string[],
  policyOf: (results: StageResults) => string,
): StageSpec {
  const { config, evalTasks, evalEpisodes } = plan;
  return {
    name,
    after,
    config: { eval: config.eval, seed: config.seed, policy: after.length === 0 ? policyOf({}) : null },
    cost: STAGE_SECONDS.evaluation(evalEpisodes),
    run: (context: StageContext, results: StageResults) =>
      evalStage(context, {
        policy: policyOf(results),
        tasks: evalTasks,
        taskSet: "recipe-eval",
        ...evalOptions(config),
      }),
  };
}

/** The model a training stage wrote (an SFT or RL result), read from the results. */
export function modelOf(stage: string): (results: StageResults) => string {
  return (results) => resultOf<RlStageResult | SftStageResult>(results, stage).modelDir;
}

/** The sampling of every evaluation (the main line's; the credit and noise ones change n and noise). */
export function evalOptions(config: RecipeConfig) {
  return {
    n: config.eval.n,
    noise: config.eval.noise,
    temperature: config.eval.temperature,
    topP: config.eval.topP,
    seed: mixSeeds(config.seed, 0xe7),
    batch: config.eval.batch,
  };
}

/** A dataset folder emptied first. */
export function ensureFresh(dir: string): string {
  rmSync(dir, { recursive: true, force: true }); // a dataset stage is short: a crash restarts it
  return dir;
}
