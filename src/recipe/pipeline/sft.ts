/** The SFT steps: the two datasets (real and stitched), and SFT on each with its evaluation. */
import { join } from "node:path";
import { mixSeeds } from "../../core/random.ts";
import { collectDataset } from "../../data/collect.ts";
import { stitchDataset } from "../../data/stitch.ts";
import type { RecipeConfig } from "../config.ts";
import { givenSftModel, sftStage } from "../stage-runs.ts";
import type { StageSpec } from "../stages.ts";
import { STAGE_SECONDS } from "./costs.ts";
import { ensureFresh, mainEval, modelOf, type SeedPlan } from "./plan.ts";
import { type DataStageResult, dataDirectories, resultOf, WITHHELD_TEMPLATE } from "./vocabulary.ts";

/**
 * The data config a data stage's key depends on: the scripted source only where it is used and not
 * the original expert (so adding the choice left the keys of existing runs as they were).
 */
function dataSlice(config: RecipeConfig, kind: "real" | "stitched"): Record<string, unknown> {
  const { expert, ...rest } = config.data;
  return kind === "real" && expert !== "expert" ? { ...rest, expert } : rest;
}

/**
 * The SFT data on the same tasks: real (the scripted expert through the noisy episode loop and, with
 * `data.modelSamples`, the strong base's own correct episodes) and stitched (clean templates).
 */
export function sftDataStages(plan: SeedPlan): StageSpec[] {
  const { config } = plan;
  const stages: StageSpec[] = [];
  const dataTasks = {
    count: config.data.tasks,
    seed: mixSeeds(config.seed, 0xda),
    templateShares: { [WITHHELD_TEMPLATE]: config.data.withheldShare },
  };
  stages.push({
    name: "data-real",
    after: [],
    config: {
      data: dataSlice(config, "real"),
      seed: config.seed,
      base: config.data.modelSamples > 0 ? config.bases.strong : null,
    },
    cost:
      STAGE_SECONDS.data(config.data.tasks) +
      STAGE_SECONDS.modelData(config.data.tasks * config.data.modelSamples),
    async run(context) {
      const sources: NonNullable<DataStageResult["sources"]> = [];
      const models = config.data.modelSamples > 0 ? [config.bases.strong] : [];
      const parts = 1 + models.length;
      const expert = await collectDataset({
        policy: config.data.expert,
        tasks: dataTasks,
        noise: config.data.noise,
        seed: mixSeeds(config.seed, 0xdb),
        filter: "correct",
        out: ensureFresh(join(context.dir, "dataset")),
        onProgress: ({ episodes, total }) => context.progress(episodes / total / parts, "expert"),
      });
      sources.push({
        name: config.data.expert,
        directory: expert.directory,
        trajectories: expert.kept,
        episodes: expert.episodes,
      });
      // the strongest checkpoint's own episodes in the same noisy environment, kept when correct
      for (const [i, model] of models.entries()) {
        const own = await collectDataset({
          policy: model,
          policyOptions: { temperature: 1 },
          tasks: dataTasks,
          noise: config.data.noise,
          seed: mixSeeds(config.seed, 0xdc + i),
          filter: "correct",
          samplesPerTask: config.data.modelSamples,
          maxKeptPerTask: config.data.modelSamples,
          out: ensureFresh(join(context.dir, `dataset-model-${i}`)),
          onProgress: ({ episodes, total }) => context.progress((1 + i + episodes / total) / parts, "model"),
        });
        sources.push({
          name: model,
          directory: own.directory,
          trajectories: own.kept,
          episodes: own.episodes,
        });
      }
      return {
        directory: expert.directory,
        trajectories: sources.reduce((sum, source) => sum + source.trajectories, 0),
        provenance: expert.provenance,
        directories: sources.map((source) => source.directory),
        sources,
      } satisfies DataStageResult;
    },
  });
  stages.push({
    name: "data-stitched",
    after: [],
    config: { data: { ...dataSlice(config, "stitched"), noise: null }, seed: config.seed },
    cost: STAGE_SECONDS.data(config.data.tasks) / 2,
    async run(context) {
      const result = stitchDataset({ tasks: dataTasks, out: ensureFresh(join(context.dir, "dataset")) });
      return {
        directory: result.directory,
        trajectories: result.trajectories,
        provenance: result.provenance,
      };
    },
  });
  return stages;
}

/** SFT of the strong base on each dataset (or the given SFT models), each then evaluated. */
export function sftStages(plan: SeedPlan): StageSpec[] {
  const { config } = plan;
  const stages: StageSpec[] = [];
  for (const kind of ["real", "stitched"] as const) {
    stages.push({
      name: `sft-${kind}`,
      after: [`data-${kind}`],
      config: { sft: config.sft, base: config.bases.strong, seed: config.seed },
      cost: config.sft.models ? 1 : STAGE_SECONDS.sft(config.sft.steps * config.sft.tokensPerStep),
      run: (context, results) =>
        config.sft.models
          ? givenSftModel(config.sft.models[kind])
          : sftStage(context, {
              name: `recipe-sft-${kind}`,
              base: config.bases.strong,
              data: dataDirectories(resultOf<DataStageResult>(results, `data-${kind}`)),
              steps: config.sft.steps,
              tokensPerStep: config.sft.tokensPerStep,
              microBatchTokens: Math.min(4096, config.sft.tokensPerStep),
              learningRate: config.sft.learningRate,
              warmupSteps: Math.min(20, Math.floor(config.sft.steps / 5)),
              heldoutEvery: Math.max(1, config.sft.steps),
              checkpointEvery: Math.max(1, Math.ceil(config.sft.steps / 4)),
              seed: config.seed,
            }),
    });
    stages.push(mainEval(plan, `eval-sft-${kind}`, [`sft-${kind}`], modelOf(`sft-${kind}`)));
  }
  return stages;
}
