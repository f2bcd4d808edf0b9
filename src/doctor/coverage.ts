/**
 * The `coverage` check: can GRPO learn anything from these tasks at this group size? From n = G
 * samples per task of the user's policy (counts of src/eval/task-counts.ts, infra failures left
 * out), per family and overall:
 *
 * - pass@1, pass@G (unbiased, src/eval/passk.ts) and pass^k = C(c,k)/C(n,k) (src/eval/passk.ts);
 * - the share of tasks with no learning signal at G (all G wrong or all G right: zero advantage);
 * - the expected share of GRPO groups with a non-zero advantage, the mean over tasks of the chance
 *   that G samples are mixed (with n = G, one minus the no-signal share);
 * - the learnable pool, the tasks with 0 < c < G.
 *
 * It fails when the expected share of groups with signal is below `target` (default 0.3), and
 * recommends what would reach it: the learnable pool as the task selection, a larger G, or (when a
 * family is never solved) SFT or a stronger base first: RL sharpens what the base samples.
 *
 * A larger G' is judged by the plug-in share 1 − p^G' − (1 − p)^G' with p = c/n; a task whose
 * samples were all wrong (or all right) takes its family's pooled pass rate instead, so a task in a
 * family the policy sometimes solves may gain signal with more samples, while a family it never
 * solves stays at 0 for every G (no group size makes RL sample what the base cannot).
 */

import { groupSignal, groupSignalAtRate } from "../eval/group-signal.ts";
import { kGrid, meanPassAtK, passHatK } from "../eval/passk.ts";
import type { TaskCount } from "../eval/task-counts.ts";
import type { Change, DoctorCheck } from "./types.ts";

export const DEFAULT_SIGNAL_TARGET = 0.3;
/** The largest group size the check recommends (the seed's runs use 8-16; 64 is already costly). */
export const MAX_RECOMMENDED_GROUP = 64;

export interface CoverageRow {
  /** `all` or a family. */
  family: string;
  tasks: number;
  passAt1: number;
  passAtG: number;
  /** pass^k at k = 1, 2, 4, …, G. */
  passHat: { k: number; value: number }[];
  /** Share of tasks whose G samples are all wrong, and all right. */
  allWrong: number;
  allRight: number;
  /** Expected share of GRPO groups (of size G) with a non-zero advantage. */
  signalShare: number;
  /** Pooled pass rate of the family (correct samples / samples). */
  passRate: number;
}

export interface CoverageOptions {
  /** Per-task counts with n = G samples each (tasks with fewer are left out and counted). */
  counts: readonly TaskCount[];
  groupSize: number;
  target?: number;
  /** Samples left out because of infrastructure failures (reported, never scored). */
  infraExcluded?: number;
  /** How to name the selection command for these tasks (world tasks: `agentrl data select`). */
  selectHint?: string;
}

function round(value: number, digits = 3): number {
  return Math.round(value * 10 ** digits) / 10 ** digits;
}

function mean(values: readonly number[]): number {
  return values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
}

function rowOf(family: string, counts: readonly TaskCount[], groupSize: number): CoverageRow {
  const samples = counts.reduce((sum, count) => sum + count.n, 0);
  const correct = counts.reduce((sum, count) => sum + count.c, 0);
  return {
    family,
    tasks: counts.length,
    passAt1: round(meanPassAtK(counts, 1)),
    passAtG: round(meanPassAtK(counts, groupSize)),
    passHat: kGrid(groupSize).map((k) => ({
      k,
      value: round(mean(counts.map((count) => passHatK(count.n, count.c, k)))),
    })),
    allWrong: round(counts.filter((count) => count.c === 0).length / counts.length),
    allRight: round(counts.filter((count) => count.c === count.n).length / counts.length),
    signalShare: round(mean(counts.map((count) => groupSignal(count.n, count.c, groupSize)))),
    passRate: round(samples === 0 ? 0 : correct / samples),
  };
}

/** Each task's pass rate for extrapolating to other group sizes (see the file comment). */
function extrapolationRates(counts: readonly TaskCount[], families: ReadonlyMap<string, CoverageRow>) {
  return counts.map((count) =>
    count.c > 0 && count.c < count.n ? count.c / count.n : (families.get(count.family)?.passRate ?? 0),
  );
}

function sharesAt(rates: readonly number[], groupSize: number): number {
  return mean(rates.map((rate) => groupSignalAtRate(rate, groupSize)));
}

function percent(value: number): string {
  return `${Math.round(value * 100)}%`;
}

export function checkCoverage(options: CoverageOptions): DoctorCheck {
  const G = options.groupSize;
  const target = options.target ?? DEFAULT_SIGNAL_TARGET;
  const counts = options.counts.filter((count) => count.n >= G);
  const short = options.counts.length - counts.length;
  if (counts.length === 0) {
    return {
      id: "coverage",
      ok: false,
      detail: `no task has ${G} usable samples (${short} tasks fell short${options.infraExcluded ? `, ${options.infraExcluded} samples lost to infrastructure failures` : ""}): coverage cannot be measured.`,
      changes: [],
      data: { groupSize: G, target, short, infraExcluded: options.infraExcluded ?? 0 },
    };
  }
  const familyNames = [...new Set(counts.map((count) => count.family))].sort();
  const families = familyNames.map((family) =>
    rowOf(
      family,
      counts.filter((count) => count.family === family),
      G,
    ),
  );
  const byFamily = new Map(families.map((row) => [row.family, row]));
  const overall = rowOf("all", counts, G);
  const learnable = counts.filter((count) => count.c > 0 && count.c < count.n);
  const rates = extrapolationRates(counts, byFamily);

  // Larger groups, on all tasks and on the learnable pool.
  const candidates: number[] = [];
  for (let g = G * 2; g <= MAX_RECOMMENDED_GROUP; g *= 2) candidates.push(g);
  const allTasksAt = [
    { groupSize: G, share: overall.signalShare },
    ...candidates.map((g) => ({ groupSize: g, share: round(sharesAt(rates, g)) })),
  ];
  const poolRates = learnable.map((count) => count.c / count.n);
  const poolAt = [G, ...candidates].map((g) => ({
    groupSize: g,
    share: round(learnable.length === 0 ? 0 : sharesAt(poolRates, g)),
  }));
  const neverSolved = families.filter((row) => row.passRate === 0).map((row) => row.family);
  const alwaysSolved = families.filter((row) => row.passRate === 1).map((row) => row.family);
  const ok = overall.signalShare >= target;

  const changes: Change[] = [];
  const largerG = allTasksAt.find((entry) => entry.groupSize > G && entry.share >= target);
  const poolAtG = poolAt[0];
  const selectHint = options.selectHint ?? "keep the tasks with 0 < c < G";
  let recommendation: { tasks: "all" | "learnable"; groupSize: number; share: number } | null = null;
  if (ok) recommendation = { tasks: "all", groupSize: G, share: overall.signalShare };
  else if (learnable.length > 0 && poolAtG.share >= target)
    recommendation = { tasks: "learnable", groupSize: G, share: poolAtG.share };
  else if (largerG) recommendation = { tasks: "all", groupSize: largerG.groupSize, share: largerG.share };
  else {
    const poolG = poolAt.find((entry) => entry.share >= target);
    if (learnable.length > 0 && poolG)
      recommendation = { tasks: "learnable", groupSize: poolG.groupSize, share: poolG.share };
  }
  if (!ok) {
    if (neverSolved.length > 0 || learnable.length === 0) {
      changes.push({
        kind: "stronger-base-or-sft",
        text:
          neverSolved.length > 0
            ? `the policy never solved ${neverSolved.join(", ")} in ${G} samples per task: RL sharpens what the base already samples, so put those paths in first (SFT on real trajectories: agentrl data collect, then agentrl train sft) or start from a stronger base`
            : `no task is solved sometimes but not always in ${G} samples: start from a base that solves these tasks part of the time (SFT first, or a stronger base)`,
      });
    }
    if (recommendation?.tasks === "learnable") {
      changes.push({
        kind: "task-selection",
        text: `train on the learnable pool, the ${learnable.length} tasks with 0 < c < ${G} (${selectHint}): expected ${percent(recommendation.share)} of groups with signal at G = ${recommendation.groupSize}`,
      });
    }
    // A larger G on all tasks is an alternative to the selection (it costs samples, not tasks).
    const alternative =
      recommendation && recommendation.groupSize > G
        ? recommendation
        : largerG && { tasks: "all", ...largerG };
    if (alternative) {
      changes.push({
        kind: "larger-group",
        text: `${recommendation?.tasks === "learnable" && alternative !== recommendation ? "or " : ""}use --group-size ${alternative.groupSize}: expected ${percent(alternative.share)} of groups with signal${alternative.tasks === "learnable" ? " on the learnable pool" : " on all tasks"} (vs ${percent(overall.signalShare)} at G = ${G})`,
      });
    }
    if (alwaysSolved.length > 0) {
      changes.push({
        kind: "task-selection",
        text: `the policy already solves every task of ${alwaysSolved.join(", ")}: drop them or use harder tasks`,
      });
    }
  }
  const familyText = families
    .map(
      (row) =>
        `${row.family} pass@1 ${row.passAt1}, pass@${G} ${row.passAtG}, signal ${percent(row.signalShare)}`,
    )
    .join("; ");
  const detail =
    `${counts.length} tasks × ${G} samples: ${percent(overall.allWrong)} never solved, ${percent(overall.allRight)} always solved, ` +
    `so ${percent(overall.signalShare)} of GRPO groups of ${G} would have a non-zero advantage (target ${percent(target)})` +
    `${ok ? "" : ": below target"}; learnable pool ${learnable.length} tasks. Per family: ${familyText}.` +
    (ok && neverSolved.length > 0
      ? ` Note: ${neverSolved.join(", ")} ${neverSolved.length > 1 ? "are" : "is"} never solved in ${G} samples per task: RL from this policy will not learn ${neverSolved.length > 1 ? "them" : "it"} (SFT first).`
      : "") +
    (recommendation && !ok
      ? ` Reaching the target: ${recommendation.tasks === "learnable" ? "the learnable pool" : "all tasks"} at G = ${recommendation.groupSize} (${percent(recommendation.share)}).`
      : !ok
        ? ` No task selection or G up to ${MAX_RECOMMENDED_GROUP} reaches the target.`
        : "") +
    (short > 0 ? ` ${short} tasks had fewer than ${G} usable samples and were left out.` : "") +
    (options.infraExcluded
      ? ` ${options.infraExcluded} samples failed for infrastructure reasons and were not scored.`
      : "");
  return {
    id: "coverage",
    ok,
    detail,
    changes,
    data: {
      groupSize: G,
      target,
      overall,
      families,
      learnable: learnable.map((count) => count.taskId),
      neverSolvedFamilies: neverSolved,
      alwaysSolvedFamilies: alwaysSolved,
      allTasksAt,
      learnableAt: poolAt,
      recommendation,
      short,
      infraExcluded: options.infraExcluded ?? 0,
    },
  };
}
