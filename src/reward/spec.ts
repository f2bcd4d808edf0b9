/**
 * Named rewards and how a config combines them. Configs select rewards by name from two closed
 * maps (outcome and turn); a `RewardSpec` lists weighted terms of each, plus whether turn rewards
 * are noise-aware. `scoreTrajectory` evaluates a spec; `withRewards` writes the result into a
 * copy of the trajectory (`outcomeReward`, and per turn one entry per term plus `total`).
 *
 * Combination rules. Outcome: the weighted sum of the terms, null when any term is null (an
 * unscorable episode stays unscorable). Turn: per turn, the weighted sum of the terms that judge
 * the turn (a term's null on a turn it does not judge, e.g. an answer turn for a search reward,
 * counts as nothing), so a turn no term judges gets 0: it earned no turn reward. The combined value
 * is null only for a NEUTRAL turn, one a noise-aware term neutralised because injected tool noise
 * spoiled it; estimators leave neutral turns out of their baselines (src/rl/advantages/). A term
 * that judges nothing on a task (a task without evidence) simply contributes nothing.
 */
import type { Task } from "../types/task.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { noiseAware } from "./noise.ts";
import { containsAnswerReward, demyAgentReward, exactMatchReward, formatReward } from "./outcome.ts";
import { overlongReward } from "./overlong.ts";
import { calcCorrectReward, evidenceReward, toolExecutedReward } from "./turn.ts";

export const OUTCOME_REWARDS = {
  "exact-match": exactMatchReward,
  "contains-answer": containsAnswerReward,
  format: formatReward,
  demyagent: demyAgentReward,
  overlong: overlongReward,
} as const;

export const TURN_REWARDS = {
  "tool-executed": toolExecutedReward,
  evidence: evidenceReward,
  "calc-correct": calcCorrectReward,
} as const;

export type OutcomeRewardName = keyof typeof OUTCOME_REWARDS;
export type TurnRewardName = keyof typeof TURN_REWARDS;
export const OUTCOME_REWARD_NAMES = Object.keys(OUTCOME_REWARDS) as OutcomeRewardName[];
export const TURN_REWARD_NAMES = Object.keys(TURN_REWARDS) as TurnRewardName[];

type OptionsOf<F> = F extends (trajectory: Trajectory, task: Task, options?: infer O) => unknown ? O : never;

/** One weighted outcome term; `options` typed by the reward's name. */
export type OutcomeTerm = {
  [N in OutcomeRewardName]: { name: N; weight?: number; options?: OptionsOf<(typeof OUTCOME_REWARDS)[N]> };
}[OutcomeRewardName];

/** One weighted turn term; `options` typed by the reward's name. */
export type TurnTerm = {
  [N in TurnRewardName]: { name: N; weight?: number; options?: OptionsOf<(typeof TURN_REWARDS)[N]> };
}[TurnRewardName];

export interface RewardSpec {
  /** Outcome terms, summed with their weights (default weight 1). */
  outcome: OutcomeTerm[];
  /** Turn-level terms (default none). */
  turn?: TurnTerm[];
  /** `aware`: turn rewards neutralise injected tool failures (./noise.ts). Default `naive`. */
  noise?: "naive" | "aware";
}

/**
 * Turn-level credit that cannot be farmed: the outcome is exact match only (no format or partial
 * bonus a non-answer can collect), and turn rewards pay for progress, once: each distinct gold
 * evidence document the first time it is retrieved, each gold calc step the first time it is
 * computed, each as a share so the episode's turn total is at most 0.5 + 0.5 (evidence, calc)
 * whatever the chain length; repeats, failed calls and executed-but-useless calls earn 0.
 */
const TURN_CREDIT = {
  outcome: [{ name: "exact-match", weight: 1 }],
  turn: [
    { name: "evidence", weight: 0.5, options: { fraction: true } },
    { name: "calc-correct", weight: 0.5, options: { fraction: true } },
  ],
} as const satisfies RewardSpec;

/** MT-GRPO's reward terms as in the paper; see the preset's warning. */
const MT_GRPO = {
  outcome: [
    { name: "exact-match", weight: 1 },
    { name: "contains-answer", weight: 0.5 },
    { name: "format", weight: 0.2 },
  ],
  turn: [
    { name: "tool-executed", weight: 0.2 },
    { name: "evidence", weight: 0.5 },
    { name: "calc-correct", weight: 0.5 },
  ],
} as const satisfies RewardSpec;

/** Ready-made specs, selectable by name. */
export const REWARD_PRESETS = {
  /** Exact match only (Search-R1). */
  "exact-match": { outcome: [{ name: "exact-match" }] },
  /** DemyAgent's released reward (arXiv:2510.11701). */
  demyagent: { outcome: [{ name: "demyagent" }] },
  /**
   * Capped turn-level credit (TURN_CREDIT above): the preset for turn-level estimators (mt-grpo,
   * gigpo, gae) on multi-hop tasks, and what scripts/credit-assignment.ts trains with.
   */
  "turn-credit": TURN_CREDIT,
  /** The same with noise-aware turn rewards. */
  "turn-credit-noise-aware": { ...TURN_CREDIT, noise: "aware" },
  /**
   * MT-GRPO's rewards (arXiv:2505.11821): outcome EM 1, contained 0.5, format 0.2; turn tool 0.2,
   * evidence 0.5, calc 0.5. Made for two-turn episodes: over up to 14 turns it can be farmed.
   * Measured here (chain, base-strong, 20 steps): outcome-only GRPO settled on the 0.2 format bonus
   * of a tool-free answer, and MT-GRPO and GiGPO inflated tool calls to ~10 per episode (0.2 per
   * executed call). Prefer `turn-credit`.
   */
  "mt-grpo": MT_GRPO,
  /** The same with noise-aware turn rewards. */
  "mt-grpo-noise-aware": { ...MT_GRPO, noise: "aware" },
} as const satisfies Record<string, RewardSpec>;

export type RewardPresetName = keyof typeof REWARD_PRESETS;

/** Key under which `withRewards` stores each turn's combined turn reward. */
export const TURN_REWARD_TOTAL = "total";

function listOf(names: readonly string[]): string {
  return names.map((name) => `"${name}"`).join(", ");
}

/** A spec by preset name or as given, checked: unknown names and bad weights throw, naming the valid ones. */
export function resolveRewardSpec(spec: RewardSpec | string): RewardSpec {
  if (typeof spec === "string") {
    if (!(spec in REWARD_PRESETS)) {
      throw new Error(`unknown reward preset "${spec}"; valid: ${listOf(Object.keys(REWARD_PRESETS))}`);
    }
    return REWARD_PRESETS[spec as RewardPresetName] as RewardSpec;
  }
  for (const term of spec.outcome) {
    if (!(term.name in OUTCOME_REWARDS)) {
      throw new Error(`unknown outcome reward "${term.name}"; valid: ${listOf(OUTCOME_REWARD_NAMES)}`);
    }
  }
  for (const term of spec.turn ?? []) {
    if (!(term.name in TURN_REWARDS)) {
      throw new Error(`unknown turn reward "${term.name}"; valid: ${listOf(TURN_REWARD_NAMES)}`);
    }
  }
  for (const term of [...spec.outcome, ...(spec.turn ?? [])]) {
    if (term.weight !== undefined && !Number.isFinite(term.weight)) {
      throw new Error(`reward "${term.name}": weight must be a finite number, got ${term.weight}`);
    }
  }
  if (spec.noise !== undefined && spec.noise !== "naive" && spec.noise !== "aware") {
    throw new Error(`reward noise must be "naive" or "aware", got "${spec.noise}"`);
  }
  return spec;
}

export interface RewardScores {
  /** Combined outcome reward (null: unscorable). */
  outcome: number | null;
  /** Combined turn reward per turn: 0 when no term judged the turn, null when noise made it neutral. */
  turns: (number | null)[];
  /** Each outcome term's unweighted value, by name. */
  outcomeTerms: Record<string, number | null>;
  /** Each turn term's unweighted values, by name. */
  turnTerms: Record<string, (number | null)[]>;
}

function evaluateOutcome(term: OutcomeTerm, trajectory: Trajectory, task: Task): number | null {
  // The map is closed and `term.options` is typed by `term.name`; TypeScript cannot correlate
  // the two through the union, hence the widening.
  const reward = OUTCOME_REWARDS[term.name] as (t: Trajectory, k: Task, o?: unknown) => number | null;
  return reward(trajectory, task, term.options);
}

/** A term's values per turn, and which turns noise-awareness neutralised (judged when naive, null when aware). */
function evaluateTurn(term: TurnTerm, trajectory: Trajectory, task: Task, aware: boolean) {
  const reward = TURN_REWARDS[term.name] as (t: Trajectory, k: Task, o?: unknown) => (number | null)[];
  const naive = reward(trajectory, task, term.options);
  if (!aware) return { values: naive, neutral: naive.map(() => false) };
  const values = noiseAware(reward)(trajectory, task, term.options);
  return { values, neutral: values.map((value, i) => value === null && naive[i] !== null) };
}

export function scoreTrajectory(trajectory: Trajectory, task: Task, spec: RewardSpec | string): RewardScores {
  const resolved = resolveRewardSpec(spec);
  const outcomeTerms: Record<string, number | null> = {};
  let outcome: number | null = 0;
  for (const term of resolved.outcome) {
    const value = evaluateOutcome(term, trajectory, task);
    outcomeTerms[term.name] = value;
    outcome = outcome === null || value === null ? null : outcome + (term.weight ?? 1) * value;
  }
  const turnTerms: Record<string, (number | null)[]> = {};
  const sums = trajectory.turns.map(() => 0);
  const neutral = trajectory.turns.map(() => false);
  for (const term of resolved.turn ?? []) {
    const evaluated = evaluateTurn(term, trajectory, task, resolved.noise === "aware");
    turnTerms[term.name] = evaluated.values;
    evaluated.values.forEach((value, i) => {
      if (value !== null) sums[i] += (term.weight ?? 1) * value;
      if (evaluated.neutral[i]) neutral[i] = true;
    });
  }
  const turns = sums.map((sum, i) => (neutral[i] ? null : sum));
  return { outcome, turns, outcomeTerms, turnTerms };
}

/** A copy of the trajectory with `outcomeReward` and every turn's `rewards` filled from the spec. */
export function withRewards(trajectory: Trajectory, task: Task, spec: RewardSpec | string): Trajectory {
  const scores = scoreTrajectory(trajectory, task, spec);
  return {
    ...trajectory,
    outcomeReward: scores.outcome,
    turns: trajectory.turns.map((turn, i) => {
      const rewards = { ...turn.rewards };
      for (const [name, values] of Object.entries(scores.turnTerms)) rewards[name] = values[i];
      rewards[TURN_REWARD_TOTAL] = scores.turns[i];
      return { ...turn, rewards };
    }),
  };
}
