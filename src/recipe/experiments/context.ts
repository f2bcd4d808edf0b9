/**
 * What every experiment module of the report shares: the stage results of a finished recipe run
 * read through one context, the pass@1 comparisons (also pooled over runs by `agentrl recipe
 * compare`), and the small blocks each section repeats (its verdict table, example trajectories).
 *
 * An experiment module (boundary.ts, data-first.ts, credit.ts, noise.ts, base.ts) takes the
 * context and returns its own numbers (report.json), verdicts and section: how a claim is decided
 * is read in that one file.
 */
import type { PassAtKCurve } from "../../eval/passk.ts";
import type { TaskCount } from "../../eval/task-counts.ts";
import { type Block, type Cell, formatNumber, type Section } from "../../report/html.ts";
import {
  marginNote,
  type PairedDifference,
  pairedDifference,
  powerNote,
  type SeedEstimate,
  seedPairedDifference,
  seedPowerNote,
  seedsToDecide,
  statusLabel,
  type Verdict,
} from "../analysis.ts";
import { type ArmGate, gateOnArms } from "../arms.ts";
import type { RecipeConfig } from "../config.ts";
import type { ExampleTrajectory } from "../examples.ts";
import { type SelectStageResult, WITHHELD_TEMPLATE } from "../pipeline.ts";
import type { EvalStageResult, RlStageResult } from "../stage-runs.ts";
import type { StageResults } from "../stages.ts";

export interface ReportContext {
  config: RecipeConfig;
  results: StageResults;
  /** A stage's result by name. */
  get: <T>(name: string) => T;
  /** The main-line evaluations: base, weak, sft-real, sft-stitched, rl-<start>. */
  evals: Record<string, EvalStageResult>;
  /** Samples per task of the main-line evaluations. */
  n: number;
  seed: number;
  /** The smallest difference a claim is about (config.margin): an interval below it calls the claim against. */
  margin: number;
  pass1: (comparison: Pass1Comparison) => PairedDifference | null;
  /** The training seeds (config.seed, +1, …), in order. */
  seeds: number[];
  /** A replicated stage's result at every training seed, in seed order (pipeline.ts `replicaStage`). */
  replicas: <T>(name: string) => T[];
  /** One of PASS1_COMPARISONS at every training seed, with the two-level (seeds, tasks) interval. */
  seedPass1: (comparison: Pass1Comparison) => SeedEstimate | null;
  /** Example trajectories of an RL stage's rollouts. */
  examplesOf: (stage: string) => ExampleTrajectory[];
  /** Every RL arm at every seed, and the runs each comparison claim compares (arms.ts): claims are gated on them. */
  armGate: ArmGate;
}

/** One experiment's part of the report. */
export interface ExperimentReport {
  /** Its key in report.json's `experiments`. */
  key: string;
  json: unknown;
  verdicts: Verdict[];
  sections: Section[];
}

export const isWithheld = (count: { template?: string }) => count.template === WITHHELD_TEMPLATE;
export const notWithheld = (count: { template?: string }) => !isWithheld(count);

export function fixed(value: number | null | undefined, digits = 3): string {
  return value === null || value === undefined || Number.isNaN(value) ? "n/a" : value.toFixed(digits);
}

/**
 * What a pooled experiment's runs trained on: "on the same 78 chain train tasks the strong base
 * solved sometimes in 4 samples (of 160 candidates; 81 never solved, 1 always)", or fresh tasks.
 */
export function poolText(
  select: { m: number } | null,
  what: string,
  readPool: () => SelectStageResult,
): string {
  if (select === null) return `on fresh ${what} train tasks every step`;
  const pool = readPool();
  return `on the same ${pool.taskIds.length} ${what} train tasks the strong base solved sometimes in ${select.m} samples (of ${pool.candidates} candidates; ${pool.dropped.unsolved} never solved, ${pool.dropped.alwaysSolved} always)`;
}

/** A verdict's status as a coloured cell (green reproduced, red not reproduced, amber inconclusive). */
export function statusCell(status: Verdict["status"], verdict?: Pick<Verdict, "smallerThanMargin">): Cell {
  const tone = {
    reproduced: "good",
    "not reproduced": "bad",
    inconclusive: "unsure",
    "not measured": "none",
  } as const;
  return { text: statusLabel({ status, ...verdict }).toUpperCase(), tone: tone[status] };
}

/**
 * Completes each verdict's evidence with what its status rests on: the margin clause of a claim
 * called against the article by its margin, and for an inconclusive one its interval's half-width and
 * roughly how many tasks would call it; a reproduced claim whose interval lies entirely below the
 * margin is marked "reproduced, smaller than the margin". An explanation (and its example stage) is
 * kept only on a claim called against the article: the modules write one for every claim that can
 * be. Last, with `arms`, a comparison claim whose arms did not all learn is made inconclusive
 * (arms.ts `gateOnArms`).
 */
export function finishVerdicts(verdicts: Verdict[], margin: number, arms?: ArmGate): void {
  for (const verdict of verdicts) {
    if (verdict.status !== "not reproduced") {
      delete verdict.explanation;
      delete verdict.exampleStage;
    }
    if (verdict.status === "not reproduced" && !verdict.cause)
      throw new Error(`recipe report: verdict ${verdict.id} is "not reproduced" without a measured cause`);
    if (verdict.status !== "not reproduced") delete verdict.cause;
    if (!verdict.difference) continue;
    if (verdict.status === "not reproduced") verdict.evidence += marginNote(verdict.difference, margin);
    if (verdict.status === "inconclusive" && "seeds" in verdict.difference) {
      verdict.evidence += seedPowerNote(verdict.difference as SeedEstimate, margin);
      verdict.decide = seedsToDecide(verdict.difference as SeedEstimate, margin);
    } else if (verdict.status === "inconclusive") verdict.evidence += powerNote(verdict.difference, margin);
    if (verdict.status === "reproduced" && margin > 0 && verdict.difference.interval.upper < margin) {
      verdict.smallerThanMargin = true;
      verdict.evidence += ` (reproduced, smaller than the margin: the whole interval lies below ${margin})`;
    }
  }
  if (arms) gateOnArms(verdicts, arms.arms, arms.compared);
}

/** What an RL run's history says about its learning signal and tool use (for measured causes). */
export interface RunSignal {
  name: string;
  /** Steps in which no group had signal (all rollouts of every group agreed), and the steps run. */
  noSignalSteps: number;
  steps: number;
  /** Tool calls per episode over the first and the last steps' rollouts (null when not recorded). */
  toolCallsStart: number | null;
  toolCallsEnd: number | null;
  /** Train reward over the first and last steps, and held-out pass@1 at the start and end (null when not tracked). */
  rewardStart: number | null;
  rewardEnd: number | null;
}

/** A run's signal summary from its stored result. */
export function runSignal(name: string, rl: RlStageResult): RunSignal {
  const series = (key: string) => rl.history[key] ?? [];
  const edge = (key: string, at: "start" | "end") => {
    const points = series(key);
    if (points.length === 0) return null;
    const part =
      at === "start"
        ? points.slice(0, Math.max(1, Math.ceil(points.length / 4)))
        : points.slice(-Math.max(1, Math.ceil(points.length / 4)));
    return part.reduce((sum, [, value]) => sum + value, 0) / part.length;
  };
  return {
    name,
    noSignalSteps: rl.skipped.noSignal.length,
    steps: rl.steps,
    toolCallsStart: edge("rollout/tool_calls_per_episode", "start"),
    toolCallsEnd: edge("rollout/tool_calls_per_episode", "end"),
    rewardStart: edge("reward/mean", "start"),
    rewardEnd: edge("reward/mean", "end"),
  };
}

/**
 * The measured cause of a claim called "not reproduced", from its runs' numbers (checked in
 * order): no learning signal (at least half the steps of a run, over its seeds, had no group with
 * signal), a farmed reward (the train reward rose while tool calls per episode grew by half or
 * more and the claim's effect did not come), else the effect itself: of the wrong sign, or below
 * the margin.
 */
export function measuredCause(
  estimate: PairedDifference | null,
  margin: number,
  runs: readonly RunSignal[] = [],
): string {
  const starved = runs.filter((run) => run.steps > 0 && run.noSignalSteps / run.steps >= 0.5);
  if (starved.length > 0) {
    const list = starved.map((run) => `${run.name} ${run.noSignalSteps}/${run.steps}`).join(", ");
    return `no learning signal: steps without any group with signal ${list}`;
  }
  const farmed = runs.filter(
    (run) =>
      run.toolCallsStart !== null &&
      run.toolCallsEnd !== null &&
      run.rewardStart !== null &&
      run.rewardEnd !== null &&
      run.toolCallsEnd >= 1.5 * Math.max(run.toolCallsStart, 0.5) &&
      run.rewardEnd > run.rewardStart,
  );
  if (farmed.length > 0) {
    const list = farmed
      .map(
        (run) =>
          `${run.name}: tool calls per episode ${run.toolCallsStart!.toFixed(1)} → ${run.toolCallsEnd!.toFixed(1)}, train reward ${run.rewardStart!.toFixed(2)} → ${run.rewardEnd!.toFixed(2)}`,
      )
      .join("; ");
    return `a farmed reward: the train reward rose with the tool calls while the claimed effect did not come (${list})`;
  }
  if (!estimate) return "nothing measured";
  const f = (x: number) => `${x >= 0 ? "+" : ""}${x.toFixed(3)}`;
  if (estimate.interval.upper < 0)
    return `an effect of the opposite sign: ${f(estimate.mean)} [${f(estimate.interval.lower)}, ${f(estimate.interval.upper)}]`;
  return `an effect below the margin: ${f(estimate.mean)} [${f(estimate.interval.lower)}, ${f(estimate.interval.upper)}], entirely below ${margin}`;
}

/** The per-seed estimates of a verdict, "+0.081, +0.053, +0.008". */
export function seedList(seeds: readonly (number | null)[]): string {
  return seeds.map((x) => (x === null ? "n/a" : `${x >= 0 ? "+" : ""}${x.toFixed(3)}`)).join(", ");
}

export function verdictBlock(verdicts: readonly Verdict[]): Block {
  return {
    type: "table",
    caption: "Verdicts (computed from the numbers above; per seed: the estimate at each training seed)",
    columns: ["id", "claim", "status", "per seed", "evidence"],
    rows: verdicts.map((v) => [
      v.id,
      v.claim,
      statusCell(v.status, v),
      seedList(v.seeds),
      v.cause ? `${v.evidence}. Cause: ${v.cause}` : v.evidence,
    ]),
  };
}

export function exampleBlocks(title: string, examples: readonly ExampleTrajectory[]): Block[] {
  if (examples.length === 0) return [];
  return [
    {
      type: "details",
      summary: `${title}: ${examples.length} ${examples.length === 1 ? "trajectory" : "trajectories"} (turns, tool calls, tool statuses, per-turn rewards and advantages)`,
      blocks: examples.flatMap((example): Block[] => [
        {
          type: "paragraph",
          text: example.source
            ? `${example.taskId} (${example.family}), ${example.source}: ${example.correct ? "CORRECT" : "wrong"}, answer ${example.answer ?? "none"}, ended by ${example.endReason}.`
            : `${example.taskId} (${example.family}), RL step ${example.step}: ${example.correct ? "CORRECT" : "wrong"}, answer ${example.answer ?? "none"}, outcome reward ${fixed(example.outcomeReward, 2)}, ended by ${example.endReason}; its group: ${example.group.correct}/${example.group.size} correct.${example.note ? ` (${example.note})` : ""}`,
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

export function figureCaption(config: RecipeConfig, text: string): string {
  return `${text} Training seed ${config.seed} (the first of ${config.seeds}), one run per curve (${config.preset} preset).`;
}

export function curveAt(curve: PassAtKCurve, k: number): number | null {
  return curve.find((point) => point.k === k)?.passAtK ?? null;
}

/** pass^k of a curve at k (all k samples correct), null when k is not on it or the curve predates pass^k. */
export function hatCurveAt(curve: PassAtKCurve, k: number): number | null {
  return curve.find((point) => point.k === k)?.passHatK ?? null;
}

/** pass@k on the withheld template: the eval's own per-template curve. */
export function withheldCurve(evalResult: EvalStageResult): PassAtKCurve {
  return evalResult.curves.templates[WITHHELD_TEMPLATE] ?? [];
}

export function mainCurve(evalResult: EvalStageResult): PassAtKCurve {
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

/** One of PASS1_COMPARISONS at every training seed: each seed's two stages, paired over tasks, then the two-level bootstrap. */
export function seedPass1Difference(
  comparison: Pass1Comparison,
  countsAt: (stage: string) => readonly (readonly TaskCount[])[],
  seed: number,
): SeedEstimate | null {
  const a = countsAt(comparison.a);
  const b = countsAt(comparison.b);
  const pairs = b.map((counts, r) => ({ a: a[Math.min(r, a.length - 1)], b: counts }));
  return seedPairedDifference(pairs, { seed, filter: comparison.withheld ? undefined : notWithheld });
}
