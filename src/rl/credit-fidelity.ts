/**
 * Credit fidelity: does an estimator put the blame on the turn that went wrong? The world knows
 * each task's gold plan (`task.gold`: the searches, calcs and answer an optimal agent makes), so in
 * a failed episode the first turn that departs from it is known, and every estimator's advantages
 * on the SAME batch (one policy, one sample) can be read on that turn and on the episode's other
 * turns. Outcome-only GRPO gives every token of an episode the same advantage, so its gap is 0 by
 * construction: any gap a turn-level estimator shows is the mechanism itself, measured without a
 * training run.
 *
 * Also here: the per-episode policy-gradient weight Σ_p A_p² (p over policy tokens), whose growth
 * with the chain length is the article's second hard problem (see `gradientWeights`).
 *
 * E=episodes of the batch; p=policy tokens of an episode; t=turns.
 */

import type { GoldStep, Task } from "../types/task.ts";
import type { Trajectory, Turn } from "../types/trajectory.ts";
import type { AdvantageBatch, AdvantageOptions } from "./advantages/index.ts";
import { computeAdvantages } from "./advantages/index.ts";

/** The estimators compared: outcome-only GRPO and the three turn-level ones (gae = MT-PPO). */
export const FIDELITY_ESTIMATORS = ["grpo", "mt-grpo", "gigpo", "gae"] as const;

/** Whether a turn takes one of the gold steps not yet taken (index into `pending`), or -1. */
function goldStepTaken(turn: Turn, pending: readonly GoldStep[], correctAnswer: boolean): number {
  const action = turn.action;
  if (action.type === "answer")
    return correctAnswer ? pending.findIndex((step) => step.type === "answer") : -1;
  if (action.type !== "tool-call" || turn.toolResult?.status !== "ok") return -1;
  if (action.tool === "search") {
    const refs = turn.toolResult.refs ?? [];
    return pending.findIndex((step) => step.type === "search" && refs.includes(step.entity));
  }
  if (action.tool === "calc") {
    const value = turn.toolResult.value;
    return pending.findIndex((step) => {
      if (step.type !== "calc" || value === undefined) return false;
      const gold = Number(step.result);
      return Math.abs(value - gold) <= 1e-6 * Math.max(1, Math.abs(gold));
    });
  }
  return -1;
}

/**
 * The first turn of a failed episode that departs from every gold plan, or null (a correct
 * episode, a task without a gold plan, or one that ran out of turns while still on the plan).
 *
 * The gold plans of a task are the orderings of its gold steps an agent can follow: a chain's
 * searches must come in order (each needs the name the last one read), a sum's chains in any
 * order, calcs once their operands are read, the answer last. A turn stays on a plan when it takes
 * a gold step not yet taken: a search whose `ok` result holds a gold entity's document, a calc
 * that returns a gold result, the correct answer. A turn whose tool failed for a reason outside the
 * policy (injected noise, a tool error) departs from nothing: the same call again is the plan. Any
 * other turn (a search for something else, a repeat of a step already taken, a calc no plan
 * needs, a wrong answer, an unparseable action) departs from every plan.
 */
export function faultyTurn(trajectory: Trajectory, task: Task): number | null {
  if (trajectory.correct || !task.gold || task.gold.length === 0) return null;
  const pending = [...task.gold];
  for (const [t, turn] of trajectory.turns.entries()) {
    const result = turn.toolResult;
    if (
      turn.action.type === "tool-call" &&
      result &&
      result.status !== "ok" &&
      (result.injected || result.failure)
    )
      continue; // the environment failed, not the policy
    const taken = goldStepTaken(turn, pending, trajectory.correct);
    if (taken < 0) return t;
    pending.splice(taken, 1);
  }
  return null;
}

/** Mean advantage of each turn's policy tokens (null for a turn without any). */
export function turnMeans(
  advantages: ArrayLike<number>,
  episode: AdvantageBatch["episodes"][number],
  turns: number,
): (number | null)[] {
  const sums = new Float64Array(turns);
  const counts = new Float64Array(turns);
  for (let i = 0; i < advantages.length; i++) {
    const t = episode.turnIndex[i];
    if (!episode.lossMask[i] || t < 0 || t >= turns) continue;
    sums[t] += advantages[i];
    counts[t]++;
  }
  return Array.from(sums, (sum, t) => (counts[t] > 0 ? sum / counts[t] : null));
}

/** One failed episode's faulty turn as one estimator credits it. */
export interface BlameRecord {
  /** The episode's group (its task's rollouts). */
  group: string | number;
  episode: number;
  faulty: number;
  /**
   * Mean advantage of the episode's other turns − the faulty turn's, in units of the estimator's
   * root-mean-square advantage over the batch's policy tokens (so estimators of different scales
   * compare): positive = the faulty turn is blamed more than the rest of its episode.
   */
  blame: number;
  /** The faulty turn's advantage is strictly the lowest of its episode's turns. */
  lowest: boolean;
}

/**
 * Every estimator's blame on the faulty turn of each failed episode of one batch. `faulty[e]` is
 * episode e's faulty turn (null: not counted); `turns[e]` its number of turns. Episodes need at
 * least one other turn with policy tokens. MT-PPO (`gae`) needs `values` on the episodes.
 */
export function blameOnFaultyTurns(
  batch: AdvantageBatch,
  faulty: readonly (number | null)[],
  turns: readonly number[],
  estimators: readonly string[],
  options: AdvantageOptions = {},
): Record<string, BlameRecord[]> {
  const out: Record<string, BlameRecord[]> = {};
  for (const estimator of estimators) {
    const { advantages } = computeAdvantages(estimator, batch, options);
    // RMS over the batch's policy tokens: the estimator's own scale
    let squares = 0;
    let tokens = 0;
    batch.episodes.forEach((episode, e) => {
      for (let i = 0; i < advantages[e].length; i++) {
        if (!episode.lossMask[i]) continue;
        squares += advantages[e][i] ** 2;
        tokens++;
      }
    });
    const scale = tokens > 0 && squares > 0 ? Math.sqrt(squares / tokens) : 1;
    const records: BlameRecord[] = [];
    batch.episodes.forEach((episode, e) => {
      const f = faulty[e];
      if (f === null || f === undefined) return;
      const means = turnMeans(advantages[e], episode, turns[e]);
      const own = means[f];
      const others = means.filter((value, t): value is number => t !== f && value !== null);
      if (own === null || others.length === 0) return;
      const rest = others.reduce((sum, x) => sum + x, 0) / others.length;
      records.push({
        group: episode.group,
        episode: e,
        faulty: f,
        blame: (rest - own) / scale,
        lowest: others.every((value) => own < value - 1e-9),
      });
    });
    out[estimator] = records;
  }
  return out;
}

/**
 * The policy-gradient weight of each episode: Σ_p A_p² over its policy tokens. The gradient an
 * episode contributes is Σ_p A_p ∇log π(a_p); with score terms of similar size and weakly
 * correlated across tokens its second moment scales as Σ_p A_p², so the batch mean of this weight
 * tracks the variance of the policy-gradient estimate, per episode, without a backward pass.
 * (The variance of the per-token advantages themselves is not defined usefully here: GRPO, MT-GRPO
 * and GiGPO divide by the group's std and GAE whitens, so it is ≈ 1 by construction whatever the
 * length. Pass `{ normalization: "none", whiten: false }` to read the estimators' raw scale.)
 */
export function gradientWeights(
  batch: AdvantageBatch,
  estimator: string,
  options: AdvantageOptions = {},
): number[] {
  const { advantages } = computeAdvantages(estimator, batch, options);
  return batch.episodes.map((episode, e) => {
    let sum = 0;
    for (let i = 0; i < advantages[e].length; i++) if (episode.lossMask[i]) sum += advantages[e][i] ** 2;
    return sum;
  });
}
