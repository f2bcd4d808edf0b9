/** The credit-assignment steps: one RL run per estimator on long chains, and the verdicts' evaluations. */
import { mixSeeds } from "../../core/random.ts";
import type { RlConfig } from "../../rl/config.ts";
import { creditAssignmentConfig } from "../../rl/credit-assignment.ts";
import type { RecipeConfig } from "../config.ts";
import { evalStage, rlStage } from "../stage-runs.ts";
import type { StageResults, StageSpec } from "../stages.ts";
import { STAGE_SECONDS } from "./costs.ts";
import { evalOptions, modelOf, type SeedPlan } from "./plan.ts";
import { poolTaskIds } from "./pools.ts";
import { CREDIT_SELECT_STAGE, creditEvalStageName, creditStageName, creditTestTasks } from "./vocabulary.ts";

/**
 * One estimator's credit run: the experiment as `scripts/credit-assignment.ts` defines it, in `dir`,
 * on the task pool's chains when `credit.select` asks for one (fresh chains every step otherwise).
 */
export function creditRunConfig(
  config: RecipeConfig,
  estimator: string,
  dir: string,
  results: StageResults,
): RlConfig {
  const { credit } = config;
  return creditAssignmentConfig(
    {
      out: dir,
      family: credit.family,
      base: config.bases.strong,
      steps: credit.steps,
      tasksPerStep: credit.tasksPerStep,
      groupSize: credit.groupSize,
      seed: mixSeeds(config.seed, 0xc4),
      reward: credit.reward,
      learningRate: credit.learningRate,
      evalEvery: credit.evalEvery,
      evalTasks: credit.evalTasks,
      evalSamples: credit.evalSamples,
      overrides: {
        temperature: credit.temperature,
        ppoEpochs: credit.ppoEpochs,
        dynamicSampling: credit.dynamicSampling,
        maxExtraRollouts: credit.maxExtraRollouts,
        evalTemperature: credit.temperature,
        evalTopP: config.eval.topP,
        ...poolTaskIds(config, "credit", results),
      },
    },
    estimator,
  );
}

/** One RL run per estimator on the credit family's long chains. */
export function creditRunStages(plan: SeedPlan): StageSpec[] {
  const { config } = plan;
  const stages: StageSpec[] = [];
  const credit = config.credit;
  for (const estimator of credit.estimators) {
    const evalPoints = Math.floor(credit.steps / credit.evalEvery) + 2;
    stages.push({
      name: creditStageName(estimator),
      after: credit.select !== null ? [CREDIT_SELECT_STAGE] : [],
      // the final evaluation's size does not change what a run trains
      config: {
        credit: { ...credit, testTasks: null, testN: null },
        estimator,
        base: config.bases.strong,
        seed: config.seed,
      },
      cost: STAGE_SECONDS.rl(
        1.6 * credit.steps * credit.tasksPerStep * credit.groupSize, // chains: ~1.6× the turns
        evalPoints * credit.evalTasks * credit.evalSamples,
      ),
      run: (context, results) => rlStage(context, creditRunConfig(config, estimator, context.dir, results)),
    });
  }
  return stages;
}

/** The verdicts' evaluation: base and every run's final checkpoint on the same family test tasks. */
export function creditEvalStages(plan: SeedPlan): StageSpec[] {
  const { config } = plan;
  const credit = config.credit;
  const stages: StageSpec[] = [];
  const creditTasks = creditTestTasks(config);
  const creditModels = [
    { model: "base", after: [] as string[], policy: (_: StageResults) => config.bases.strong },
    ...credit.estimators.map((estimator) => ({
      model: estimator,
      after: [creditStageName(estimator)],
      policy: modelOf(creditStageName(estimator)),
    })),
  ];
  for (const { model, after, policy } of creditModels) {
    stages.push({
      name: creditEvalStageName(model),
      after,
      config: {
        family: credit.family,
        testTasks: credit.testTasks,
        n: credit.testN,
        eval: config.eval,
        seed: config.seed,
        base: after.length === 0 ? config.bases.strong : null,
      },
      cost: STAGE_SECONDS.evaluation(1.6 * creditTasks.length * credit.testN),
      run: (context, results) =>
        evalStage(context, {
          policy: policy(results),
          tasks: creditTasks,
          taskSet: "recipe-credit",
          ...evalOptions(config),
          n: credit.testN,
        }),
    });
  }
  return stages;
}
