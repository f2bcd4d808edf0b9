import type { Section } from "../../report/html.ts";
import { barChart, lineChart } from "../../report/plots.ts";
import { formatDifference, positiveStatus, seedPairedDifference, type Verdict } from "../analysis.ts";
import {
  NOISE_SELECT_STAGE,
  noiseEvalN,
  noiseEvalStageName,
  noiseJudgedRate,
  noiseRlStageName,
  type SelectStageResult,
} from "../pipeline.ts";
import type { EvalStageResult, RlStageResult } from "../stage-runs.ts";
import {
  curveAt,
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

export async function noiseExperiment(context: ReportContext): Promise<ExperimentReport> {
  const { config, get, seed, examplesOf, replicas, seeds } = context;
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
  const at = (model: string, rate: number) => table.find((row) => row.model === model && row.rate === rate)!;
  const high = Math.max(...noise.rates);
  const low = Math.min(...noise.rates);
  // where the runs are judged: whether each learned (arms.ts) and aware against naive
  const judged = noiseJudgedRate(noise);
  const samples = noise.rates.map((rate) => `${noiseEvalN(noise, rate)} at ${rate}`).join(", ");
  const countsAt = (model: string, rate: number) =>
    replicas<Record<string, EvalStageResult>>(noiseEvalStageName(model)).map(
      (byRate) => byRate[String(rate)].counts,
    );
  const seedPairs = (
    a: (typeof models)[number],
    rateA: number,
    b: (typeof models)[number],
    rateB: number,
  ) => {
    const left = countsAt(a, rateA);
    return countsAt(b, rateB).map((counts, r) => ({ a: left[r], b: counts }));
  };
  const awareVsNaive = seedPairedDifference(seedPairs("naive", judged, "aware", judged), { seed });
  // the base is not trained: its seeds are the evaluation's sampling and noise draws
  const baseDrop = seedPairedDifference(seedPairs("base", high, "base", low), { seed });
  const runs = (["naive", "aware"] as const).flatMap((variant) =>
    replicas<RlStageResult>(noiseRlStageName(variant)).map((run, r) =>
      runSignal(`${variant}@seed${seeds[r]}`, run),
    ),
  );
  const v: Verdict[] = [
    {
      id: "noise-costs-accuracy",
      experiment: "noise",
      claim: `tool noise costs accuracy (base: noise ${low} vs ${high})`,
      status: positiveStatus(baseDrop, context.margin),
      difference: baseDrop,
      seeds: baseDrop?.seeds ?? [],
      cause: measuredCause(baseDrop, context.margin),
      evidence: formatDifference(baseDrop, `pass@1 at ${low} − at ${high}`),
      explanation: `The strong base's pass@1 on the same ${noise.evalTasks} tasks (samples per task: ${samples}): ${noise.rates.map((rate) => `${fixed(at("base", rate).passAt1)} at noise ${rate}`).join(", ")}; it retries ${fixed(at("base", high).retry)} of its failed calls, so most injected failures are recovered before they cost the answer.`,
      exampleStage: noiseRlStageName("naive"),
    },
    {
      id: "noise-aware-beats-naive",
      experiment: "noise",
      claim: `noise-aware turn rewards beat naive ones under noise ${judged}`,
      status: positiveStatus(awareVsNaive, context.margin),
      difference: awareVsNaive,
      seeds: awareVsNaive?.seeds ?? [],
      cause: measuredCause(awareVsNaive, context.margin, runs),
      evidence: `${formatDifference(awareVsNaive, "pass@1 aware − naive")}; retries after a tool error: aware ${fixed(at("aware", judged).retry)}, naive ${fixed(at("naive", judged).retry)}, base ${fixed(at("base", judged).retry)}`,
      explanation: `pass@1 by evaluation noise, naive: ${noise.rates.map((rate) => fixed(at("naive", rate).passAt1)).join(" / ")}, noise-aware: ${noise.rates.map((rate) => fixed(at("aware", rate).passAt1)).join(" / ")}, base: ${noise.rates.map((rate) => fixed(at("base", rate).passAt1)).join(" / ")} (at ${noise.rates.join(" / ")}). The noise-aware run is ${noise.rates.every((rate) => (at("aware", rate).passAt1 ?? 0) < (at("naive", rate).passAt1 ?? 0)) ? `lower at every rate, without noise too: the difference is in what its ${noise.steps} RL steps did to the model overall, not in how it handles failures` : "no better under noise"}; tool calls per episode at ${judged}: aware ${fixed(at("aware", judged).toolCalls, 2)}, naive ${fixed(at("naive", judged).toolCalls, 2)}.`,
      exampleStage: noiseRlStageName("aware"),
    },
  ];
  finishVerdicts(v, context.margin, context.armGate);
  const json = {
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
  const section: Section = {
    title: "4. Tool noise: naive vs noise-aware turn rewards",
    blocks: [
      {
        type: "paragraph",
        text: `Two RL runs from the strong base (${noise.estimator}, ${noise.steps} steps of ${noise.tasksPerStep}×${noise.groupSize} at lr ${noise.learningRate}, ${poolText(noise.select, noise.families.join("/"), () => get<SelectStageResult>(NOISE_SELECT_STAGE))}) under ${noise.trainRate} tool noise: the naive reward (${noise.naiveReward}) punishes a turn whose tool failed; the noise-aware one (${noise.awareReward}) does not score the tool's outcome of an injected failure, only what the policy does next. Each model is evaluated on ${noise.evalTasks} test tasks at noise ${noise.rates.join(" / ")} (samples per task: ${samples}).`,
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
  };
  return { key: "noise", json, verdicts: v, sections: [section] };
}
