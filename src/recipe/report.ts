/**
 * The recipe report: one section per experiment of the seed, each built by its own module in
 * experiments/ (its numbers, its verdicts computed from them by analysis.ts, its plots, tables and
 * example trajectories); this file assembles them with the summary, the stages and the config,
 * and writes `report.json` holding every number the page shows.
 *
 * A verdict is "reproduced" or "not reproduced" only when the 95% interval of the relevant
 * difference excludes zero; otherwise it is "inconclusive" and says the run is too small to call.
 */
import type { OrchestraExperimentResult } from "../orchestra/experiment.ts";
import { type Block, type Cell, renderPage, type Section } from "../report/html.ts";
import { VERDICT_STATUSES, type Verdict } from "./analysis.ts";
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
  statusCell,
} from "./experiments/context.ts";
import { creditExperiment } from "./experiments/credit.ts";
import { dataFirstExperiment } from "./experiments/data-first.ts";
import { noiseExperiment } from "./experiments/noise.ts";
import { describeInfraFailures, infraFailuresByStage } from "./infra-failures.ts";
import { MAIN_STARTS, resultOf, type SelectStageResult } from "./pipeline.ts";
import type { EvalStageResult, RlStageResult } from "./stage-runs.ts";
import type { StageOutcome, StageResults } from "./stages.ts";

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
      { type: "paragraph", text: `${v.experiment}: ${v.claim}. ${v.evidence}.` },
      ...(v.explanation ? [{ type: "paragraph" as const, text: v.explanation }] : []),
      ...(v.exampleStage
        ? exampleBlocks(`example from ${v.exampleStage}`, context.examplesOf(v.exampleStage).slice(0, 1))
        : []),
    ]),
  };
}

export async function buildReport(input: BuildInput): Promise<{ report: RecipeReport; html: string }> {
  const { config, results } = input;
  const get = <T>(name: string) => resultOf<T>(results, name);
  const evals: Record<string, EvalStageResult> = {
    base: get("eval-base-strong"),
    weak: get("eval-base-weak"),
    "sft-real": get("eval-sft-real"),
    "sft-stitched": get("eval-sft-stitched"),
  };
  for (const start of MAIN_STARTS) evals[`rl-${start}`] = get(`eval-rl-${start}`);
  const seed = config.seed;
  const questions = new Map<string, string>();
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
  };
  const experiments: Record<string, unknown> = {};
  const verdicts: Verdict[] = [];
  const sections: Section[] = [];
  for (const experiment of EXPERIMENTS) {
    const part = await experiment(context);
    experiments[part.key] = part.json;
    verdicts.push(...part.verdicts);
    sections.push(...part.sections);
  }
  const against = againstSection(verdicts, context);

  // ---- summary, selection, stages, config ----------------------------------------------------------------
  const select = get<SelectStageResult>("select");
  experiments.selection = select;
  const summary: Section = {
    title: "Summary",
    blocks: [
      {
        type: "paragraph",
        text: `Preset ${config.preset}, seed ${config.seed}: ${input.outcomes.every((o) => o.cached) ? "this report was rebuilt from cached stages;" : `this run ${(input.seconds / 60).toFixed(1)} min,`} the stages' own compute ${(input.outcomes.reduce((sum, o) => sum + o.seconds, 0) / 60).toFixed(1)} min (cached ones as first measured), on ${input.machine.cpus} × ${input.machine.cpuModel} (${input.machine.memoryGiB} GiB, Node ${input.machine.node}). Each claim below is checked on the numbers of its section; "inconclusive" means the 95% interval of the difference includes zero at this size, not that the claim is false.${config.preset === "quick" ? " The quick preset exists to exercise every stage: expect most verdicts to be inconclusive." : ""}`,
      },
      {
        type: "table",
        columns: ["experiment", "claim", "status", "evidence"],
        rows: verdicts.map((v) => [v.experiment, v.claim, statusCell(v.status), v.evidence] as Cell[]),
      },
      {
        type: "paragraph",
        text: `Counts: ${VERDICT_STATUSES.map((status) => `${verdicts.filter((v) => v.status === status).length} ${status}`).join(", ")}. A claim is called "not reproduced" when its interval lies below zero or entirely below the margin of ${config.margin} (the smallest effect the claim is about: the run rules out an effect that large). An inconclusive claim's evidence ends with its interval's half-width and roughly how many tasks would call it.`,
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
    experiments,
    infraFailures,
  };
  const html = renderPage({
    title: "agentrl: the article's recipe on the embedded lab",
    subtitle: `${config.preset} preset · seed ${config.seed} · ${report.createdAt}`,
    sections: [summary, ...(against ? [against] : []), ...sections, stagesSection],
  });
  return { report, html };
}
