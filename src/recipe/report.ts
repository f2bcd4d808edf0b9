/**
 * The recipe report: one section per experiment of the article, each built by its own module in
 * experiments/ (its numbers, its verdicts computed from them by analysis.ts, its plots, tables and
 * example trajectories); this file assembles them with the summary, the stages and the config,
 * and writes `report.json` holding every number the page shows.
 *
 * A claim's estimate is the mean over the training seeds of its paired per-task difference, with a
 * two-level bootstrap interval (seeds, then tasks). It is "reproduced" when that interval excludes
 * zero, "not reproduced" when it lies below zero or entirely below the margin (with the cause the
 * runs' numbers show), and otherwise "inconclusive" with the seeds × tasks that would call it.
 * Every verdict has a stable id and its per-seed estimates (`verdicts[].id`, `.seeds`).
 */
import type { OrchestraExperimentResult } from "../orchestra/experiment.ts";
import { type Block, type Cell, renderPage, type Section } from "../report/html.ts";
import { VERDICT_STATUSES, type Verdict } from "./analysis.ts";
import { type Arm, armSpecs, comparedRuns, measureArms } from "./arms.ts";
import { armsSection } from "./arms-report.ts";
import type { RecipeConfig } from "./config.ts";
import { rlExamples } from "./examples.ts";
import { baseExperiment } from "./experiments/base.ts";
import { boundaryExperiment } from "./experiments/boundary.ts";
import {
  type ExperimentReport,
  exampleBlocks,
  fixed,
  type Pass1Comparison,
  pass1Difference,
  type ReportContext,
  seedList,
  seedPass1Difference,
  statusCell,
} from "./experiments/context.ts";
import { creditExperiment } from "./experiments/credit.ts";
import { dataFirstExperiment } from "./experiments/data-first.ts";
import { fidelityExperiment } from "./experiments/fidelity.ts";
import { noiseExperiment } from "./experiments/noise.ts";
import { describeInfraFailures, infraFailuresByStage } from "./infra-failures.ts";
import {
  isReplicated,
  MAIN_STARTS,
  replicaStage,
  resultOf,
  type SelectStageResult,
  trainingSeeds,
} from "./pipeline.ts";
import type { EvalStageResult, RlStageResult } from "./stage-runs.ts";
import type { StageOutcome, StageResults } from "./stages.ts";
import { verdictIntervalChart } from "./verdict-chart.ts";

export { PASS1_COMPARISONS, type Pass1Comparison, pass1Difference } from "./experiments/context.ts";

export interface MachineInfo {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  platform: string;
}

export interface RecipeReport {
  version: 1;
  preset: string;
  config: RecipeConfig;
  machine: MachineInfo;
  seconds: number;
  createdAt: string;
  stages: StageOutcome[];
  verdicts: Verdict[];
  /** Every RL arm at every training seed: its start and end pass@1 and whether it learned (arms.ts). */
  arms: Arm[];
  experiments: Record<string, unknown>;
  /** Episodes of each eval stage left out of pass@k for an infra failure (infra-failures.ts). */
  infraFailures: Record<string, number>;
}

interface BuildInput {
  config: RecipeConfig;
  results: StageResults;
  outcomes: StageOutcome[];
  seconds: number;
  machine: MachineInfo;
}

/** The experiments in report order (section numbers follow it). */
const EXPERIMENTS: readonly ((context: ReportContext) => Promise<ExperimentReport>)[] = [
  boundaryExperiment,
  dataFirstExperiment,
  creditExperiment,
  fidelityExperiment,
  noiseExperiment,
  baseExperiment,
];

/**
 * The claims called against the article, each explained from its own numbers and shown with one
 * example trajectory of the RL stage that illustrates it (null when no claim was).
 */
function againstSection(verdicts: readonly Verdict[], context: ReportContext): Section | null {
  const against = verdicts.filter((v) => v.status === "not reproduced");
  if (against.length === 0) return null;
  return {
    title: "Claims the lab calls against the article",
    blocks: against.flatMap((v): Block[] => [
      {
        type: "paragraph",
        text: `${v.experiment} (${v.id}): ${v.claim}. ${v.evidence}. Per seed: ${seedList(v.seeds)}. Measured cause: ${v.cause ?? "n/a"}.`,
      },
      ...(v.explanation ? [{ type: "paragraph" as const, text: v.explanation }] : []),
      ...(v.exampleStage
        ? exampleBlocks(`example from ${v.exampleStage}`, context.examplesOf(v.exampleStage).slice(0, 1))
        : []),
    ]),
  };
}

export async function buildReport(input: BuildInput): Promise<{ report: RecipeReport; html: string }> {
  const { config, results } = input;
  // Every stage result an experiment reads goes through `get`: what it read is what its claims rest on.
  let read: Set<string> | null = null;
  const get = <T>(name: string) => {
    read?.add(name);
    return resultOf<T>(results, name);
  };
  const evalStages: Record<string, string> = {
    base: "eval-base-strong",
    weak: "eval-base-weak",
    "sft-real": "eval-sft-real",
    "sft-stitched": "eval-sft-stitched",
  };
  for (const start of MAIN_STARTS) evalStages[`rl-${start}`] = `eval-rl-${start}`;
  for (const stage of Object.values(evalStages)) get(stage); // each must exist, as before
  const evals = {} as Record<string, EvalStageResult>;
  for (const [model, stage] of Object.entries(evalStages))
    Object.defineProperty(evals, model, { enumerable: true, get: () => get<EvalStageResult>(stage) });
  const seed = config.seed;
  const seeds = trainingSeeds(config);
  const replicas = <T>(name: string): T[] =>
    seeds.map((_, r) => get<T>(isReplicated(name, config) ? replicaStage(name, r) : name));
  const questions = new Map<string, string>();
  const stageAt = <T>(name: string, r: number) => {
    const stage = isReplicated(name, config) ? replicaStage(name, r) : name;
    return { name: stage, result: get<T>(stage) };
  };
  const arms = measureArms(armSpecs(config, stageAt), seeds, seed);
  const context: ReportContext = {
    config,
    results,
    get,
    evals,
    n: config.eval.n,
    seed,
    margin: config.margin,
    pass1: (comparison: Pass1Comparison) =>
      pass1Difference(comparison, (stage) => get<EvalStageResult>(stage).counts, seed),
    seeds,
    replicas,
    seedPass1: (comparison: Pass1Comparison) =>
      seedPass1Difference(
        comparison,
        (stage) => replicas<EvalStageResult>(stage).map((result) => result.counts),
        seed,
      ),
    examplesOf: (stage: string) => {
      const rl = get<RlStageResult>(stage);
      return rlExamples({
        directory: rl.directory,
        runId: rl.runId,
        estimator: rl.estimator,
        count: config.examples,
        seed,
        questions,
      });
    },
    armGate: { arms, compared: comparedRuns(config) },
  };
  const experiments: Record<string, unknown> = {};
  const verdicts: Verdict[] = [];
  const sections: Section[] = [];
  for (const experiment of EXPERIMENTS) {
    read = new Set();
    const part = await experiment(context);
    const stages = [...read];
    read = null;
    for (const verdict of part.verdicts) {
      verdict.stages = stages;
      const compares = context.armGate.compared[verdict.id];
      if (compares) verdict.compares = [...compares];
    }
    experiments[part.key] = part.json;
    verdicts.push(...part.verdicts);
    sections.push(...part.sections);
  }
  const against = againstSection(verdicts, context);

  // ---- summary, selection, stages, config ----------------------------------------------------------------
  const select = get<SelectStageResult>("select");
  experiments.selection = select;
  const verdictSvg = await verdictIntervalChart(
    verdicts.filter((v) => v.experiment !== "fidelity"),
    config.margin,
  );
  const verdictFigure: Block[] = verdictSvg
    ? [
        {
          type: "svg",
          svg: verdictSvg,
          caption: `Each claim's estimate over the ${seeds.length} training seeds (${seeds.join(", ")}): the 95% two-level bootstrap interval (seeds, then tasks within a seed) as a bar, the mean as a tick, each seed's own estimate as a dot; the dashed lines are 0 and the margin ${config.margin}. The credit-fidelity and variance claims, on their own scales, are drawn in their section.`,
        },
      ]
    : [];
  const summary: Section = {
    title: "Summary",
    blocks: [
      {
        type: "paragraph",
        text: `Preset ${config.preset}, training seeds ${seeds.join(", ")} (every arm a claim compares trained at each): ${input.outcomes.every((o) => o.cached) ? "this report was rebuilt from cached stages;" : `this run ${(input.seconds / 60).toFixed(1)} min,`} the stages' own compute ${(input.outcomes.reduce((sum, o) => sum + o.seconds, 0) / 60).toFixed(1)} min (cached ones as first measured), on ${input.machine.cpus} × ${input.machine.cpuModel} (${input.machine.memoryGiB} GiB, Node ${input.machine.node}). Each claim below is checked on the numbers of its section: its estimate is the mean over the training seeds of the paired per-task difference, its 95% interval a two-level bootstrap over the seeds and then the tasks within each; "inconclusive" means that interval neither clears the margin nor rules out the claim's effect size at this size, not that the claim is false.${config.preset === "quick" ? " The quick preset exists to exercise every stage: expect most verdicts to be inconclusive." : ""}`,
      },
      {
        type: "table",
        columns: ["id", "experiment", "claim", "status", "per seed", "evidence"],
        rows: verdicts.map(
          (v) =>
            [v.id, v.experiment, v.claim, statusCell(v.status, v), seedList(v.seeds), v.evidence] as Cell[],
        ),
      },
      ...verdictFigure,
      {
        type: "paragraph",
        text: `Counts: ${VERDICT_STATUSES.map((status) => `${verdicts.filter((v) => v.status === status).length} ${status}`).join(", ")}. A claim is called "not reproduced" when its interval lies below zero or entirely below the margin of ${config.margin} (the smallest effect the claim is about: the run rules out an effect that large). A reproduced claim whose interval lies entirely below the margin says "reproduced, smaller than the margin". A claim that compares RL methods is called only where every arm it compares learned at every seed (the arms table below); otherwise it is inconclusive with the cause "arms did not learn". An inconclusive claim's evidence ends with its interval's half-width and roughly how many seeds × tasks would call it; a claim called against the article carries the cause its runs' numbers show.`,
      },
      {
        type: "paragraph",
        text: `Model-aware selection (strong base, ${select.candidates} candidate train tasks × ${config.select.m} rollouts): kept ${select.taskIds.length} tasks (dropped ${select.dropped.unsolved} never solved, ${select.dropped.alwaysSolved} always solved); zero-variance groups ${fixed(select.zeroVarianceBefore, 2)} among the candidates → ${fixed(select.zeroVarianceAfter, 2)} among the kept tasks on fresh rollouts.`,
      },
    ],
  };
  if (config.orchestra.enabled) {
    const orchestra = get<OrchestraExperimentResult>("orchestra");
    experiments.orchestra = orchestra.json;
    sections.push(...orchestra.sections.map((section) => ({ ...section, title: `6. ${section.title}` })));
  }

  const infraFailures = infraFailuresByStage(evals);
  const stagesSection: Section = {
    title: "Stages",
    blocks: [
      {
        type: "table",
        columns: ["stage", "key", "cached", "seconds"],
        rows: input.outcomes.map((o) => [o.name, o.key, o.cached, Math.round(o.seconds)]),
      },
      { type: "paragraph", text: describeInfraFailures(infraFailures) },
      {
        type: "details",
        summary: "The resolved config",
        blocks: [{ type: "pre", text: JSON.stringify(config, null, 2) }],
      },
    ],
  };
  const report: RecipeReport = {
    version: 1,
    preset: config.preset,
    config,
    machine: input.machine,
    seconds: input.seconds,
    createdAt: new Date().toISOString(),
    stages: input.outcomes,
    verdicts,
    arms,
    experiments,
    infraFailures,
  };
  const html = renderPage({
    title: "agentrl: the article's recipe on the embedded lab",
    subtitle: `${config.preset} preset · training seeds ${seeds.join(", ")} · ${report.createdAt}`,
    sections: [summary, await armsSection(arms), ...(against ? [against] : []), ...sections, stagesSection],
  });
  return { report, html };
}
