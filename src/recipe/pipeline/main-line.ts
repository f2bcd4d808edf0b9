/**
 * The main line's steps: the bases' evaluations, the model-aware task pool, the same RL from four
 * starts with each one's evaluation, and the boundary analysis of base vs RL.
 */
import { mixSeeds } from "../../core/random.ts";
import { scorerForPolicySpec } from "../../eval/embedded-scorer.ts";
import { runBoundary } from "../../eval/run-boundary.ts";
import type { RlConfig } from "../../rl/config.ts";
import type { RecipeConfig } from "../config.ts";
import { type EvalStageResult, rlStage } from "../stage-runs.ts";
import type { StageResults, StageSpec } from "../stages.ts";
import { STAGE_SECONDS } from "./costs.ts";
import { mainEval, modelOf, type SeedPlan } from "./plan.ts";
import { poolStage } from "./pools.ts";
import {
  type BoundaryStageResult,
  MAIN_STARTS,
  type MainStart,
  resultOf,
  type SelectStageResult,
  WITHHELD_TEMPLATE,
} from "./vocabulary.ts";

/** The bases, strong and weak, on the main line's test tasks. */
export function baseEvalStages(plan: SeedPlan): StageSpec[] {
  const { config } = plan;
  return [
    mainEval(plan, "eval-base-strong", [], () => config.bases.strong),
    mainEval(plan, "eval-base-weak", [], () => config.bases.weak),
  ];
}

/** Model-aware selection: the RL task pool, the tasks the strong base solves sometimes. */
export function selectStage(plan: SeedPlan): StageSpec {
  const { config } = plan;
  return poolStage({
    name: "select",
    field: "select",
    select: config.select,
    config: {
      // a balanced pool keeps the key it had before pools had a mix (existing folders stay cached)
      select:
        config.select.mix === "balanced" ? { tasks: config.select.tasks, m: config.select.m } : config.select,
      rl: { noise: config.rl.noise },
      base: config.bases.strong,
      seed: config.seed,
    },
    base: config.bases.strong,
    candidates: { seed: mixSeeds(config.seed, 0x5e), excludeTemplates: [WITHHELD_TEMPLATE] },
    seed: mixSeeds(config.seed, 0x5f),
    temperature: 1,
    noise: config.rl.noise,
  });
}

/** The RL config shared by the main line (the four starts differ only in `base`). */
function mainRlConfig(config: RecipeConfig, base: string, taskIds: string[]): Partial<RlConfig> {
  return {
    name: "recipe-rl",
    base,
    seed: mixSeeds(config.seed, 0x71),
    steps: config.rl.steps,
    taskIds,
    tasksPerStep: config.rl.tasksPerStep,
    groupSize: config.rl.groupSize,
    noise: config.rl.noise,
    temperature: config.rl.temperature,
    learningRate: config.rl.learningRate,
    ppoEpochs: config.rl.ppoEpochs,
    reward: config.rl.reward,
    estimator: config.rl.estimator,
    evalEvery: 0,
    maxExtraRollouts: config.rl.tasksPerStep * config.rl.groupSize,
    checkpointEvery: Math.max(1, Math.ceil(config.rl.steps / 4)),
    keepCheckpoints: 1,
  };
}

/** The same RL from four starts (strong base, both SFT models, weak base), each then evaluated. */
export function rlStages(plan: SeedPlan): StageSpec[] {
  const { config } = plan;
  const stages: StageSpec[] = [];
  const rlCost = STAGE_SECONDS.rl(config.rl.steps * config.rl.tasksPerStep * config.rl.groupSize);
  const startOf: Record<MainStart, { after: string[]; base: (results: StageResults) => string }> = {
    base: { after: [], base: () => config.bases.strong },
    "sft-real": { after: ["sft-real"], base: modelOf("sft-real") },
    "sft-stitched": { after: ["sft-stitched"], base: modelOf("sft-stitched") },
    weak: { after: [], base: () => config.bases.weak },
  };
  for (const start of MAIN_STARTS) {
    const { after, base } = startOf[start];
    stages.push({
      name: `rl-${start}`,
      after: ["select", ...after],
      config: { rl: config.rl, seed: config.seed, base: after.length === 0 ? base({}) : null },
      cost: rlCost,
      run: (context, results) =>
        rlStage(
          context,
          mainRlConfig(config, base(results), resultOf<SelectStageResult>(results, "select").taskIds),
        ),
    });
    stages.push(mainEval(plan, `eval-rl-${start}`, [`rl-${start}`], modelOf(`rl-${start}`)));
  }
  return stages;
}

/** Boundary: base vs RL on the same tasks, perplexity of each one's solutions under both. */
export function boundaryStage(plan: SeedPlan): StageSpec {
  const { config, evalEpisodes } = plan;
  return {
    name: "boundary",
    after: ["eval-base-strong", "eval-rl-base"],
    config: {},
    cost: STAGE_SECONDS.boundary(evalEpisodes),
    async run(context, results) {
      const base = resultOf<EvalStageResult>(results, "eval-base-strong");
      const rl = resultOf<EvalStageResult>(results, "eval-rl-base");
      const result = await runBoundary({
        directories: [base.directory, rl.directory],
        out: context.dir,
        scorerFor: (run) => scorerForPolicySpec(run.config.policy),
        perplexityTrajectories: 128,
        seed: config.seed,
      });
      return {
        directory: context.dir,
        labels: result.runs.map((run) => run.label),
        perplexity: result.perplexity.map((entry) => ({
          trajectoriesOf: entry.trajectoriesOf,
          scoredBy: entry.scoredBy,
          perplexity: entry.result.pooled,
          tokens: entry.result.tokens,
          scored: entry.result.scored,
        })),
        solvable: result.analysis.pairs.map((pair) => ({
          a: pair.a,
          b: pair.b,
          onlyA: pair.solvable.onlyA.length,
          onlyB: pair.solvable.onlyB.length,
          both: pair.solvable.both,
          neither: pair.solvable.neither,
        })),
        notes: [...result.analysis.warnings, ...result.perplexityNotes],
      } satisfies BoundaryStageResult;
    },
  };
}
