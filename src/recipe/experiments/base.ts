import type { Section } from "../../report/html.ts";
import { barChart } from "../../report/plots.ts";
import {
  boundStatus,
  formatDifference,
  meanPassAtK,
  positiveStatus,
  seedPairedDifference,
  taskPassAtK,
  type Verdict,
} from "../analysis.ts";
import type { EvalStageResult, RlStageResult } from "../stage-runs.ts";
import {
  type ExperimentReport,
  exampleBlocks,
  figureCaption,
  finishVerdicts,
  fixed,
  measuredCause,
  PASS1_COMPARISONS,
  type ReportContext,
  runSignal,
  verdictBlock,
} from "./context.ts";

export async function baseExperiment(context: ReportContext): Promise<ExperimentReport> {
  const { config, get, evals, n, seed, examplesOf, replicas, seeds } = context;
  const starts = [
    {
      name: "strong base",
      start: evals.base,
      rl: evals["rl-base"],
      stage: "rl-base",
      startStage: "eval-base-strong",
    },
    {
      name: "weak base",
      start: evals.weak,
      rl: evals["rl-weak"],
      stage: "rl-weak",
      startStage: "eval-base-weak",
    },
    {
      name: "SFT-real",
      start: evals["sft-real"],
      rl: evals["rl-sft-real"],
      stage: "rl-sft-real",
      startStage: "eval-sft-real",
    },
    {
      name: "SFT-stitched",
      start: evals["sft-stitched"],
      rl: evals["rl-sft-stitched"],
      stage: "rl-sft-stitched",
      startStage: "eval-sft-stitched",
    },
  ];
  const rows = starts.map(({ name, start, rl, stage, startStage }) => {
    const startSeeds = replicas<EvalStageResult>(startStage);
    const rlSeeds = replicas<EvalStageResult>(`eval-${stage}`);
    const startAtN = meanPassAtK(start.counts, n) ?? 0;
    const rlAt1 = meanPassAtK(rl.counts, 1) ?? 0;
    return {
      name,
      startPassAt1: meanPassAtK(start.counts, 1),
      startPassAtN: startAtN,
      rlPassAt1: rlAt1,
      rlPassAtN: meanPassAtK(rl.counts, n),
      /** RL's pass@1 − the start's pass@n, paired over tasks at each seed: above 0 breaks the bound. */
      aboveBound: seedPairedDifference(
        rlSeeds.map((result, r) => ({ a: startSeeds[r].counts, b: result.counts })),
        { valueA: (c) => taskPassAtK(c, n), value: (c) => taskPassAtK(c, 1), seed },
      ),
      skipped: get<RlStageResult>(stage).skipped,
    };
  });
  const strongVsWeak = context.seedPass1(PASS1_COMPARISONS.strongVsWeak);
  const runs = ["rl-base", "rl-weak"].flatMap((stage) =>
    replicas<RlStageResult>(stage).map((run, r) => runSignal(`${stage}@seed${seeds[r]}`, run)),
  );
  const broken = rows.filter((row) => (row.aboveBound?.interval.lower ?? 0) > context.margin);
  // per seed: the largest excess over the bound among the starts
  const excessSeeds = seeds.map((_, r) => {
    const values = rows.flatMap((row) => {
      const value = row.aboveBound?.seeds[r];
      return value === undefined || value === null ? [] : [value];
    });
    return values.length === 0 ? null : Math.max(...values);
  });
  const v: Verdict[] = [
    {
      id: "strong-base-beats-weak-after-rl",
      experiment: "base",
      claim: "RL from the stronger base ends higher than RL from the weaker base",
      status: positiveStatus(strongVsWeak, context.margin),
      difference: strongVsWeak,
      seeds: strongVsWeak?.seeds ?? [],
      cause: measuredCause(strongVsWeak, context.margin, runs),
      evidence: `${formatDifference(strongVsWeak, "pass@1 RL(strong) − RL(weak)")}; RL steps without any group with signal: strong ${rows[0].skipped.noSignal.length}, weak ${rows[1].skipped.noSignal.length} of ${config.rl.steps}`,
      explanation: `Start pass@1 strong ${fixed(rows[0].startPassAt1)}, weak ${fixed(rows[1].startPassAt1)}; after the same RL strong ${fixed(rows[0].rlPassAt1)}, weak ${fixed(rows[1].rlPassAt1)}.`,
      exampleStage: "rl-weak",
    },
    {
      id: "start-passk-bounds-rl",
      experiment: "base",
      claim: `the start's pass@${n} bounds where RL ends (RL pass@1 ≤ start pass@${n})`,
      seeds: excessSeeds,
      cause: `RL's pass@1 ended above its start's pass@${n} beyond the margin from ${broken.map((row) => `${row.name} (${formatDifference(row.aboveBound, "")})`.replace(" ()", "")).join(", ") || "no start"}`,
      status: boundStatus(
        rows.map((row) => row.aboveBound),
        context.margin,
      ),
      evidence: rows
        .map(
          (row) =>
            `${row.name}: start pass@${n} ${fixed(row.startPassAtN)} → RL pass@1 ${fixed(row.rlPassAt1)} (${formatDifference(row.aboveBound, "RL pass@1 − start")})`,
        )
        .join("; ")
        .concat(
          context.margin > 0
            ? `; exceeding a bound by less than the margin ${context.margin} does not count`
            : "",
        ),
      explanation: `RL ended above its start's pass@${n} beyond noise from ${rows
        .filter((row) => (row.aboveBound?.interval.lower ?? 0) > context.margin)
        .map((row) => row.name)
        .join(", ")}: RL found solutions that start did not sample in ${n} tries.`,
      exampleStage: "rl-base",
    },
  ];
  finishVerdicts(v, context.margin, context.armGate);
  const json = { rows, strongVsWeak };
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
  const section: Section = {
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
  };
  return { key: "base", json, verdicts: v, sections: [section] };
}
