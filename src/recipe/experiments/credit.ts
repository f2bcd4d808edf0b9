import type { TaskCount } from "../../eval/task-counts.ts";
import type { Section } from "../../report/html.ts";
import { barChart } from "../../report/plots.ts";
import { type CreditCurve, creditAssignmentCharts, creditCurvePoints } from "../../rl/credit-assignment.ts";
import {
  byHops,
  formatDifference,
  type HopRow,
  hopsOf,
  meanPassAtK,
  noSignalProbability,
  positiveStatus,
  seedBootstrap,
  seedPairedDifference,
  type Verdict,
} from "../analysis.ts";
import {
  CREDIT_SELECT_STAGE,
  creditEvalStageName,
  creditStageName,
  type SelectStageResult,
} from "../pipeline.ts";
import type { EvalStageResult, RlStageResult } from "../stage-runs.ts";
import {
  type ExperimentReport,
  exampleBlocks,
  figureCaption,
  finishVerdicts,
  fixed,
  measuredCause,
  poolText,
  type ReportContext,
  runSignal,
  verdictBlock,
} from "./context.ts";

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

export async function creditExperiment(context: ReportContext): Promise<ExperimentReport> {
  const { config, get, evals, n, seed, examplesOf, replicas, seeds } = context;
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
  // the verdicts: every final checkpoint on the same test tasks of the family, paired over tasks
  const tested = (model: string) => get<EvalStageResult>(creditEvalStageName(model)).counts;
  const testPass1 = (model: string) => meanPassAtK(tested(model), 1);
  const testedSeeds = (model: string) =>
    replicas<EvalStageResult>(creditEvalStageName(model)).map((result) => result.counts);
  const signalsOf = (estimator: string) =>
    replicas<RlStageResult>(creditStageName(estimator)).map((rl, r) =>
      runSignal(`${estimator}@seed${seeds[r]}`, rl),
    );
  for (const run of runs) {
    if (run.estimator === "grpo" || !grpo) continue;
    const grpoSeeds = testedSeeds("grpo");
    const difference = seedPairedDifference(
      testedSeeds(run.estimator).map((counts, r) => ({ a: grpoSeeds[r], b: counts })),
      { seed },
    );
    const status = positiveStatus(difference, context.margin);
    v.push({
      id: `${run.estimator}-beats-grpo`,
      experiment: "credit",
      claim: `turn-level credit (${run.estimator}) learns ${credit.family} better than outcome-only GRPO`,
      status,
      difference,
      seeds: difference?.seeds ?? [],
      cause: measuredCause(difference, context.margin, [...signalsOf(run.estimator), ...signalsOf("grpo")]),
      evidence: `pass@1 on ${credit.testTasks} ${credit.family} test tasks × ${credit.testN} samples after ${credit.steps} steps, at seeds ${seeds.join(", ")}: ${run.estimator} ${fixed(testPass1(run.estimator))}, grpo ${fixed(testPass1("grpo"))}, base ${fixed(testPass1("base"))} (first seed) (${formatDifference(difference, `${run.estimator} − grpo`)})`,
      ...(status === "not reproduced"
        ? {
            explanation: `Both runs start from the same base (pass@1 ${fixed(testPass1("base"))} on these tasks) and see the same tasks; ${run.estimator} ended at ${fixed(testPass1(run.estimator))} and grpo at ${fixed(testPass1("grpo"))} (first seed). Steps without any group with signal: ${run.estimator} ${run.rl.skipped.noSignal.length}, grpo ${grpo.rl.skipped.noSignal.length} of ${credit.steps}. At ${credit.steps} steps of ${credit.tasksPerStep}×${credit.groupSize} rollouts the turn-level terms did not move held-out accuracy beyond outcome-only GRPO; the example shows the per-turn rewards and advantages ${run.estimator} gave.`,
            exampleStage: creditStageName(run.estimator),
          }
        : {}),
    });
  }
  // no-signal groups by chain length, over every evaluation of the strong base at the main sampling
  // (the main test tasks and the family's test tasks), for groups of the credit runs' size; the
  // base is not trained, so its seeds are the family evaluation's sampling draws
  const SHORT = 2;
  const pooledAt = (familyCounts: readonly TaskCount[]) => {
    const seen = new Set<string>();
    return [...evals.base.counts, ...familyCounts].filter(
      (count) => !seen.has(count.taskId) && seen.add(count.taskId) && count.n >= credit.groupSize,
    );
  };
  const baseSeeds = testedSeeds("base").map(pooledAt);
  const baseCounts = baseSeeds[0];
  const pooledHops: HopRow[] = byHops(baseCounts);
  const signalUnits = baseSeeds.map((counts) =>
    counts.flatMap((count) => {
      const hopCount = hopsOf(count);
      return hopCount === null
        ? []
        : [{ long: hopCount > SHORT, p: noSignalProbability(count, credit.groupSize) }];
    }),
  );
  const mean = (values: number[]) => values.reduce((sum, x) => sum + x, 0) / Math.max(1, values.length);
  const longMinusShort = (units: readonly { long: boolean; p: number }[]) =>
    mean(units.filter((u) => u.long).map((u) => u.p)) - mean(units.filter((u) => !u.long).map((u) => u.p));
  const signalShift = signalUnits.every((units) => units.some((u) => u.long) && units.some((u) => !u.long))
    ? seedBootstrap(signalUnits, { statistic: longMinusShort, seed })
    : null;
  const short = signalUnits[0].filter((u) => !u.long).map((u) => u.p);
  const long = signalUnits[0].filter((u) => u.long).map((u) => u.p);
  v.push({
    id: "long-chains-less-signal",
    experiment: "credit",
    claim: `longer chains leave more RL groups without signal (all ${credit.groupSize} rollouts agree): ${SHORT + 1}+ hops vs 1-${SHORT}`,
    status: positiveStatus(signalShift, context.margin),
    difference: signalShift,
    seeds: signalShift?.seeds ?? [],
    cause: measuredCause(signalShift, context.margin),
    evidence: `probability that a group of ${credit.groupSize} has no signal, from the strong base's ${baseCounts.length} evaluated tasks (first seed): 1-${SHORT} hops ${fixed(mean(short), 2)} (${short.length} tasks), ${SHORT + 1}+ hops ${fixed(mean(long), 2)} (${long.length} tasks) (${formatDifference(signalShift, "long − short")}); by hops: ${pooledHops.map((row) => `${row.hops}: pass rate ${fixed(row.passRate, 2)}, p(1−p) ${fixed(row.returnVariance)} (${row.tasks} tasks)`).join(", ")}`,
    explanation: `Long chains are not harder to get signal from here: the base's pass rate by hops is ${pooledHops.map((row) => `${row.hops}: ${fixed(row.passRate, 2)}`).join(", ")}.`,
    exampleStage: creditStageName("grpo"),
  });
  finishVerdicts(v, context.margin, context.armGate);
  const json = {
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
    test: {
      tasks: credit.testTasks,
      n: credit.testN,
      passAt1: Object.fromEntries(["base", ...credit.estimators].map((model) => [model, testPass1(model)])),
    },
  };
  const section: Section = {
    title: "3. Credit assignment and variance on long chains",
    blocks: [
      {
        type: "paragraph",
        text: `One RL run per estimator from the strong base on the ${credit.family} family (${credit.steps} steps of ${credit.tasksPerStep}×${credit.groupSize} ${poolText(credit.select, credit.family, () => get<SelectStageResult>(CREDIT_SELECT_STAGE))}; reward ${credit.reward} for all: outcome-only estimators read its exact-match outcome, turn-level ones also its turn rewards, which pay each distinct gold fact once). Rollouts and the held-out tracking sample at temperature ${credit.temperature} (at 1 the base almost never completes a chain, and groups carry no signal); every run uses learning rate ${credit.learningRate}. Held-out pass@1 is tracked on ${credit.evalTasks} test tasks × ${credit.evalSamples} samples every ${credit.evalEvery} steps; the verdicts compare every run's final checkpoint (and the base) on the same ${credit.testTasks} ${credit.family} test tasks × ${credit.testN} samples at the main evaluation's sampling (temperature ${config.eval.temperature}, top-p ${config.eval.topP}, tool noise ${config.eval.noise}), paired over tasks.`,
      },
      {
        type: "svg",
        svg: charts.heldout,
        caption: figureCaption(
          config,
          `Held-out pass@1 during RL (temperature ${credit.temperature}), one run per estimator.`,
        ),
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
  };
  return { key: "credit", json, verdicts: v, sections: [section] };
}
