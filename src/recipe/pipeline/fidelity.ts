/** The credit-fidelity step: a sample of the strong base's rollouts per training seed, no training. */
import { mixSeeds } from "../../core/random.ts";
import { sampleCreditFidelity } from "../../rl/credit-fidelity-sample.ts";
import type { RecipeConfig } from "../config.ts";
import type { StageSpec } from "../stages.ts";
import { STAGE_SECONDS } from "./costs.ts";
import { FIDELITY_STAGE, replicaStage } from "./vocabulary.ts";

/** The credit-fidelity sample of one training seed (no training: the strong base's rollouts). */
export function fidelityStage(config: RecipeConfig, r: number): StageSpec {
  const fidelity = config.fidelity;
  const seed = config.seed + r;
  const episodes = fidelity.families.length * fidelity.tasksPerFamily * fidelity.groupSize;
  return {
    name: replicaStage(FIDELITY_STAGE, r),
    after: [],
    config: {
      fidelity,
      family: config.credit.family,
      estimators: config.credit.estimators,
      reward: config.credit.reward,
      temperature: config.credit.temperature,
      topP: config.eval.topP,
      base: config.bases.strong,
      seed,
    },
    cost: STAGE_SECONDS.fidelity(episodes),
    run: (context) =>
      sampleCreditFidelity({
        policy: config.bases.strong,
        families: fidelity.families,
        blameFamily: config.credit.family,
        tasksPerFamily: fidelity.tasksPerFamily,
        groupSize: fidelity.groupSize,
        temperature: config.credit.temperature,
        topP: config.eval.topP,
        reward: config.credit.reward,
        estimators: config.credit.estimators,
        seed: mixSeeds(seed, 0xf1),
        batch: config.eval.batch,
        onProgress: (fraction) => context.progress(fraction, "sampling"),
      }),
  };
}
