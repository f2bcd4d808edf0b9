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
import { marginNote, type PairedDifference, pairedDifference, powerNote, type Verdict } from "../analysis.ts";
import type { RecipeConfig } from "../config.ts";
import type { ExampleTrajectory } from "../examples.ts";
import { WITHHELD_TEMPLATE } from "../pipeline.ts";
import type { EvalStageResult } from "../stage-runs.ts";
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
  /** Example trajectories of an RL stage's rollouts. */
  examplesOf: (stage: string) => ExampleTrajectory[];
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

/** A verdict's status as a coloured cell (green reproduced, red not reproduced, amber inconclusive). */
export function statusCell(status: Verdict["status"]): Cell {
  const tone = {
    reproduced: "good",
    "not reproduced": "bad",
    inconclusive: "unsure",
    "not measured": "none",
  } as const;
  return { text: status.toUpperCase(), tone: tone[status] };
}

/**
 * Completes each verdict's evidence with what its status rests on: the margin clause of a claim
 * called against the article by its margin, and for an inconclusive one its interval's half-width and
 * roughly how many tasks would call it. An explanation (and its example stage) is kept only on a
 * claim called against the article: the modules write one for every claim that can be.
 */
export function finishVerdicts(verdicts: Verdict[], margin: number): void {
  for (const verdict of verdicts) {
    if (verdict.status !== "not reproduced") {
      delete verdict.explanation;
      delete verdict.exampleStage;
    }
    if (!verdict.difference) continue;
    if (verdict.status === "not reproduced") verdict.evidence += marginNote(verdict.difference, margin);
    if (verdict.status === "inconclusive") verdict.evidence += powerNote(verdict.difference, margin);
  }
}

export function verdictBlock(verdicts: readonly Verdict[]): Block {
  return {
    type: "table",
    caption: "Verdicts (computed from the numbers above)",
    columns: ["claim", "status", "evidence"],
    rows: verdicts.map((v) => [v.claim, statusCell(v.status), v.evidence]),
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
  return `${text} Seed ${config.seed}, one run per curve (${config.preset} preset).`;
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
