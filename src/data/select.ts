/**
 * Model-aware task selection (arXiv:2510.11701): run m rollouts per task with the current model,
 * drop the tasks it solves 0% or 100% of the time (their GRPO groups have all-equal rewards, zero
 * advantage, no gradient), and rebalance the rest into easy (pass rate ≥ 0.75), medium and hard
 * (≤ 0.25) to a target mix, or keep every one of them (`"all"`).
 *
 * Rebalancing: with target shares s_b over the buckets and a_b tasks available in bucket b, the
 * largest selection that meets the mix exactly has N = min_b floor(a_b / s_b) tasks (capped by
 * `count` when given), split by largest remainder; tasks within a bucket are drawn at random
 * (seeded). A bucket with a positive share and no task cannot be met: the mix is renormalised
 * over the other buckets and `mixMet` is false.
 *
 * Zero-variance groups: the fraction of tasks whose m outcomes are all equal. Before selection it
 * is measured on the candidates; after, on the same rollouts it is 0 by construction, so with
 * `recheck` the selected tasks get m fresh rollouts (another seed) and the fraction is measured
 * there: the rate an RL run on the selection would actually see.
 */
import { createRng, hashString, mixSeeds } from "../core/random.ts";
import { type EpisodeBudgets, runEpisodes } from "../env/run-episodes.ts";
import { worldToolsFor } from "../env/task-set.ts";
import type { ResolvePolicyOptions } from "../policy/resolve.ts";
import { resolvePolicy } from "../policy/resolve.ts";
import { uniformNoise } from "../tools/index.ts";
import type { Policy } from "../types/policy.ts";
import type { Task } from "../types/task.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { checkAnswer } from "../world/index.ts";

export const DIFFICULTIES = ["easy", "medium", "hard"] as const;
export type Difficulty = (typeof DIFFICULTIES)[number];
export type DifficultyMix = Record<Difficulty, number>;

export const DEFAULT_MIX: DifficultyMix = { easy: 0.3, medium: 0.4, hard: 0.3 };
/**
 * A target mix, or `"all"`: every task with signal, in the proportions measured (no rebalancing).
 * Rebalancing a hard family to a fixed mix keeps few tasks: long chains solved 10-15% of the time
 * have almost no easy task, and the mix's easy share caps the whole selection.
 */
export type SelectionMix = DifficultyMix | "all";
/** Pass rate at or above which a task is easy. */
export const EASY_THRESHOLD = 0.75;
/** Pass rate at or below which a task is hard. */
export const HARD_THRESHOLD = 0.25;

/** The bucket of a pass rate; null for 0 and 1 (dropped). */
export function difficultyOf(passRate: number): Difficulty | null {
  if (passRate <= 0 || passRate >= 1) return null;
  if (passRate >= EASY_THRESHOLD) return "easy";
  if (passRate <= HARD_THRESHOLD) return "hard";
  return "medium";
}

/** Parses `easy:0.3,medium:0.4,hard:0.3` (shares are normalised; absent buckets get 0) or `all`. */
export function parseMix(text: string): SelectionMix {
  if (text.trim() === "all") return "all";
  const mix: DifficultyMix = { easy: 0, medium: 0, hard: 0 };
  for (const part of text
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)) {
    const match = /^([a-z]+)\s*[:=]\s*([0-9.]+)$/.exec(part);
    if (
      !match ||
      !(DIFFICULTIES as readonly string[]).includes(match[1]) ||
      !Number.isFinite(Number(match[2]))
    ) {
      throw new Error(
        `--mix: "${part}" is not <bucket>:<share> with bucket one of ${DIFFICULTIES.join(", ")} (or the whole mix "all")`,
      );
    }
    mix[match[1] as Difficulty] = Number(match[2]);
  }
  const total = mix.easy + mix.medium + mix.hard;
  if (!(total > 0)) throw new Error("--mix: the shares must not all be 0");
  return { easy: mix.easy / total, medium: mix.medium / total, hard: mix.hard / total };
}

export interface TaskPassRate {
  task: Task;
  passes: number;
  rollouts: number;
  passRate: number;
}

export interface SelectedTask extends TaskPassRate {
  difficulty: Difficulty;
}

export interface Rebalanced {
  selected: SelectedTask[];
  /** Tasks per bucket among those with 0 < pass rate < 1. */
  available: DifficultyMix;
  chosen: DifficultyMix;
  /** The shares actually targeted (the requested mix, or its renormalisation when a bucket was empty). */
  target: DifficultyMix;
  mixMet: boolean;
}

/** Drops 0%/100% tasks and rebalances the rest to `mix` (see the file comment). */
export function rebalance(
  rates: readonly TaskPassRate[],
  selectionMix: SelectionMix,
  options: { count?: number; seed?: number } = {},
): Rebalanced {
  const pools: Record<Difficulty, SelectedTask[]> = { easy: [], medium: [], hard: [] };
  for (const rate of rates) {
    const difficulty = difficultyOf(rate.passRate);
    if (difficulty) pools[difficulty].push({ ...rate, difficulty });
  }
  const available = { easy: pools.easy.length, medium: pools.medium.length, hard: pools.hard.length };
  // "all": the measured shares, which every bucket meets exactly (an empty one gets share 0)
  const mix = selectionMix === "all" ? available : selectionMix;
  const mixMet = DIFFICULTIES.every((b) => mix[b] === 0 || available[b] > 0);
  const usable = DIFFICULTIES.filter((b) => mix[b] > 0 && available[b] > 0);
  const shareTotal = usable.reduce((sum, b) => sum + mix[b], 0);
  const target: DifficultyMix = { easy: 0, medium: 0, hard: 0 };
  for (const b of usable) target[b] = mix[b] / shareTotal;
  let total =
    usable.length === 0 ? 0 : Math.min(...usable.map((b) => Math.floor(available[b] / target[b] + 1e-9)));
  if (options.count !== undefined) total = Math.min(total, options.count);
  // Largest remainder: floors first, then +1 to the largest fractional parts that still have room.
  const chosen: DifficultyMix = { easy: 0, medium: 0, hard: 0 };
  for (const b of usable) chosen[b] = Math.floor(target[b] * total + 1e-9);
  let left = total - usable.reduce((sum, b) => sum + chosen[b], 0);
  const byRemainder = [...usable].sort(
    (a, b) =>
      target[b] * total - chosen[b] - (target[a] * total - chosen[a]) ||
      DIFFICULTIES.indexOf(a) - DIFFICULTIES.indexOf(b),
  );
  for (const b of byRemainder) {
    if (left === 0) break;
    if (chosen[b] < available[b]) {
      chosen[b]++;
      left--;
    }
  }
  const rng = createRng(options.seed ?? 0);
  const selected = DIFFICULTIES.flatMap((b) => rng.fork(b).shuffle(pools[b]).slice(0, chosen[b]));
  return { selected: rng.fork("order").shuffle(selected), available, chosen, target, mixMet };
}

/** Fraction of groups whose outcomes are all equal (0 for no groups). */
export function zeroVarianceFraction(groups: readonly (readonly boolean[])[]): number {
  if (groups.length === 0) return 0;
  const flat = groups.filter((group) => group.every((outcome) => outcome === group[0])).length;
  return flat / groups.length;
}

export interface PassRateOptions {
  policy: Policy;
  tasks: readonly Task[];
  /** Rollouts per task. */
  m: number;
  seed: number;
  /** Total tool failure rate (default 0). */
  noise?: number;
  budgets?: Partial<EpisodeBudgets>;
  batchSize?: number;
  onEpisode?: (trajectory: Trajectory) => void | Promise<void>;
  signal?: AbortSignal;
}

/** m rollouts per task (group = task index); pass rates in task order. */
export async function measurePassRates(
  options: PassRateOptions,
): Promise<{ rates: TaskPassRate[]; outcomes: boolean[][] }> {
  const { m } = options;
  if (!Number.isInteger(m) || m < 2) throw new Error(`m must be an integer >= 2, got ${m}`);
  const noise = options.noise ?? 0;
  // Sample-major order: a batch holds many tasks rather than all samples of a few.
  const episodes = Array.from({ length: m }, (_, sample) =>
    options.tasks.map((task, group) => ({
      task,
      group,
      seed: mixSeeds(mixSeeds(options.seed, hashString(task.id)), sample),
      id: `${task.id}#${sample}`,
    })),
  ).flat();
  const trajectories = await runEpisodes({
    policy: options.policy,
    episodes,
    tools: worldToolsFor(noise > 0 ? { noise: uniformNoise(noise) } : {}),
    verify: checkAnswer,
    budgets: options.budgets,
    batchSize: options.batchSize ?? 256,
    onEpisode: options.onEpisode,
    signal: options.signal,
  });
  const outcomes = options.tasks.map(() => [] as boolean[]);
  for (const [i, trajectory] of trajectories.entries()) outcomes[episodes[i].group].push(trajectory.correct);
  const rates = options.tasks.map((task, i) => {
    const passes = outcomes[i].filter(Boolean).length;
    return { task, passes, rollouts: m, passRate: passes / m };
  });
  return { rates, outcomes };
}

export interface SelectOptions extends Omit<PassRateOptions, "policy" | "onEpisode"> {
  policy: Policy;
  mix?: SelectionMix;
  /** Most tasks selected (default: as many as the mix allows). */
  count?: number;
  /** Re-measure the zero-variance fraction on the selection with m fresh rollouts (default true). */
  recheck?: boolean;
  onEpisode?: (trajectory: Trajectory, phase: "measure" | "recheck") => void | Promise<void>;
}

export interface SelectionResult extends Rebalanced {
  m: number;
  candidates: number;
  dropped: { unsolved: number; alwaysSolved: number };
  /** Pass-rate histogram of the candidates: passes (0…m) → tasks. */
  passHistogram: number[];
  zeroVariance: {
    /** Among the candidates, on the measuring rollouts. */
    before: number;
    /** Among the selected tasks, on the measuring rollouts (0 by construction). */
    afterInSample: number;
    /** Among the selected tasks, on m fresh rollouts (null without `recheck`). */
    afterFresh: number | null;
  };
}

/** Measures pass rates, drops 0%/100% tasks, rebalances, and re-measures zero variance. */
export async function selectTasks(options: SelectOptions): Promise<SelectionResult> {
  const mix = options.mix ?? DEFAULT_MIX;
  const measured = await measurePassRates({
    ...options,
    onEpisode: options.onEpisode ? (trajectory) => options.onEpisode!(trajectory, "measure") : undefined,
  });
  const rebalanced = rebalance(measured.rates, mix, { count: options.count, seed: options.seed });
  const selectedIds = new Set(rebalanced.selected.map((s) => s.task.id));
  let afterFresh: number | null = null;
  if ((options.recheck ?? true) && rebalanced.selected.length > 0) {
    const fresh = await measurePassRates({
      ...options,
      tasks: rebalanced.selected.map((s) => s.task),
      seed: mixSeeds(options.seed, hashString("recheck")),
      onEpisode: options.onEpisode ? (trajectory) => options.onEpisode!(trajectory, "recheck") : undefined,
    });
    afterFresh = zeroVarianceFraction(fresh.outcomes);
  }
  const passHistogram = new Array(options.m + 1).fill(0);
  for (const rate of measured.rates) passHistogram[rate.passes]++;
  return {
    ...rebalanced,
    m: options.m,
    candidates: options.tasks.length,
    dropped: {
      unsolved: measured.rates.filter((r) => r.passes === 0).length,
      alwaysSolved: measured.rates.filter((r) => r.passes === options.m).length,
    },
    passHistogram,
    zeroVariance: {
      before: zeroVarianceFraction(measured.outcomes),
      afterInSample: zeroVarianceFraction(
        measured.outcomes.filter((_, i) => selectedIds.has(options.tasks[i].id)),
      ),
      afterFresh,
    },
  };
}

/** Resolves a policy spec and selects (the CLI's and the recipe's entry point). */
export async function selectTasksFor(
  policySpec: string,
  policyOptions: ResolvePolicyOptions,
  options: Omit<SelectOptions, "policy">,
): Promise<{ result: SelectionResult; policyId: string }> {
  const policy = await resolvePolicy(policySpec, policyOptions);
  try {
    return { result: await selectTasks({ ...options, policy }), policyId: policy.id };
  } finally {
    await policy.close?.();
  }
}
