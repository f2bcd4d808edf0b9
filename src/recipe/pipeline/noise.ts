/** The tool-noise steps: naive vs noise-aware turn rewards under heavy noise, each evaluated at several rates. */
import { join } from "node:path";
import { mixSeeds } from "../../core/random.ts";
import type { RlConfig } from "../../rl/config.ts";
import { type EvalStageResult, evalStage, rlStage } from "../stage-runs.ts";
import type { StageResults, StageSpec } from "../stages.ts";
import { STAGE_SECONDS } from "./costs.ts";
import { evalOptions, modelOf, type SeedPlan } from "./plan.ts";
import { poolTaskIds } from "./pools.ts";
import {
  NOISE_SELECT_STAGE,
  noiseEvalN,
  noiseEvalStageName,
  noiseEvalTasks,
  noiseRlStageName,
} from "./vocabulary.ts";

/** RL under heavy tool noise with the naive and the noise-aware turn reward. */
export function noiseRunStages(plan: SeedPlan): StageSpec[] {
  const { config } = plan;
  const noise = config.noise;
  const stages: StageSpec[] = [];
  for (const variant of ["naive", "aware"] as const) {
    stages.push({
      name: noiseRlStageName(variant),
      after: noise.select !== null ? [NOISE_SELECT_STAGE] : [],
      config: {
        noise: { ...noise, rates: null, evalTasks: null, evalN: null },
        base: config.bases.strong,
        seed: config.seed,
      },
      cost: STAGE_SECONDS.noisyRl(noise.steps * noise.tasksPerStep * noise.groupSize),
      run: (context, results) =>
        rlStage(context, {
          name: `recipe-noise-${variant}`,
          base: config.bases.strong,
          seed: mixSeeds(config.seed, 0x40),
          steps: noise.steps,
          families: noise.families,
          ...poolTaskIds(config, "noise", results),
          tasksPerStep: noise.tasksPerStep,
          groupSize: noise.groupSize,
          noise: noise.trainRate,
          reward: variant === "naive" ? noise.naiveReward : noise.awareReward,
          estimator: noise.estimator,
          learningRate: noise.learningRate,
          temperature: noise.temperature,
          ppoEpochs: noise.ppoEpochs,
          evalEvery: 0,
          maxExtraRollouts: noise.tasksPerStep * noise.groupSize,
          checkpointEvery: Math.max(1, Math.ceil(noise.steps / 2)),
          keepCheckpoints: 1,
        } as Partial<RlConfig>),
    });
  }
  return stages;
}

/** The base and both noise runs, each evaluated at every noise rate. */
export function noiseEvalStages(plan: SeedPlan): StageSpec[] {
  const { config } = plan;
  const noise = config.noise;
  const noiseTasks = noiseEvalTasks(config);
  const stages: StageSpec[] = [];
  const noiseModels: { model: string; after: string[]; policy: (results: StageResults) => string }[] = [
    { model: "base", after: [], policy: () => config.bases.strong },
    { model: "naive", after: [noiseRlStageName("naive")], policy: modelOf(noiseRlStageName("naive")) },
    { model: "aware", after: [noiseRlStageName("aware")], policy: modelOf(noiseRlStageName("aware")) },
  ];
  for (const { model, after, policy } of noiseModels) {
    stages.push({
      name: noiseEvalStageName(model),
      after,
      config: {
        rates: noise.rates,
        evalTasks: noise.evalTasks,
        n: noise.evalN,
        curveN: noise.curveN,
        eval: config.eval,
        seed: config.seed,
        base: after.length === 0 ? config.bases.strong : null,
      },
      cost: STAGE_SECONDS.noiseEval(
        noise.rates.length,
        noise.rates.reduce((episodes, rate) => episodes + noiseTasks.length * noiseEvalN(noise, rate), 0),
      ),
      async run(context, results) {
        const byRate: Record<string, EvalStageResult> = {};
        for (const [i, rate] of noise.rates.entries()) {
          byRate[String(rate)] = await evalStage(
            {
              ...context,
              dir: join(context.dir, `noise-${rate}`),
              progress: (fraction, info) => context.progress((i + fraction) / noise.rates.length, info),
            },
            {
              policy: policy(results),
              tasks: noiseTasks,
              taskSet: "recipe-noise",
              ...evalOptions(config),
              n: noiseEvalN(noise, rate),
              noise: rate,
            },
          );
        }
        return byRate;
      },
    });
  }
  return stages;
}
