/**
 * The recipe report: one section per experiment of the seed, each with its plots (inline SVG from
 * vega-lite), tables, example trajectories and verdicts computed from the measured numbers
 * (analysis.ts); plus `report.json` holding every number the page shows.
 *
 * A verdict is "reproduced" or "not reproduced" only when the 95% interval of the relevant
 * difference excludes zero; otherwise it is "inconclusive" and says the run is too small to call.
 */
import type { PassAtKCurve } from "../eval/passk.ts";
import { passAtKChart } from "../eval/passk-chart.ts";
import type { TaskCount } from "../eval/task-counts.ts";
import type { OrchestraExperimentResult } from "../orchestra/experiment.ts";
import { type Block, type Cell, formatNumber, renderPage, type Section } from "../report/html.ts";
import { barChart, lineChart } from "../report/plots.ts";
import { type CreditCurve, creditAssignmentCharts, creditCurvePoints } from "../rl/credit-assignment.ts";
import {
  boundStatus,
  byHops,
  crossDifference,
  formatDifference,
  gainShrinkage,
  groupDifference,
  type HopRow,
  meanPassAtK,
  type PairedDifference,
  pairedDifference,
  positiveStatus,
  proportionDifference,
  taskPassAtK,
  type Verdict,
  zeroSignalByHops,
} from "./analysis.ts";
import type { RecipeConfig } from "./config.ts";
import { type ExampleTrajectory, rlExamples } from "./examples.ts";
import {
  type BoundaryStageResult,
  creditStageName,
  type DataStageResult,
  MAIN_STARTS,
  noiseEvalStageName,
  noiseRlStageName,
  resultOf,
  type SelectStageResult,
  WITHHELD_TEMPLATE,
} from "./pipeline.ts";
import type { EvalStageResult, RlStageResult, SftStageResult } from "./stage-runs.ts";
import type { StageOutcome, StageResults } from "./stages.ts";

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
}

interface BuildInput {
  config: RecipeConfig;
  results: StageResults;
  outcomes: StageOutcome[];
  seconds: number;
  machine: MachineInfo;
}

const isWithheld = (count: { template?: string }) => count.template === WITHHELD_TEMPLATE;
const notWithheld = (count: { template?: string }) => !isWithheld(count);

function fixed(value: number | null | undefined, digits = 3): string {
  return value === null || value === undefined || Number.isNaN(value) ? "n/a" : value.toFixed(digits);
}

function verdictBlock(verdicts: readonly Verdict[]): Block {
  return {
    type: "table",
    caption: "Verdicts (computed from the numbers above)",
    columns: ["claim", "status", "evidence"],
    rows: verdicts.map((v) => [v.claim, v.status.toUpperCase(), v.evidence]),
  };
}

function exampleBlocks(title: string, examples: readonly ExampleTrajectory[]): Block[] {
  if (examples.length === 0) return [];
  return [
    {
      type: "details",
      summary: `${title}: ${examples.length} real trajectories (turns, tool calls, tool statuses, per-turn rewards and advantages)`,
      blocks: examples.flatMap((example): Block[] => [
        {
          type: "paragraph",
          text: `${example.taskId} (${example.family}), RL step ${example.step}: ${example.correct ? "CORRECT" : "wrong"}, answer ${example.answer ?? "none"}, outcome reward ${fixed(example.outcomeReward, 2)}, ended by ${example.endReason}; its group: ${example.group.correct}/${example.group.size} correct.${example.note ? ` (${example.note})` : ""}`,
        },
        { type: "pre", text: example.question },
        {
          type: "table",
          columns: ["turn", "action", "tool status", "observation", "turn rewards", "advantage"],
          rows: example.turns.map((turn) => [
            turn.index,
            turn.action,
            turn.status === null ? "" : `${turn.status}${turn.injected ? " (injected)" : ""}`,
            turn.observation,
            Object.entries(turn.rewards)
              .map(([name, value]) => `${name}=${value === null ? "null" : formatNumber(value, 2)}`)
              .join(" "),
            turn.advantage,
          ]),
        },
      ]),
    },
  ];
}

/** An RL stage's stored history in the shape of the credit-assignment experiment's curves. */
function creditCurveOf(
  estimator: string,
  rl: RlStageResult,
): Pick<CreditCurve, "estimator" | "train" | "heldout"> {
  return {
    estimator,
    heldout: rl.boundary,
    train: creditCurvePoints((key) => new Map(rl.history[key] ?? []), Object.keys(rl.history)),
  };
}

function figureCaption(config: RecipeConfig, text: string): string {
  return `${text} Seed ${config.seed}, one run per curve (${config.preset} preset).`;
}

function curveAt(curve: PassAtKCurve, k: number): number | null {
  return curve.find((point) => point.k === k)?.passAtK ?? null;
}

/** pass@k on the withheld template: the eval's own per-template curve. */
function withheldCurve(evalResult: EvalStageResult): PassAtKCurve {
  return evalResult.curves.templates[WITHHELD_TEMPLATE] ?? [];
}

function mainCurve(evalResult: EvalStageResult): PassAtKCurve {
  return evalResult.curves.overall;
}

/**
 * The report's pass@1 comparisons of two evaluation stages (b − a, paired over tasks). One table
 * for the report's verdicts and for `agentrl recipe compare`, which pools them over runs.
 */
export const PASS1_COMPARISONS = {
  rlGain: {
    label: "pass@1 RL − base (strong base, test tasks)",
    a: "eval-base-strong",
    b: "eval-rl-base",
    withheld: false,
  },
  strongVsWeak: {
    label: "pass@1 RL(strong) − RL(weak)",
    a: "eval-rl-weak",
    b: "eval-rl-base",
    withheld: true,
  },
  realVsStitchedAfterRl: {
    label: "pass@1 (SFT-real+RL) − (SFT-stitched+RL)",
    a: "eval-rl-sft-stitched",
    b: "eval-rl-sft-real",
    withheld: true,
  },
  realVsStitchedAfterSft: {
    label: "pass@1 SFT-real − SFT-stitched",
    a: "eval-sft-stitched",
    b: "eval-sft-real",
    withheld: true,
  },
} as const;

export type Pass1Comparison = (typeof PASS1_COMPARISONS)[keyof typeof PASS1_COMPARISONS];

/** One of PASS1_COMPARISONS on the counts of its two stages (`withheld: false` leaves the withheld template out). */
export function pass1Difference(
  comparison: Pass1Comparison,
  countsOf: (stage: string) => readonly TaskCount[],
  seed: number,
): PairedDifference | null {
  return pairedDifference(
    countsOf(comparison.a),
    countsOf(comparison.b),
    undefined,
    seed,
    comparison.withheld ? undefined : notWithheld,
  );
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
  const n = config.eval.n;
  const seed = config.seed;
  const pass1 = (comparison: Pass1Comparison) =>
    pass1Difference(comparison, (stage) => get<EvalStageResult>(stage).counts, seed);
  const questions = new Map<string, string>();
  const examplesOf = (stage: string) => {
    const rl = get<RlStageResult>(stage);
    return rlExamples({
      directory: rl.directory,
      runId: rl.runId,
      estimator: rl.estimator,
      count: config.examples,
      seed,
      questions,
    });
  };
  const experiments: Record<string, unknown> = {};
  const verdicts: Verdict[] = [];
  const sections: Section[] = [];

  // ---- 1. boundary ---------------------------------------------------------------------------------
  {
    const base = evals.base;
    const rl = evals["rl-base"];
    const boundary = get<BoundaryStageResult>("boundary");
    const gain1 = pass1(PASS1_COMPARISONS.rlGain);
    const gainN = pairedDifference(base.counts, rl.counts, (c) => taskPassAtK(c, n), seed, notWithheld);
    const shrink = gainShrinkage(base.counts, rl.counts, n, seed, notWithheld);
    const withheld: Record<string, number | null> = {};
    for (const [name, result] of Object.entries(evals))
      withheld[name] = meanPassAtK(result.counts, n, isWithheld);
    const solvable = boundary.solvable[0];
    const v: Verdict[] = [
      {
        experiment: "boundary",
        claim: "RL raises pass@1 over its base",
        status: positiveStatus(gain1),
        difference: gain1,
        evidence: formatDifference(gain1, "pass@1 RL − base"),
      },
      {
        experiment: "boundary",
        claim: `RL's gain shrinks as k grows (the base catches up by k = ${n})`,
        status: positiveStatus(shrink),
        difference: shrink,
        evidence: `${formatDifference(shrink, `(gain at k=1) − (gain at k=${n})`)}; ${formatDifference(gainN, `pass@${n} RL − base`)}`,
      },
      {
        experiment: "boundary",
        claim: `RL alone cannot reach the template the base never saw (${WITHHELD_TEMPLATE}): pass@${n} stays 0`,
        status:
          withheld["rl-base"] === null
            ? "not measured"
            : withheld["rl-base"] === 0 && withheld.base === 0
              ? "reproduced"
              : "not reproduced",
        evidence: `pass@${n} on ${WITHHELD_TEMPLATE}: base ${fixed(withheld.base)}, RL ${fixed(withheld["rl-base"])}`,
      },
    ];
    if (solvable) {
      const rlSolvable = solvable.both + solvable.onlyB;
      const outside = rlSolvable === 0 ? 0 : solvable.onlyB / rlSolvable;
      v.push({
        experiment: "boundary",
        claim:
          "RL's solvable set lies (almost) inside the base's: at most 10% of the tasks RL solves are new",
        status: rlSolvable === 0 ? "not measured" : outside <= 0.1 ? "reproduced" : "not reproduced",
        evidence: `at k = ${n}: solved by both ${solvable.both}, base only ${solvable.onlyA}, RL only ${solvable.onlyB} (${(100 * outside).toFixed(0)}% of RL's), neither ${solvable.neither}; with few samples per task a base-solvable task can look unsolved`,
      });
    }
    verdicts.push(...v);
    experiments.boundary = {
      passAt1: { base: curveAt(mainCurve(base), 1), rl: curveAt(mainCurve(rl), 1) },
      passAtN: { k: n, base: curveAt(mainCurve(base), n), rl: curveAt(mainCurve(rl), n) },
      gainAt1: gain1,
      gainAtN: gainN,
      gainShrinkage: shrink,
      withheldPassAtN: withheld,
      solvable,
      perplexity: boundary.perplexity,
      notes: boundary.notes,
      curves: { base: base.curves, rl: rl.curves },
    };
    const svg = await passAtKChart(
      [
        { name: "base (strong)", curve: mainCurve(base) },
        { name: "RL from base", curve: mainCurve(rl) },
      ],
      "pass@k: base vs RL (all test tasks)",
    );
    sections.push({
      title: "1. Boundary: does RL sharpen what the base can already sample?",
      blocks: [
        {
          type: "paragraph",
          text: `The same ${base.counts.length} test tasks (${base.counts.filter(isWithheld).length} of them from ${WITHHELD_TEMPLATE}, the template the bases never saw), ${n} samples each at temperature ${config.eval.temperature} / top-p ${config.eval.topP}, tool noise ${config.eval.noise}. RL: ${config.rl.estimator}, reward ${config.rl.reward}, ${config.rl.steps} steps of ${config.rl.tasksPerStep}×${config.rl.groupSize} rollouts on the ${get<SelectStageResult>("select").taskIds.length} tasks model-aware selection kept (a small pool is trained on again and again: RL can then lose accuracy elsewhere). Read it as the paper does: RL above the base at k = 1 and the curves meeting (or crossing) at large k means RL sharpened the base's own distribution.`,
        },
        { type: "svg", svg, caption: figureCaption(config, "pass@k with 95% bootstrap bands over tasks.") },
        {
          type: "table",
          caption: "Perplexity of correct trajectories (policy tokens) under each model",
          columns: ["trajectories of", "scored by", "perplexity", "tokens", "trajectories"],
          rows: boundary.perplexity.map((p) => [
            p.trajectoriesOf,
            p.scoredBy,
            p.perplexity,
            p.tokens,
            p.scored,
          ]),
        },
        {
          type: "table",
          caption: `pass@${n} on the withheld template ${WITHHELD_TEMPLATE}, every model`,
          columns: ["model", `pass@${n}`],
          rows: Object.entries(withheld).map(([name, value]) => [name, value]),
        },
        ...(boundary.notes.length > 0 ? [{ type: "list" as const, items: boundary.notes }] : []),
        verdictBlock(v),
        ...exampleBlocks("RL from the strong base", examplesOf("rl-base")),
      ],
    });
  }

  // ---- 2. data first ---------------------------------------------------------------------------------
  {
    const real = get<SftStageResult>("sft-real");
    const stitched = get<SftStageResult>("sft-stitched");
    const dataReal = get<DataStageResult>("data-real");
    const dataStitched = get<DataStageResult>("data-stitched");
    const afterRl = pass1(PASS1_COMPARISONS.realVsStitchedAfterRl);
    const afterSft = pass1(PASS1_COMPARISONS.realVsStitchedAfterSft);
    const withheldReal = meanPassAtK(evals["sft-real"].counts, n, isWithheld);
    const withheldStitched = meanPassAtK(evals["sft-stitched"].counts, n, isWithheld);
    const v: Verdict[] = [
      {
        experiment: "data-first",
        claim: `SFT on real trajectories puts the unseen template into reach (pass@${n} on ${WITHHELD_TEMPLATE} rises from 0)`,
        status:
          withheldReal === null
            ? "not measured"
            : withheldReal > 0 && (meanPassAtK(evals.base.counts, n, isWithheld) ?? 0) === 0
              ? "reproduced"
              : "not reproduced",
        evidence: `pass@${n} on ${WITHHELD_TEMPLATE}: base ${fixed(meanPassAtK(evals.base.counts, n, isWithheld))}, SFT-real ${fixed(withheldReal)}, SFT-stitched ${fixed(withheldStitched)}`,
      },
      {
        experiment: "data-first",
        claim: "SFT-real then RL beats SFT-stitched then RL (pass@1 under tool noise)",
        status: positiveStatus(afterRl),
        difference: afterRl,
        evidence: `${formatDifference(afterRl, "pass@1 (real+RL) − (stitched+RL)")}; before RL: ${formatDifference(afterSft, "real − stitched")}`,
      },
    ];
    verdicts.push(...v);
    experiments.dataFirst = {
      datasets: { real: dataReal, stitched: dataStitched },
      sft: { real, stitched },
      passAt1: Object.fromEntries(
        ["base", "sft-real", "sft-stitched", "rl-sft-real", "rl-sft-stitched"].map((name) => [
          name,
          curveAt(mainCurve(evals[name]), 1),
        ]),
      ),
      withheldPassAtN: { real: withheldReal, stitched: withheldStitched },
      afterRl,
      afterSft,
    };
    const curves = await passAtKChart(
      ["base", "sft-real", "sft-stitched", "rl-sft-real", "rl-sft-stitched"].map((name) => ({
        name,
        curve: mainCurve(evals[name]),
        band: false,
      })),
      "pass@k under tool noise: SFT data, then the same RL",
    );
    const withheldSvg = await lineChart({
      title: `pass@k on ${WITHHELD_TEMPLATE} (never in pretraining)`,
      series: ["base", "sft-real", "sft-stitched", "rl-sft-real", "rl-sft-stitched", "rl-base"].map(
        (name) => ({
          name,
          points: withheldCurve(evals[name]).map((point) => ({ x: point.k, y: point.passAtK })),
        }),
      ),
      xLog: true,
      xLabel: "k (samples)",
      yLabel: "pass@k",
      yDomain: [0, 1],
    });
    sections.push({
      title: "2. Data first: SFT on real vs stitched trajectories, each followed by the same RL",
      blocks: [
        {
          type: "paragraph",
          text: `Real: ${dataReal.trajectories} correct trajectories of the scripted expert through the episode loop with ${config.data.noise} tool noise (failures, retries and all). Stitched: ${dataStitched.trajectories} trajectories assembled from single-step templates with clean observations. Both over the same ${config.data.tasks} train tasks (${Math.round(config.data.withheldShare * 100)}% from ${WITHHELD_TEMPLATE}); ${config.sft.steps} SFT steps each from the strong base, then the RL of section 1. Evaluated with tool noise ${config.eval.noise}.${config.sft.models ? ` The SFT models were given in the config (sft.models: ${config.sft.models.real}, ${config.sft.models.stitched}; ${real.steps} and ${stitched.steps} steps on ${real.trajectories} and ${stitched.trajectories} trajectories, per their metadata); the dataset counts above are this config's data, not theirs.` : ""}`,
        },
        { type: "svg", svg: curves, caption: figureCaption(config, "pass@k on all test tasks.") },
        {
          type: "svg",
          svg: withheldSvg,
          caption: figureCaption(config, `pass@k on the ${WITHHELD_TEMPLATE} test tasks only.`),
        },
        {
          type: "table",
          caption: "SFT runs",
          columns: [
            "data",
            "trajectories",
            "steps",
            "final loss",
            "held-out loss before",
            "held-out loss after",
          ],
          rows: [
            [
              "real",
              real.trajectories,
              real.steps,
              real.finalLoss,
              real.initialHeldoutLoss,
              real.finalHeldoutLoss,
            ],
            [
              "stitched",
              stitched.trajectories,
              stitched.steps,
              stitched.finalLoss,
              stitched.initialHeldoutLoss,
              stitched.finalHeldoutLoss,
            ],
          ],
        },
        verdictBlock(v),
        ...exampleBlocks("RL after SFT-real", examplesOf("rl-sft-real")),
        ...exampleBlocks("RL after SFT-stitched", examplesOf("rl-sft-stitched")),
      ],
    });
  }

  // ---- 3. credit assignment and variance ----------------------------------------------------------------
  {
    const credit = config.credit;
    const runs = credit.estimators.map((estimator) => ({
      estimator,
      rl: get<RlStageResult>(creditStageName(estimator)),
    }));
    const charts = await creditAssignmentCharts(
      runs.map(({ estimator, rl }) => creditCurveOf(estimator, rl)),
      credit.family,
    );
    const hops: HopRow[] = byHops(evals.base.counts);
    const variance = await barChart({
      title: "return variance and zero-signal groups by chain length (strong base)",
      bars: hops.flatMap((row) => [
        { category: `${row.hops} hops`, value: row.returnVariance, group: "variance p(1−p)" },
        { category: `${row.hops} hops`, value: row.zeroVariance, group: "no-signal share" },
        { category: `${row.hops} hops`, value: row.passRate, group: "pass rate" },
      ]),
      xLabel: "chain length",
      yLabel: "value",
    });
    const grpo = runs.find((run) => run.estimator === "grpo");
    const last = (rl: RlStageResult) => rl.boundary[rl.boundary.length - 1];
    const first = (rl: RlStageResult) => rl.boundary[0];
    const v: Verdict[] = [];
    for (const run of runs) {
      if (run.estimator === "grpo" || !grpo || !last(run.rl) || !last(grpo.rl)) continue;
      const difference = proportionDifference(last(grpo.rl).passAt1, last(run.rl).passAt1, credit.evalTasks);
      v.push({
        experiment: "credit",
        claim: `turn-level credit (${run.estimator}) learns ${credit.family} better than outcome-only GRPO`,
        status: positiveStatus(difference),
        difference: difference,
        evidence: `final held-out pass@1 ${run.estimator} ${fixed(last(run.rl).passAt1)} vs grpo ${fixed(last(grpo.rl).passAt1)} (${formatDifference(difference, "Δ")}, tasks as units)`,
      });
    }
    const shortest = hops[0];
    const longest = hops[hops.length - 1];
    const signalShift =
      hops.length >= 2
        ? groupDifference(
            zeroSignalByHops(evals.base.counts, shortest.hops),
            zeroSignalByHops(evals.base.counts, longest.hops),
            seed,
          )
        : null;
    v.push({
      experiment: "credit",
      claim: "longer chains leave more RL groups without signal (all rollouts agree)",
      status: positiveStatus(signalShift),
      difference: signalShift,
      evidence: `zero-variance task fraction of the strong base by hops: ${hops.map((row) => `${row.hops}: ${fixed(row.zeroVariance, 2)}`).join(", ")} (${formatDifference(signalShift, `${longest?.hops} hops − ${shortest?.hops} hops`)}); per-task return variance p(1−p): ${hops.map((row) => `${row.hops}: ${fixed(row.returnVariance)}`).join(", ")}`,
    });
    verdicts.push(...v);
    experiments.credit = {
      family: credit.family,
      runs: runs.map(({ estimator, rl }) => ({
        estimator,
        reward: rl.reward,
        boundary: rl.boundary,
        history: rl.history,
        start: first(rl) ?? null,
        end: last(rl) ?? null,
        skipped: rl.skipped,
        seconds: rl.seconds,
      })),
      byHops: hops,
    };
    sections.push({
      title: "3. Credit assignment and variance on long chains",
      blocks: [
        {
          type: "paragraph",
          text: `One RL run per estimator from the strong base on the ${credit.family} family (${credit.steps} steps of ${credit.tasksPerStep}×${credit.groupSize}; reward ${credit.reward} for all: outcome-only estimators read its exact-match outcome, turn-level ones also its turn rewards, which pay each distinct gold fact once). Held-out pass@1 is tracked on ${credit.evalTasks} test tasks × ${credit.evalSamples} samples every ${credit.evalEvery} steps.`,
        },
        {
          type: "svg",
          svg: charts.heldout,
          caption: figureCaption(config, "Held-out pass@1 during RL (temperature 1), one run per estimator."),
        },
        {
          type: "svg",
          svg: charts.train,
          caption: figureCaption(config, "Batch pass@1 of the training rollouts."),
        },
        {
          type: "svg",
          svg: charts.toolCalls,
          caption: figureCaption(config, "Tool calls per episode: reward hacking by tool spam shows here."),
        },
        {
          type: "svg",
          svg: charts.variance,
          caption: figureCaption(
            config,
            "Variance of the return over each step's rollouts, by chain length, averaged over the run.",
          ),
        },
        {
          type: "table",
          caption: "Estimators: start and end of the held-out tracking",
          columns: [
            "estimator",
            "reward",
            "pass@1 start",
            "pass@1 end",
            `pass@${credit.evalSamples} start`,
            `pass@${credit.evalSamples} end`,
            "steps without signal",
            "seconds",
          ],
          rows: runs.map(({ estimator, rl }) => [
            estimator,
            rl.reward,
            first(rl)?.passAt1,
            last(rl)?.passAt1,
            first(rl)?.passAtK,
            last(rl)?.passAtK,
            rl.skipped.noSignal.length,
            Math.round(rl.seconds),
          ]),
        },
        {
          type: "svg",
          svg: variance,
          caption: figureCaption(
            config,
            `Per-task statistics of the strong base's evaluation (${n} samples per task), grouped by chain length.`,
          ),
        },
        {
          type: "table",
          caption: "By chain length (strong base)",
          columns: ["hops", "tasks", "pass rate", "return variance", "zero-variance fraction"],
          rows: hops.map((row) => [row.hops, row.tasks, row.passRate, row.returnVariance, row.zeroVariance]),
        },
        verdictBlock(v),
        ...runs.flatMap(({ estimator }) =>
          exampleBlocks(`credit run ${estimator}`, examplesOf(creditStageName(estimator))),
        ),
      ],
    });
  }

  // ---- 4. tool noise -----------------------------------------------------------------------------------
  {
    const noise = config.noise;
    const models = ["base", "naive", "aware"] as const;
    const table = models.flatMap((model) =>
      noise.rates.map((rate) => {
        const result = get<Record<string, EvalStageResult>>(noiseEvalStageName(model))[String(rate)];
        return {
          model,
          rate,
          counts: result.counts,
          passAt1: curveAt(result.curves.overall, 1),
          retry: result.stats.retry_after_failure_rate,
          toolCalls: result.stats.mean_tool_calls,
          failure: result.stats.tool_failure_rate,
        };
      }),
    );
    const at = (model: string, rate: number) =>
      table.find((row) => row.model === model && row.rate === rate)!;
    const high = Math.max(...noise.rates);
    const low = Math.min(...noise.rates);
    const awareVsNaive = pairedDifference(
      at("naive", high).counts,
      at("aware", high).counts,
      undefined,
      seed,
    );
    const baseDrop = pairedDifference(at("base", high).counts, at("base", low).counts, undefined, seed);
    const v: Verdict[] = [
      {
        experiment: "noise",
        claim: `tool noise costs accuracy (base: noise ${low} vs ${high})`,
        status: positiveStatus(baseDrop),
        difference: baseDrop,
        evidence: formatDifference(baseDrop, `pass@1 at ${low} − at ${high}`),
      },
      {
        experiment: "noise",
        claim: `noise-aware turn rewards beat naive ones under noise ${high}`,
        status: positiveStatus(awareVsNaive),
        difference: awareVsNaive,
        evidence: `${formatDifference(awareVsNaive, "pass@1 aware − naive")}; retries after a tool error: aware ${fixed(at("aware", high).retry)}, naive ${fixed(at("naive", high).retry)}, base ${fixed(at("base", high).retry)}`,
      },
    ];
    verdicts.push(...v);
    experiments.noise = {
      trainRate: noise.trainRate,
      rows: table.map(({ counts: _counts, ...row }) => row),
      awareVsNaive,
      baseDrop,
    };
    const accuracy = await lineChart({
      title: "pass@1 vs tool noise",
      series: models.map((model) => ({
        name: model === "base" ? "base" : `RL, ${model} turn rewards`,
        points: noise.rates.map((rate) => ({ x: rate, y: at(model, rate).passAt1 ?? 0 })),
      })),
      xLabel: "tool failure rate",
      yLabel: "pass@1",
      yDomain: [0, 1],
    });
    const retries = await barChart({
      title: "retries after a tool error",
      bars: table
        .filter((row) => row.rate > 0 && row.retry !== null)
        .map((row) => ({ category: `noise ${row.rate}`, value: row.retry ?? 0, group: row.model })),
      xLabel: "tool failure rate",
      yLabel: "share of failed calls retried",
    });
    sections.push({
      title: "4. Tool noise: naive vs noise-aware turn rewards",
      blocks: [
        {
          type: "paragraph",
          text: `Two RL runs from the strong base (${noise.estimator}, ${noise.steps} steps of ${noise.tasksPerStep}×${noise.groupSize}, bridge/arithmetic/chain tasks) under ${noise.trainRate} tool noise: the naive reward (${noise.naiveReward}) punishes a turn whose tool failed; the noise-aware one (${noise.awareReward}) does not score the tool's outcome of an injected failure, only what the policy does next. Each model is evaluated on ${noise.evalTasks} test tasks × ${noise.evalN} samples at noise ${noise.rates.join(" / ")}.`,
        },
        { type: "svg", svg: accuracy, caption: figureCaption(config, "pass@1 by evaluation noise rate.") },
        {
          type: "svg",
          svg: retries,
          caption: figureCaption(config, "Share of failed tool calls followed by another tool call."),
        },
        {
          type: "table",
          caption: "Every model at every noise rate",
          columns: [
            "model",
            "noise",
            "pass@1",
            "retry after error",
            "tool calls / episode",
            "tool failure rate",
          ],
          rows: table.map((row) => [row.model, row.rate, row.passAt1, row.retry, row.toolCalls, row.failure]),
        },
        verdictBlock(v),
        ...exampleBlocks("noise-aware RL under noise", examplesOf(noiseRlStageName("aware"))),
      ],
    });
  }

  // ---- 5. choosing the base -------------------------------------------------------------------------------
  {
    const starts = [
      { name: "strong base", start: evals.base, rl: evals["rl-base"], stage: "rl-base" },
      { name: "weak base", start: evals.weak, rl: evals["rl-weak"], stage: "rl-weak" },
      { name: "SFT-real", start: evals["sft-real"], rl: evals["rl-sft-real"], stage: "rl-sft-real" },
      {
        name: "SFT-stitched",
        start: evals["sft-stitched"],
        rl: evals["rl-sft-stitched"],
        stage: "rl-sft-stitched",
      },
    ];
    const rows = starts.map(({ name, start, rl, stage }) => {
      const startAtN = meanPassAtK(start.counts, n) ?? 0;
      const rlAt1 = meanPassAtK(rl.counts, 1) ?? 0;
      return {
        name,
        startPassAt1: meanPassAtK(start.counts, 1),
        startPassAtN: startAtN,
        rlPassAt1: rlAt1,
        rlPassAtN: meanPassAtK(rl.counts, n),
        /** RL's pass@1 − the start's pass@n, paired over tasks: above 0 breaks the bound. */
        aboveBound: crossDifference(
          { counts: start.counts, value: (c) => taskPassAtK(c, n) },
          { counts: rl.counts, value: (c) => taskPassAtK(c, 1) },
          seed,
        ),
        skipped: get<RlStageResult>(stage).skipped,
      };
    });
    const strongVsWeak = pass1(PASS1_COMPARISONS.strongVsWeak);
    const v: Verdict[] = [
      {
        experiment: "base",
        claim: "RL from the stronger base ends higher than RL from the weaker base",
        status: positiveStatus(strongVsWeak),
        difference: strongVsWeak,
        evidence: `${formatDifference(strongVsWeak, "pass@1 RL(strong) − RL(weak)")}; RL steps without any group with signal: strong ${rows[0].skipped.noSignal.length}, weak ${rows[1].skipped.noSignal.length} of ${config.rl.steps}`,
      },
      {
        experiment: "base",
        claim: `the start's pass@${n} bounds where RL ends (RL pass@1 ≤ start pass@${n})`,
        status: boundStatus(rows.map((row) => row.aboveBound)),
        evidence: rows
          .map(
            (row) =>
              `${row.name}: start pass@${n} ${fixed(row.startPassAtN)} → RL pass@1 ${fixed(row.rlPassAt1)} (${formatDifference(row.aboveBound, "RL pass@1 − start")})`,
          )
          .join("; "),
      },
    ];
    verdicts.push(...v);
    experiments.base = { rows, strongVsWeak };
    const scatter = await barChart({
      title: `start pass@${n} vs RL's pass@1`,
      bars: rows.flatMap((row) => [
        { category: row.name, value: row.startPassAtN, group: `start pass@${n}` },
        { category: row.name, value: row.rlPassAt1, group: "after RL pass@1" },
        { category: row.name, value: row.startPassAt1 ?? 0, group: "start pass@1" },
      ]),
      xLabel: "start of RL",
      yLabel: "rate",
      yDomain: [0, 1],
    });
    sections.push({
      title: "5. Choosing the base: RL from the weaker vs the stronger base",
      blocks: [
        {
          type: "paragraph",
          text: `The same RL run (section 1) from four starts. If RL only sharpens, its pass@1 ends at or below the start's pass@${n}: the base's large-k pass rate predicts where RL can go, and a base that rarely samples a correct path gives RL groups without signal.`,
        },
        {
          type: "svg",
          svg: scatter,
          caption: figureCaption(config, "Start and end of the same RL from each start."),
        },
        {
          type: "table",
          columns: [
            "start",
            "start pass@1",
            `start pass@${n}`,
            "RL pass@1",
            `RL pass@${n}`,
            `RL pass@1 − start pass@${n} [95% CI]`,
            "RL steps without signal",
          ],
          rows: rows.map((row) => [
            row.name,
            row.startPassAt1,
            row.startPassAtN,
            row.rlPassAt1,
            row.rlPassAtN,
            formatDifference(row.aboveBound, "").trim(),
            row.skipped.noSignal.length,
          ]),
        },
        verdictBlock(v),
        ...exampleBlocks("RL from the weak base", examplesOf("rl-weak")),
      ],
    });
  }

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
        rows: verdicts.map((v) => [v.experiment, v.claim, v.status.toUpperCase(), v.evidence] as Cell[]),
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

  const stagesSection: Section = {
    title: "Stages",
    blocks: [
      {
        type: "table",
        columns: ["stage", "key", "cached", "seconds"],
        rows: input.outcomes.map((o) => [o.name, o.key, o.cached, Math.round(o.seconds)]),
      },
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
  };
  const html = renderPage({
    title: "agentrl: the seed's recipe on the embedded lab",
    subtitle: `${config.preset} preset · seed ${config.seed} · ${report.createdAt}`,
    sections: [summary, ...sections, stagesSection],
  });
  return { report, html };
}
