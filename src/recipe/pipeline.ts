/**
 * The article's recipe as a plan of cached stages (stages.ts), on the embedded lab:
 *
 *   base evaluations (strong, weak) → model-aware task selection (the RL pool) → SFT data (real and
 *   stitched) → SFT (real, stitched) → the same RL from four starts (strong base, both SFT models,
 *   weak base) → evaluation of every checkpoint → boundary analysis (base vs RL, with perplexity)
 *   → credit assignment (one RL run per estimator on long chains) → tool noise (naive vs
 *   noise-aware turn rewards under heavy noise, each model evaluated at several noise rates).
 *
 * Every evaluation of the main line uses the same test tasks (all families plus the template the
 * bases never saw), the same samples per task, sampling and tool noise, so any two curves compare.
 * Every arm a claim compares (each SFT, RL, credit and noise run, and its evaluations) is trained
 * at `config.seeds` training seeds: the stages of seed config.seed + r are the first seed's,
 * renamed `<name>@s<r + 1>` and reading that seed's replicas (`replicaOf`), so the scheduler runs
 * them side by side. Last, per seed, the credit-fidelity sample (no training). The report
 * (report.ts) reads only the stage results.
 *
 * `seedStages` lists the steps of one training seed; each step's builder lives in pipeline/ by
 * topic and reads what it needs from the seed's plan (pipeline/plan.ts). The stage names, test
 * tasks and result shapes the report reads are in pipeline/vocabulary.ts, exported here too.
 */
import type { RecipeConfig } from "./config.ts";
import { creditEvalStages, creditRunStages } from "./pipeline/credit.ts";
import { fidelityStage } from "./pipeline/fidelity.ts";
import { baseEvalStages, boundaryStage, rlStages, selectStage } from "./pipeline/main-line.ts";
import { noiseEvalStages, noiseRunStages } from "./pipeline/noise.ts";
import { orchestraStages } from "./pipeline/orchestra.ts";
import { seedPlan } from "./pipeline/plan.ts";
import { experimentPoolStages } from "./pipeline/pools.ts";
import { sftDataStages, sftStages } from "./pipeline/sft.ts";
import { creditEvalStageName, creditStageName, FIDELITY_STAGE, replicaStage } from "./pipeline/vocabulary.ts";
import type { StageResults, StageSpec } from "./stages.ts";

export {
  type BoundaryStageResult,
  CREDIT_SELECT_STAGE,
  creditEvalStageName,
  creditStageName,
  creditTestTasks,
  type DataStageResult,
  dataDirectories,
  FIDELITY_STAGE,
  MAIN_STARTS,
  type MainStart,
  NOISE_SELECT_STAGE,
  noiseEvalN,
  noiseEvalStageName,
  noiseEvalTasks,
  noiseJudgedRate,
  noiseRlStageName,
  recipeEvalTasks,
  replicaStage,
  resultOf,
  type SelectStageResult,
  trainingSeeds,
  WITHHELD_TEMPLATE,
} from "./pipeline/vocabulary.ts";

/**
 * Whether a stage trains an arm that a claim compares, or evaluates one: those are run at every
 * training seed, as are the base's noise and credit evaluations (at each seed's sampling). The main
 * evaluations of the bases, the task pool, the SFT data, the boundary's perplexity
 * scoring (seed 1's base and RL) and the orchestration study are shared.
 */
export function isReplicated(name: string, config: RecipeConfig): boolean {
  if (/^(sft|eval-sft|rl|eval-rl|noise-rl)-/.test(name)) return true;
  // the base's own noise and credit evaluations too, at each seed's sampling: the claims they
  // decide alone (tool noise costs accuracy, long chains lose signal) then have a spread over seeds
  if (name.startsWith("noise-eval-") || name === creditEvalStageName("base")) return true;
  if (name === FIDELITY_STAGE) return true;
  return config.credit.estimators.some(
    (estimator) => name === creditStageName(estimator) || name === creditEvalStageName(estimator),
  );
}

/**
 * A stage of a later training seed: renamed, reading the same seed's replicas of the replicated
 * stages it depends on (and the shared ones as they are); its run sees them under their plain
 * names, so the stage code is the first seed's.
 */
function replicaOf(stage: StageSpec, r: number, config: RecipeConfig): StageSpec {
  const renamed = (name: string) => (isReplicated(name, config) ? replicaStage(name, r) : name);
  return {
    ...stage,
    name: replicaStage(stage.name, r),
    after: stage.after.map(renamed),
    run: (context, results) => {
      const view: StageResults = { ...results };
      for (const dependency of stage.after) view[dependency] = results[renamed(dependency)];
      return stage.run(context, view);
    },
  };
}

/** The stage list of a recipe config, in run order: every training seed's arms, then the fidelity samples. */
export function recipeStages(config: RecipeConfig): StageSpec[] {
  const first = seedStages(config);
  const stages = [...first];
  for (let r = 1; r < config.seeds; r++) {
    const seeded = seedStages({ ...config, seed: config.seed + r });
    stages.push(
      ...seeded
        .filter((stage) => isReplicated(stage.name, config))
        .map((stage) => replicaOf(stage, r, config)),
    );
  }
  for (let r = 0; r < config.seeds; r++) stages.push(fidelityStage(config, r));
  return stages;
}

/** The stages of one training seed (config.seed), in run order. */
function seedStages(config: RecipeConfig): StageSpec[] {
  const plan = seedPlan(config);
  return [
    ...baseEvalStages(plan),
    selectStage(plan),
    ...sftDataStages(plan),
    ...sftStages(plan),
    ...rlStages(plan),
    boundaryStage(plan),
    ...experimentPoolStages(config, "credit"),
    ...creditRunStages(plan),
    ...creditEvalStages(plan),
    ...experimentPoolStages(config, "noise"),
    ...noiseRunStages(plan),
    ...noiseEvalStages(plan),
    ...orchestraStages(plan),
  ];
}
