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
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { mixSeeds } from "../core/random.ts";
import { collectDataset } from "../data/collect.ts";
import { selectDataset } from "../data/select-dataset.ts";
import { stitchDataset } from "../data/stitch.ts";
import { datasetTasks } from "../data/tasks.ts";
import { scorerForPolicySpec } from "../eval/embedded-scorer.ts";
import { runBoundary } from "../eval/run-boundary.ts";
import { runOrchestraExperiment } from "../orchestra/experiment.ts";
import { CORPUS_MIXES } from "../pretrain/corpus.ts";
import type { RlConfig } from "../rl/config.ts";
import { creditAssignmentConfig } from "../rl/credit-assignment.ts";
import { sampleCreditFidelity } from "../rl/credit-fidelity-sample.ts";
import type { Task } from "../types/task.ts";
import type { RecipeConfig } from "./config.ts";
import {
  type EvalStageResult,
  evalStage,
  givenSftModel,
  type RlStageResult,
  rlStage,
  type SftStageResult,
  sftStage,
} from "./stage-runs.ts";
import type { StageContext, StageResults, StageSpec } from "./stages.ts";

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
/** The credit-fidelity sample (one per training seed: `replicaStage(FIDELITY_STAGE, r)`). */
export const FIDELITY_STAGE = "credit-fidelity";

/** A stage result by name (the plan guarantees it ran before the stages that read it). */
export function resultOf<T>(results: StageResults, name: string): T {
  if (!(name in results)) throw new Error(`recipe: no result for stage "${name}"`);
  return results[name] as T;
}

/**
 * The data config a data stage's key depends on: the scripted source only where it is used and not
 * the original expert (so adding the choice left the keys of existing runs as they were).
 */
function dataSlice(config: RecipeConfig, kind: "real" | "stitched"): Record<string, unknown> {
  const { expert, ...rest } = config.data;
  return kind === "real" && expert !== "expert" ? { ...rest, expert } : rest;
}

/** Every dataset directory of a data stage's result. */
export function dataDirectories(result: DataStageResult): string[] {
  return result.directories ?? [result.directory];
}

function ensureFresh(dir: string): string {
  rmSync(dir, { recursive: true, force: true }); // a dataset stage is short: a crash restarts it
  return dir;
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
    learningRate: config.rl.learningRate,
    reward: config.rl.reward,
    estimator: config.rl.estimator,
    evalEvery: 0,
    maxExtraRollouts: config.rl.tasksPerStep * config.rl.groupSize,
    checkpointEvery: Math.max(1, Math.ceil(config.rl.steps / 4)),
    keepCheckpoints: 1,
  };
}

function evalOptions(config: RecipeConfig) {
  return {
    n: config.eval.n,
    noise: config.eval.noise,
    temperature: config.eval.temperature,
    topP: config.eval.topP,
    seed: mixSeeds(config.seed, 0xe7),
    batch: config.eval.batch,
  };
}

/**
 * Each stage's cost for the ETA: estimated seconds on one core of the 2-core reference machine, a
 * fixed part (process start, model loading, the stage's own evaluations) plus a part per unit of
 * work, fitted on that machine's default (10.8 min) and full (44.4 min) runs from empty folders.
 * Only the shares matter: the bar's rate is measured as it runs, so a faster machine gets the same
 * proportions and a correct ETA.
 */
const STAGE_SECONDS = {
  /** per episode of an evaluation */
  evaluation: (episodes: number) => 3 + 0.051 * episodes,
  /** per rollout of the selection (measuring plus the fresh re-check) */
  select: (rollouts: number) => 1 + 0.095 * rollouts,
  /** per task of a dataset */
  data: (tasks: number) => 0.5 + 0.0005 * tasks,
  /** per episode of a model's own rollouts collected as data */
  modelData: (episodes: number) => (episodes > 0 ? 3 + 0.03 * episodes : 0),
  /** per token of SFT */
  sft: (tokens: number) => 11 + tokens / 3600,
  /** per training episode of RL, and per episode of its held-out tracking */
  rl: (episodes: number, evalEpisodes = 0) => 20 + 0.06 * episodes + 0.08 * evalEpisodes,
  /** RL under heavy tool noise: longer episodes (retries) */
  noisyRl: (episodes: number) => 10 + 0.166 * episodes,
  /** evaluations at several noise rates: one model load and pool per rate */
  noiseEval: (rates: number, episodes: number) => 5 * rates + 0.035 * episodes,
  /** the boundary stage: mostly fixed (two models loaded to score each other's solutions) */
  boundary: (evalEpisodes: number) => 13 + 0.001 * evalEpisodes,
  /** per orchestration episode */
  orchestra: (episodes: number) => 0.0193 * episodes,
  /**
   * per episode sampled for credit fidelity (no training): 576 episodes took 12.8 s, about 49 units
   * at the ratio of the single-seed default's 1,829 units to its 478 core-seconds
   */
  fidelity: (episodes: number) => 3 + 0.08 * episodes,
};

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

/** The credit-fidelity sample of one training seed (no training: the strong base's rollouts). */
function fidelityStage(config: RecipeConfig, r: number): StageSpec {
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
  const stages: StageSpec[] = [];
  const evalTasks = recipeEvalTasks(config);
  const evalEpisodes = evalTasks.length * config.eval.n;
  const mainEval = (
    name: string,
    after: string[],
    policyOf: (results: StageResults) => string,
  ): StageSpec => ({
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
  });
  const modelOf = (stage: string) => (results: StageResults) =>
    resultOf<RlStageResult | SftStageResult>(results, stage).modelDir;

  // ---- 1. the bases ------------------------------------------------------------------------------
  stages.push(mainEval("eval-base-strong", [], () => config.bases.strong));
  stages.push(mainEval("eval-base-weak", [], () => config.bases.weak));

  // ---- 2. model-aware selection: the RL task pool -------------------------------------------------
  stages.push({
    name: "select",
    after: [],
    config: {
      select: config.select,
      rl: { noise: config.rl.noise },
      base: config.bases.strong,
      seed: config.seed,
    },
    cost: STAGE_SECONDS.select(config.select.tasks * config.select.m),
    async run(context) {
      let measured = 0;
      const total = config.select.tasks * config.select.m;
      const result = await selectDataset({
        policy: config.bases.strong,
        policyOptions: { temperature: 1 },
        tasks: {
          count: config.select.tasks,
          seed: mixSeeds(config.seed, 0x5e),
          excludeTemplates: [WITHHELD_TEMPLATE],
        },
        m: config.select.m,
        noise: config.rl.noise,
        seed: mixSeeds(config.seed, 0x5f),
        out: ensureFresh(join(context.dir, "dataset")),
        onProgress: ({ phase }) => {
          if (phase === "measure") measured++;
          context.progress(Math.min(1, measured / total), phase);
        },
      });
      if (result.tasks.length === 0) {
        throw new Error(
          `recipe: model-aware selection kept no task (every one of ${config.select.tasks} was solved 0% or 100% of ${config.select.m} times); raise select.tasks or select.m`,
        );
      }
      return {
        directory: result.directory,
        taskIds: result.tasks.map((task) => task.id),
        candidates: config.select.tasks,
        zeroVarianceBefore: result.selection.zeroVariance.before,
        zeroVarianceAfter: result.selection.zeroVariance.afterFresh,
        dropped: result.selection.dropped,
      } satisfies SelectStageResult;
    },
  });

  // ---- 3. SFT data and SFT --------------------------------------------------------------------------
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
    stages.push(mainEval(`eval-sft-${kind}`, [`sft-${kind}`], modelOf(`sft-${kind}`)));
  }

  // ---- 4. the same RL from four starts ---------------------------------------------------------------
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
    stages.push(mainEval(`eval-rl-${start}`, [`rl-${start}`], modelOf(`rl-${start}`)));
  }

  // ---- 5. boundary: base vs RL on the same tasks, perplexity of each one's solutions under both -----
  stages.push({
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
  });

  // ---- 6. credit assignment: one RL run per estimator on long chains -----------------------------------
  const credit = config.credit;
  for (const estimator of credit.estimators) {
    const evalPoints = Math.floor(credit.steps / credit.evalEvery) + 2;
    stages.push({
      name: creditStageName(estimator),
      after: [],
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
      // the experiment as `scripts/credit-assignment.ts` defines it, run resumably in the stage folder
      run: (context) =>
        rlStage(
          context,
          creditAssignmentConfig(
            {
              out: context.dir,
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
                evalTemperature: credit.temperature,
                evalTopP: config.eval.topP,
              },
            },
            estimator,
          ),
        ),
    });
  }
  // the verdicts' evaluation: base and every run's final checkpoint on the same family test tasks
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

  // ---- 7. tool noise: naive vs noise-aware turn rewards under heavy noise ------------------------------
  const noise = config.noise;
  const noiseTasks = noiseEvalTasks(config);
  for (const variant of ["naive", "aware"] as const) {
    stages.push({
      name: noiseRlStageName(variant),
      after: [],
      config: {
        noise: { ...noise, rates: null, evalTasks: null, evalN: null },
        base: config.bases.strong,
        seed: config.seed,
      },
      cost: STAGE_SECONDS.noisyRl(noise.steps * noise.tasksPerStep * noise.groupSize),
      run: (context) =>
        rlStage(context, {
          name: `recipe-noise-${variant}`,
          base: config.bases.strong,
          seed: mixSeeds(config.seed, 0x40),
          steps: noise.steps,
          families: ["bridge", "arithmetic", "chain"],
          tasksPerStep: noise.tasksPerStep,
          groupSize: noise.groupSize,
          noise: noise.trainRate,
          reward: variant === "naive" ? noise.naiveReward : noise.awareReward,
          estimator: noise.estimator,
          learningRate: noise.learningRate,
          evalEvery: 0,
          maxExtraRollouts: noise.tasksPerStep * noise.groupSize,
          checkpointEvery: Math.max(1, Math.ceil(noise.steps / 2)),
          keepCheckpoints: 1,
        } as Partial<RlConfig>),
    });
  }
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
        eval: config.eval,
        seed: config.seed,
        base: after.length === 0 ? config.bases.strong : null,
      },
      cost: STAGE_SECONDS.noiseEval(noise.rates.length, noiseTasks.length * noise.evalN * noise.rates.length),
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
              n: noise.evalN,
              noise: rate,
            },
          );
        }
        return byRate;
      },
    });
  }
  // ---- 8. orchestration (the full preset): shipped orchestrators vs a single agent and fixed plans --
  if (config.orchestra.enabled) {
    const orchestra = config.orchestra;
    stages.push({
      name: "orchestra",
      after: [],
      config: { orchestra, seed: config.seed },
      cost: STAGE_SECONDS.orchestra(
        orchestra.tasks * orchestra.values.length * 5 * 2 * (orchestra.orchestrators.length + 3),
      ),
      async run(context) {
        const steps = 5 * orchestra.values.length * 2;
        let done = 0;
        const result = await runOrchestraExperiment({
          orchestrators: orchestra.orchestrators,
          values: orchestra.values,
          tasks: orchestra.tasks,
          seed: config.seed,
          temperature: orchestra.temperature,
          onProgress: (message) => context.progress(Math.min(0.99, done++ / steps), message),
        });
        return result;
      },
    });
  }
  return stages;
}
