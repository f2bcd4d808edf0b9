/**
 * Whether each RL arm learned: one entry per RL run the report uses (every training seed's main-line
 * RL from each start, credit run and noise run), with pass@1 of its start and of its end on the
 * arm's own test tasks and their paired difference over those tasks (analysis.ts
 * `pairedDifference`, the report's bootstrap). An arm `learned` when that interval lies above 0.
 * Where the start is the untrained base evaluated at every seed (credit, noise), its pass@1 pools
 * those evaluations' samples: it is one model, and more samples of it make the start less noisy.
 *
 * A claim that compares two methods is worth calling only where both methods' runs learned: two
 * runs that both degraded from their start can differ significantly in how much they degraded,
 * which says nothing about which method learns better. `gateOnArms` turns such a claim
 * inconclusive, naming the arms and seeds that did not learn.
 */
import type { TaskCount } from "../eval/task-counts.ts";
import {
  meanPassAtK,
  type PairedDifference,
  pairedDifference,
  poolCounts,
  type Verdict,
} from "./analysis.ts";
import type { RecipeConfig } from "./config.ts";
import {
  creditEvalStageName,
  creditStageName,
  MAIN_STARTS,
  noiseEvalStageName,
  noiseJudgedRate,
  noiseRlStageName,
  replicaStage,
} from "./pipeline.ts";
import type { EvalStageResult } from "./stage-runs.ts";

export interface Arm {
  /** The arm's run, the same at every seed (`credit-grpo`, `rl-base`, `noise-rl-aware`). */
  run: string;
  /** The RL stage of this seed (`credit-grpo@s2`). */
  stage: string;
  /** The training seed. */
  seed: number;
  /** Task family it was trained on ("all" for the mixed main-line runs, families joined by "+" otherwise). */
  family: string;
  estimator: string;
  /** The evaluations read: the start checkpoint's and the end checkpoint's, on the same tasks. */
  startStage: string;
  endStage: string;
  /** Mean per-task pass@1 of the start and the end over the tasks both have. */
  start: number | null;
  end: number | null;
  /** end − start, paired over the tasks, with its 95% bootstrap interval. */
  difference: PairedDifference | null;
  /** The interval lies above 0. */
  learned: boolean;
  /**
   * The start solved none of the arm's test tasks in any of its samples (pass@n 0 on every task):
   * no group of its rollouts on such tasks carries signal, so the arm cannot learn there by
   * construction (the weak base's arm, the mechanism of `strong-base-beats-weak-after-rl`). Such an
   * arm is reported, and counted apart from the arms that could learn.
   */
  startSolvedNone: boolean;
}

/** What an arm is: its run, and how to read its start's and end's counts at training seed index r. */
export interface ArmSpec {
  run: string;
  family: string;
  estimator: string;
  /** Stage names of the start and end evaluations at seed index r (for the record). */
  startStage: (r: number) => string;
  endStage: (r: number) => string;
  startCounts: (r: number) => readonly TaskCount[];
  endCounts: (r: number) => readonly TaskCount[];
}

/** An arm at one seed from its start's and end's counts: the paired difference, and whether it learned. */
export function measureArm(spec: ArmSpec, r: number, seeds: readonly number[], bootstrapSeed: number): Arm {
  const startCounts = spec.startCounts(r);
  const endCounts = spec.endCounts(r);
  const difference = pairedDifference(startCounts, endCounts, undefined, bootstrapSeed);
  const ids = new Set(startCounts.filter((c) => c.n > 0).map((c) => c.taskId));
  const shared = new Set(endCounts.filter((c) => c.n > 0 && ids.has(c.taskId)).map((c) => c.taskId));
  const onShared = (count: TaskCount) => shared.has(count.taskId);
  return {
    run: spec.run,
    stage: replicaStage(spec.run, r),
    seed: seeds[r],
    family: spec.family,
    estimator: spec.estimator,
    startStage: spec.startStage(r),
    endStage: spec.endStage(r),
    start: meanPassAtK(startCounts, 1, onShared),
    end: meanPassAtK(endCounts, 1, onShared),
    difference,
    learned: difference !== null && difference.interval.lower > 0,
    startSolvedNone: startCounts.some((c) => c.n > 0) && startCounts.every((c) => c.c === 0),
  };
}

/** Reads a stage result by name (the plain name at seed index 0, `replicaStage` otherwise for replicated stages). */
export type StageAt = <T>(name: string, r: number) => { name: string; result: T };

/** Every RL arm of a recipe config: main-line RL from each start, each credit estimator, both noise runs. */
export function armSpecs(config: RecipeConfig, at: StageAt): ArmSpec[] {
  const counts = (name: string) => (r: number) => at<EvalStageResult>(name, r).result.counts;
  const named = (name: string) => (r: number) => at<EvalStageResult>(name, r).name;
  const everySeed = Array.from({ length: config.seeds }, (_, r) => r);
  // an untrained start (the strong base) evaluated at every seed's sampling is one model: its
  // start pass@1 pools the samples of all those evaluations, so one seed's lucky or unlucky draw
  // of the base does not decide whether that seed's arm learned
  const pooled = (read: (r: number) => readonly TaskCount[]) => () => poolCounts(everySeed.map(read));
  const startEval: Record<(typeof MAIN_STARTS)[number], string> = {
    base: "eval-base-strong",
    "sft-real": "eval-sft-real",
    "sft-stitched": "eval-sft-stitched",
    weak: "eval-base-weak",
  };
  const main: ArmSpec[] = MAIN_STARTS.map((start) => ({
    run: `rl-${start}`,
    family: "all",
    estimator: config.rl.estimator,
    startStage: named(startEval[start]),
    endStage: named(`eval-rl-${start}`),
    startCounts: counts(startEval[start]),
    endCounts: counts(`eval-rl-${start}`),
  }));
  const credit: ArmSpec[] = config.credit.estimators.map((estimator) => ({
    run: creditStageName(estimator),
    family: config.credit.family,
    estimator,
    startStage: () => `${creditEvalStageName("base")} (every seed's samples)`,
    endStage: named(creditEvalStageName(estimator)),
    startCounts: pooled(counts(creditEvalStageName("base"))),
    endCounts: counts(creditEvalStageName(estimator)),
  }));
  const rate = String(noiseJudgedRate(config.noise));
  const noiseCounts = (model: string) => (r: number) =>
    at<Record<string, EvalStageResult>>(noiseEvalStageName(model), r).result[rate].counts;
  const noiseNamed = (model: string) => (r: number) =>
    `${at(noiseEvalStageName(model), r).name} (noise ${rate})`;
  const noise: ArmSpec[] = (["naive", "aware"] as const).map((variant) => ({
    run: noiseRlStageName(variant),
    family: config.noise.families.join("+"),
    estimator: config.noise.estimator,
    startStage: () => `${noiseEvalStageName("base")} (noise ${rate}, every seed's samples)`,
    endStage: noiseNamed(variant),
    startCounts: pooled(noiseCounts("base")),
    endCounts: noiseCounts(variant),
  }));
  return [...main, ...credit, ...noise];
}

/** Every arm at every training seed, in arm order then seed order. */
export function measureArms(
  specs: readonly ArmSpec[],
  seeds: readonly number[],
  bootstrapSeed: number,
): Arm[] {
  return specs.flatMap((spec) => seeds.map((_, r) => measureArm(spec, r, seeds, bootstrapSeed)));
}

/**
 * The RL runs each method comparison sets against each other (by verdict id); other claims are not
 * gated. `strong-base-beats-weak-after-rl` is not a method comparison: it says the start bounds RL,
 * and the weak base's arm learning nothing (no group with signal) is that claim's mechanism, so
 * gating it on that arm would make it undecidable by construction.
 */
export function comparedRuns(config: RecipeConfig): Record<string, readonly string[]> {
  const runs: Record<string, readonly string[]> = {
    "sft-real-rl-beats-stitched-rl": ["rl-sft-real", "rl-sft-stitched"],
    "noise-aware-beats-naive": [noiseRlStageName("aware"), noiseRlStageName("naive")],
  };
  for (const estimator of config.credit.estimators) {
    if (estimator === "grpo") continue;
    runs[`${estimator}-beats-grpo`] = [creditStageName(estimator), creditStageName("grpo")];
  }
  return runs;
}

const signed = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(3)}`;

/** "credit-grpo at seed 1 (0.156 → 0.109, −0.047 [−0.080, −0.015])" */
export function describeArm(arm: Arm): string {
  const f = (x: number | null) => (x === null ? "n/a" : x.toFixed(3));
  const d = arm.difference;
  const diff = d ? `, ${signed(d.mean)} [${signed(d.interval.lower)}, ${signed(d.interval.upper)}]` : "";
  return `${arm.run} at seed ${arm.seed} (${f(arm.start)} → ${f(arm.end)}${diff})`;
}

/**
 * A comparison claim whose arms did not all learn, at every seed, is called inconclusive with the
 * cause "arms did not learn" and the arms and seeds that did not, whatever its difference says (the
 * difference and per-seed estimates stay as measured). Mutates and returns the verdicts.
 */
export function gateOnArms(
  verdicts: Verdict[],
  arms: readonly Arm[],
  compared: Record<string, readonly string[]>,
): Verdict[] {
  for (const verdict of verdicts) {
    const runs = compared[verdict.id];
    if (!runs) continue;
    const failed = arms.filter((arm) => runs.includes(arm.run) && !arm.learned);
    if (failed.length === 0) continue;
    const was = verdict.status;
    verdict.status = "inconclusive";
    verdict.cause = `arms did not learn: ${failed.map(describeArm).join("; ")}`;
    verdict.evidence += ` [not called: ${verdict.cause}; the difference alone would say ${was}]`;
    delete verdict.explanation;
    delete verdict.exampleStage;
    delete verdict.decide;
    delete verdict.smallerThanMargin;
  }
  return verdicts;
}

/** What `finishVerdicts` gates comparison claims on. */
export interface ArmGate {
  arms: readonly Arm[];
  compared: Record<string, readonly string[]>;
}
