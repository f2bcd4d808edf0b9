/**
 * The trajectory: the single currency between stages (env → reward → advantage → loss → store).
 *
 * Token ids are the exact ids the policy produced or was fed; they are never re-tokenised later
 * (re-tokenisation drift is the most reported bug in the anchors). The full token sequence of an
 * episode is `prompt.tokenIds` followed, per turn, by `tokenIds` (policy, loss mask 1) and then
 * `observation.tokenIds` (environment, loss mask 0): see `flattenTrajectory`.
 */
import type { Failure } from "./failure.ts";
import type { ToolResult } from "./tool.ts";

/** What the policy's turn was parsed into. */
export type Action =
  | { type: "tool-call"; tool: string; arguments: Record<string, unknown>; callId?: string }
  | { type: "answer"; answer: string }
  | { type: "format-error"; error: string };

/** Why an episode ended. */
export const END_REASONS = ["answer", "max-turns", "max-tokens", "format-error", "policy-error"] as const;
export type EndReason = (typeof END_REASONS)[number];

/** Rewards attached to one turn, by name; null means unscorable (excluded from baselines). */
export type TurnRewards = Record<string, number | null>;

export interface Turn {
  index: number;
  /** Text the policy wrote in this turn. */
  text: string;
  /** Exact ids the policy sampled (empty when the policy has no tokenizer, e.g. scripted). */
  tokenIds: number[];
  /** Log-prob of each sampled id under the sampling policy, when known. */
  logprobs: number[] | null;
  /**
   * Reasoning the model wrote before `text` (a server's `reasoning_content` / `reasoning`), when it
   * was returned apart: its ids are part of `tokenIds`, which cover the whole completion.
   */
  reasoning?: string;
  action: Action;
  /** Absent when the action called no tool. */
  toolResult?: ToolResult;
  /** Text and ids appended to the context after the turn (tool output or an error message). */
  observation?: { text: string; tokenIds: number[] };
  rewards: TurnRewards;
}

export interface Trajectory {
  id: string;
  taskId: string;
  family: string;
  policyId: string;
  /** Seed of the episode: sampling and tool noise are drawn from it. */
  seed: number;
  /** Group index when several episodes of one task are rolled out together (GRPO groups). */
  group?: number;
  prompt: { text: string; tokenIds: number[] };
  turns: Turn[];
  finalAnswer: string | null;
  correct: boolean;
  /** Outcome reward; null when unscorable. */
  outcomeReward: number | null;
  endReason: EndReason;
  /**
   * Why the episode failed, when the class is not plain `policy` (see failure.ts): `agent`, `infra`
   * (never scored: excluded from pass@k, RL groups and SFT data), or a `policy` failure with a code.
   */
  failure?: Failure;
  /** Free-form details (policy error message, noise config, timings). */
  info?: Record<string, unknown>;
}

/** Token-level view used by losses: ids, loss mask (1 = policy wrote it) and sampling log-probs. */
export interface FlatTrajectory {
  tokenIds: number[];
  lossMask: number[];
  /** Sampling log-prob of each token, 0 where the mask is 0 or the policy gave none. */
  logprobs: number[];
  /** Turn index of each token (-1 for the prompt). */
  turnIndex: number[];
}

export function flattenTrajectory(trajectory: Trajectory): FlatTrajectory {
  const flat: FlatTrajectory = { tokenIds: [], lossMask: [], logprobs: [], turnIndex: [] };
  const push = (ids: number[], mask: number, turn: number, logprobs?: number[] | null) => {
    for (let i = 0; i < ids.length; i++) {
      flat.tokenIds.push(ids[i]);
      flat.lossMask.push(mask);
      flat.logprobs.push(mask && logprobs ? logprobs[i] : 0);
      flat.turnIndex.push(turn);
    }
  };
  push(trajectory.prompt.tokenIds, 0, -1);
  for (const turn of trajectory.turns) {
    push(turn.tokenIds, 1, turn.index, turn.logprobs);
    if (turn.observation) push(turn.observation.tokenIds, 0, turn.index);
  }
  return flat;
}

/** Number of tool calls the policy made (format errors excluded). */
export function countToolCalls(trajectory: Trajectory): number {
  return trajectory.turns.filter((turn) => turn.action.type === "tool-call").length;
}
