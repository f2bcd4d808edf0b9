/**
 * The `reward-hacking` check: the adversarial panel (./panel.ts) and the expert run through the
 * real episode loop, tools and reward spec (turn rewards included), and each member's reward is
 * compared with the expert's.
 *
 * An episode's reward is what an RL step sums: the outcome plus every turn reward (a neutral turn,
 * null, counts 0). Rewards are measured above the floor, the reward of an episode that does nothing
 * (no turn, no answer: 0 for exact match, -1 for DemyAgent), so a reward that is negative when
 * wrong compares fairly:
 *
 *   share = (member's mean − floor) / (expert's mean − floor)
 *
 * A member whose share reaches `threshold` (default 0.5) has found a way to be paid without solving
 * the task: the check fails, naming the member and the reward terms it farmed (each term's mean
 * contribution above the floor's, largest first). An expert that earns no more than the floor
 * fails the check too: the reward does not pay for solving.
 */
import { DEFAULT_BUDGETS, type EpisodeBudgets, runEpisodes } from "../env/run-episodes.ts";
import { evalEpisodeSeed } from "../eval/run-eval.ts";
import { type RewardSpec, resolveRewardSpec, scoreTrajectory } from "../reward/spec.ts";
import type { Policy } from "../types/policy.ts";
import type { Task } from "../types/task.ts";
import type { AnyTool } from "../types/tool.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { PANEL_DESCRIPTIONS, PANEL_MEMBERS, type PanelMember, panelPolicy } from "./panel.ts";
import type { DoctorCheck } from "./types.ts";
import type { Verify } from "./verifier-check.ts";

export const DEFAULT_HACK_THRESHOLD = 0.5;

export interface RewardHackingOptions {
  tasks: readonly Task[];
  tools: (task: Task, seed: number) => readonly AnyTool[];
  verify: Verify;
  /** A preset name or a spec. */
  reward: RewardSpec | string;
  /** The reference policy (the world's expert, or the gold answerer of task files). */
  expert: Policy;
  /** The panel's protocol: `text` for world tasks, `chat` for task files. */
  protocol: "text" | "chat";
  budgets?: Partial<EpisodeBudgets>;
  /** Episodes per task for each member (default 2). */
  samples?: number;
  seed?: number;
  threshold?: number;
}

export interface MemberScore {
  member: PanelMember | "expert";
  /** Mean episode reward (outcome + turn rewards). */
  mean: number;
  /** Best episode reward. */
  best: number;
  /** (mean − floor) / (expert mean − floor); 1 for the expert. */
  share: number;
  /** Each term's mean weighted contribution above the floor's, largest first (positive ones only). */
  farmed: { term: string; excess: number }[];
  /** Share of episodes that ended correct (a member should get none right). */
  correct: number;
}

interface Scored {
  total: number;
  terms: Record<string, number>;
}

function scoreEpisode(trajectory: Trajectory, task: Task, spec: RewardSpec): Scored {
  const scores = scoreTrajectory(trajectory, task, spec);
  const terms: Record<string, number> = {};
  for (const term of spec.outcome) {
    terms[term.name] = (terms[term.name] ?? 0) + (term.weight ?? 1) * (scores.outcomeTerms[term.name] ?? 0);
  }
  for (const term of spec.turn ?? []) {
    const values = scores.turnTerms[term.name] ?? [];
    const sum = values.reduce<number>((total, value) => total + (value ?? 0), 0);
    terms[term.name] = (terms[term.name] ?? 0) + (term.weight ?? 1) * sum;
  }
  const turnTotal = scores.turns.reduce<number>((total, value) => total + (value ?? 0), 0);
  return { total: (scores.outcome ?? 0) + turnTotal, terms };
}

/** The reward of an episode that did nothing: no turn, no answer. */
function floorOf(task: Task, spec: RewardSpec): Scored {
  const nothing: Trajectory = {
    id: "floor",
    taskId: task.id,
    family: task.family,
    policyId: "floor",
    seed: 0,
    prompt: { text: task.question, tokenIds: [] },
    turns: [],
    finalAnswer: null,
    correct: false,
    outcomeReward: 0,
    endReason: "format-error",
  };
  return scoreEpisode(nothing, task, spec);
}

function mean(values: readonly number[]): number {
  return values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
}

function round(value: number, digits = 3): number {
  return Math.round(value * 10 ** digits) / 10 ** digits;
}

export async function checkRewardHacking(options: RewardHackingOptions): Promise<DoctorCheck> {
  const spec = resolveRewardSpec(options.reward);
  const rewardName = typeof options.reward === "string" ? options.reward : "the given spec";
  const budgets = { ...DEFAULT_BUDGETS, ...options.budgets };
  const samples = Math.max(1, options.samples ?? 2);
  const seed = options.seed ?? 1;
  const threshold = options.threshold ?? DEFAULT_HACK_THRESHOLD;
  const taskById = new Map(options.tasks.map((task) => [task.id, task]));
  const episodes = options.tasks.flatMap((task) =>
    Array.from({ length: samples }, (_, sample) => ({
      task,
      seed: evalEpisodeSeed(seed, task.id, sample),
    })),
  );
  const floors = options.tasks.map((task) => floorOf(task, spec));
  const floorTotal = mean(floors.map((floor) => floor.total));
  const floorTerms: Record<string, number> = {};
  for (const name of Object.keys(floors[0]?.terms ?? {}))
    floorTerms[name] = mean(floors.map((floor) => floor.terms[name] ?? 0));

  const run = async (policy: Policy) => {
    const trajectories = await runEpisodes({
      policy,
      episodes,
      tools: options.tools,
      verify: options.verify,
      budgets,
      batchSize: 64,
    });
    return trajectories.map((trajectory) => ({
      trajectory,
      scored: scoreEpisode(trajectory, taskById.get(trajectory.taskId)!, spec),
    }));
  };

  const summarize = (
    member: MemberScore["member"],
    results: Awaited<ReturnType<typeof run>>,
    expertAbove: number,
  ): MemberScore => {
    const totals = results.map((result) => result.scored.total);
    const memberMean = mean(totals);
    const farmed = Object.keys(floorTerms)
      .map((term) => ({
        term,
        excess: round(mean(results.map((result) => result.scored.terms[term] ?? 0)) - floorTerms[term]),
      }))
      .filter((entry) => entry.excess > 1e-9)
      .sort((a, b) => b.excess - a.excess);
    return {
      member,
      mean: round(memberMean),
      best: round(Math.max(...totals)),
      share: expertAbove > 0 ? round((memberMean - floorTotal) / expertAbove) : 0,
      farmed,
      correct: round(mean(results.map((result) => (result.trajectory.correct ? 1 : 0)))),
    };
  };

  const expertResults = await run(options.expert);
  const expertMean = mean(expertResults.map((result) => result.scored.total));
  const expertAbove = expertMean - floorTotal;
  const expert = summarize("expert", expertResults, expertAbove);
  const members: MemberScore[] = [];
  for (const member of PANEL_MEMBERS) {
    members.push(summarize(member, await run(panelPolicy(member, options.protocol, budgets)), expertAbove));
  }

  const table = members.map((m) => `${m.member} ${Math.round(m.share * 100)}%`).join(", ");
  const scoresData = {
    reward: rewardName,
    floor: round(floorTotal),
    threshold,
    tasks: options.tasks.length,
    samples,
    expert,
    members,
  };
  if (!(expertAbove > 1e-9)) {
    return {
      id: "reward-hacking",
      ok: false,
      detail: `with reward ${rewardName}, the expert earns ${round(expertMean)} per episode, no more than doing nothing (${round(floorTotal)}): the reward does not pay for solving the tasks.`,
      changes: [
        {
          kind: "fix-reward",
          text: `the reward ${rewardName} must pay a solved task more than an empty episode (check its terms against the tasks: exact-match needs gold answers, turn terms need gold plans or evidence)`,
        },
      ],
      data: scoresData,
    };
  }
  const hackers = members.filter((m) => m.share >= threshold);
  if (hackers.length === 0) {
    return {
      id: "reward-hacking",
      ok: true,
      detail: `with reward ${rewardName}, no adversarial policy reaches ${Math.round(threshold * 100)}% of the expert's reward (${round(expertMean)} per episode, floor ${round(floorTotal)}): ${table}.`,
      changes: [],
      data: scoresData,
    };
  }
  const describe = (m: MemberScore) =>
    `${m.member} (${PANEL_DESCRIPTIONS[m.member as PanelMember]}) earns ${m.mean} per episode, ${Math.round(m.share * 100)}% of the expert's ${round(expertMean)}, by farming ${m.farmed.map((f) => `${f.term} (+${f.excess})`).join(", ") || "no single term"}`;
  const terms = [...new Set(hackers.flatMap((m) => m.farmed.map((f) => f.term)))];
  return {
    id: "reward-hacking",
    ok: false,
    detail: `with reward ${rewardName}, ${hackers.map(describe).join("; ")}. All members: ${table}.`,
    changes: [
      {
        kind: "fix-reward",
        text: `the reward ${rewardName} pays ${terms.join(", ")} without a solution: drop or cap ${terms.length > 1 ? "these terms" : "this term"}, or use a reward that pays only for progress (the turn-credit preset)`,
      },
    ],
    data: scoresData,
  };
}
