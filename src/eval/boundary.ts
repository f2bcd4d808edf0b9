/**
 * Reasoning-boundary analysis (Yue et al., arXiv:2504.13837): compares the pass@k curves of several
 * eval runs on the tasks they share.
 *
 * For each pair (A, B), in the order the runs are given:
 * - the leader at k = 1 and the **crossover k**: the smallest k at which the other curve reaches
 *   the leader's (`crossoverK`: B ≥ A), or null when it never does on the grid. The article's claim is
 *   that the base model (behind at k = 1) reaches the RL model at large k.
 * - **solvable sets at k = n**: the tasks a run solves at least once in its n samples (c > 0), the
 *   tasks only one of the two solves, and whether one set lies inside the other (the paper: RL's
 *   solvable problems are almost a subset of the base's).
 * - the **sampling-efficiency gap** ΔSE = pass@k_max(A) − pass@1(B), both ways round, with k_max
 *   the largest k of the shared grid.
 * - pass^k_max of both (every one of k_max samples correct): reliability beside reach. Each run's
 *   curves carry pass^k at every k too.
 * - the same per family.
 *
 * Pure: takes per-task counts, returns plain data (the JSON of `agentrl boundary`).
 */
import type { BootstrapOptions } from "./bootstrap.ts";
import { curveHatValue, curveValue, type PassAtKCurves, passAtKCurves } from "./curves.ts";
import { crossoverK, kGrid, type PassAtKCurve, samplingEfficiencyGap } from "./passk.ts";
import type { TaskCount } from "./task-counts.ts";

export interface BoundaryRunInput {
  /** Name of the run in tables and plots (unique). */
  label: string;
  counts: readonly TaskCount[];
}

export interface BoundaryOptions {
  /** k grid (default `kGrid` of the smallest n over every run's shared tasks). */
  ks?: readonly number[];
  /** Bootstrap intervals of the curves (default on); false for none. */
  bootstrap?: BootstrapOptions | false;
}

export interface BoundaryRun {
  label: string;
  /** Smallest n over the shared tasks. */
  n: number;
  /** Curves over the shared tasks only. */
  curves: PassAtKCurves;
  /** Shared tasks solved at least once (c > 0). */
  solvable: number;
  /** Shared tasks whose samples include policy errors, and how many such samples. */
  policyErrors: number;
}

/** Comparison of two curves (one pair, overall or within a family). */
export interface CurveComparison {
  passAt1: { a: number; b: number };
  kMax: number;
  passAtKMax: { a: number; b: number };
  /** pass^k at k_max (all k_max samples correct); null for a curve without pass^k. */
  passHatKMax: { a: number | null; b: number | null };
  /** Which run is ahead at k = 1 (null on a tie). */
  leaderAtK1: "a" | "b" | null;
  /** Smallest k at which the run behind at k = 1 reaches the leader (null: never on the grid, or a tie). */
  crossoverK: number | null;
  /** ΔSE both ways: pass@k_max(A) − pass@1(B) and pass@k_max(B) − pass@1(A). */
  gap: { aOverB: number; bOverA: number };
}

export interface SolvableSets {
  a: number;
  b: number;
  both: number;
  neither: number;
  /** Task ids solved by A only / by B only, in task order. */
  onlyA: string[];
  onlyB: string[];
  aSubsetOfB: boolean;
  bSubsetOfA: boolean;
}

export interface PairComparison extends CurveComparison {
  a: string;
  b: string;
  solvable: SolvableSets;
  families: Record<string, CurveComparison & { solvable: SolvableSets }>;
}

export interface BoundaryAnalysis {
  ks: number[];
  /** Task ids present in every run, in the first run's order. */
  tasks: string[];
  /** Family of each shared task. */
  families: Record<string, string[]>;
  runs: BoundaryRun[];
  pairs: PairComparison[];
  /** Things a reader must know: task mismatches, unequal n. */
  warnings: string[];
}

/** Compares one pair of curves on their shared k values. */
export function compareCurves(a: PassAtKCurve, b: PassAtKCurve): CurveComparison {
  const kMax = Math.max(...a.map((point) => point.k).filter((k) => curveValue(b, k) !== undefined));
  const a1 = curveValue(a, 1);
  const b1 = curveValue(b, 1);
  if (a1 === undefined || b1 === undefined) throw new Error("compareCurves: both curves need k = 1");
  const leaderAtK1 = a1 > b1 ? "a" : b1 > a1 ? "b" : null;
  return {
    passAt1: { a: a1, b: b1 },
    kMax,
    passAtKMax: { a: curveValue(a, kMax)!, b: curveValue(b, kMax)! },
    passHatKMax: { a: curveHatValue(a, kMax) ?? null, b: curveHatValue(b, kMax) ?? null },
    leaderAtK1,
    crossoverK: leaderAtK1 === "a" ? crossoverK(a, b) : leaderAtK1 === "b" ? crossoverK(b, a) : null,
    gap: { aOverB: samplingEfficiencyGap(a, b, kMax), bOverA: samplingEfficiencyGap(b, a, kMax) },
  };
}

/** Solvable sets (c > 0) of two runs over the same task ids, in that order. */
export function compareSolvable(
  taskIds: readonly string[],
  a: ReadonlyMap<string, TaskCount>,
  b: ReadonlyMap<string, TaskCount>,
): SolvableSets {
  const sets: SolvableSets = {
    a: 0,
    b: 0,
    both: 0,
    neither: 0,
    onlyA: [],
    onlyB: [],
    aSubsetOfB: true,
    bSubsetOfA: true,
  };
  for (const id of taskIds) {
    const solvedA = (a.get(id)?.c ?? 0) > 0;
    const solvedB = (b.get(id)?.c ?? 0) > 0;
    if (solvedA) sets.a++;
    if (solvedB) sets.b++;
    if (solvedA && solvedB) sets.both++;
    else if (solvedA) sets.onlyA.push(id);
    else if (solvedB) sets.onlyB.push(id);
    else sets.neither++;
  }
  sets.aSubsetOfB = sets.onlyA.length === 0;
  sets.bSubsetOfA = sets.onlyB.length === 0;
  return sets;
}

export function analyzeBoundary(
  inputs: readonly BoundaryRunInput[],
  options: BoundaryOptions = {},
): BoundaryAnalysis {
  if (inputs.length < 2) throw new Error(`boundary: need at least two runs, got ${inputs.length}`);
  const labels = inputs.map((input) => input.label);
  if (new Set(labels).size !== labels.length)
    throw new Error(`boundary: duplicate run labels ${labels.join(", ")}`);
  const warnings: string[] = [];
  const byRun = inputs.map((input) => new Map(input.counts.map((count) => [count.taskId, count])));
  const tasks = inputs[0].counts
    .map((count) => count.taskId)
    .filter((id) => byRun.every((counts) => (counts.get(id)?.n ?? 0) > 0));
  if (tasks.length === 0)
    throw new Error(`boundary: the runs ${labels.join(", ")} share no task with samples`);
  const shared = new Set(tasks);
  inputs.forEach((input, i) => {
    const left = input.counts.filter((count) => !shared.has(count.taskId)).length;
    if (left > 0) {
      warnings.push(
        `${input.label}: ${left} of its ${input.counts.length} tasks are not in every run (or have no samples) and are left out`,
      );
    }
    const familyMismatch = tasks.find((id) => byRun[i].get(id)!.family !== byRun[0].get(id)!.family);
    if (familyMismatch)
      warnings.push(`${input.label}: task ${familyMismatch} has another family than in ${labels[0]}`);
  });

  const sharedCounts = byRun.map((counts) => tasks.map((id) => counts.get(id)!));
  const minN = sharedCounts.map((counts) => Math.min(...counts.map((count) => count.n)));
  const maxN = sharedCounts.map((counts) => Math.max(...counts.map((count) => count.n)));
  if (new Set([...minN, ...maxN]).size > 1) {
    warnings.push(
      `samples per task differ (${labels.map((label, i) => `${label}: ${minN[i] === maxN[i] ? minN[i] : `${minN[i]}–${maxN[i]}`}`).join(", ")}): curves stop at k = ${Math.min(...minN)}, and solvable sets use each run's own samples`,
    );
  }
  const ks = [...(options.ks ?? kGrid(Math.min(...minN)))];
  const curveOptions = { ks, ...(options.bootstrap !== undefined ? { bootstrap: options.bootstrap } : {}) };
  const runs: BoundaryRun[] = inputs.map((input, i) => ({
    label: input.label,
    n: minN[i],
    curves: passAtKCurves(sharedCounts[i], curveOptions),
    solvable: sharedCounts[i].filter((count) => count.c > 0).length,
    policyErrors: sharedCounts[i].reduce((sum, count) => sum + count.policyErrors, 0),
  }));

  const families: Record<string, string[]> = {};
  for (const id of tasks) {
    const family = byRun[0].get(id)!.family;
    if (!families[family]) families[family] = [];
    families[family].push(id);
  }
  const familyNames = Object.keys(families).sort();

  const pairs: PairComparison[] = [];
  for (let i = 0; i < inputs.length; i++) {
    for (let j = i + 1; j < inputs.length; j++) {
      const [a, b] = [runs[i], runs[j]];
      pairs.push({
        a: a.label,
        b: b.label,
        ...compareCurves(a.curves.overall, b.curves.overall),
        solvable: compareSolvable(tasks, byRun[i], byRun[j]),
        families: Object.fromEntries(
          familyNames.map((family) => [
            family,
            {
              ...compareCurves(a.curves.families[family], b.curves.families[family]),
              solvable: compareSolvable(families[family], byRun[i], byRun[j]),
            },
          ]),
        ),
      });
    }
  }
  return {
    ks,
    tasks,
    families: Object.fromEntries(familyNames.map((family) => [family, families[family]])),
    runs,
    pairs,
    warnings,
  };
}
