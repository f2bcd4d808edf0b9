/**
 * The token-level view of one episode, as the dashboard draws it: the prompt, then per turn the
 * policy's tokens (loss mask 1, with their sampling log-probs and advantages), the parsed action,
 * the tool result with its status (injected noise marked), the observation tokens (mask 0) and
 * the turn's rewards. Token order and masks follow `flattenTrajectory` exactly, so the view has
 * one cell per token of the stored sequence.
 *
 * Numbers that JSON cannot carry (a log-prob of -Infinity, a NaN reward) travel as their string
 * spelling (`"-Infinity"`), so the page shows them instead of a silent null.
 */
import { encodeJson } from "../store/index.ts";
import type { ToolResult } from "../types/tool.ts";
import { type Action, flattenTrajectory, type Trajectory } from "../types/trajectory.ts";
import { tokenLabels } from "./token-labels.ts";

export type WireNumber = number | string;

export interface TokenCell {
  id: number;
  /** The token's text when the turn's text splits into exactly one word per id, else null. */
  label: string | null;
  mask: 0 | 1;
  /** Sampling log-prob; null off the mask or when the policy gave none. */
  logprob: WireNumber | null;
  /** Advantage the loss would weight this token by; null when unknown. */
  advantage: WireNumber | null;
}

export interface TurnView {
  index: number;
  text: string;
  tokens: TokenCell[];
  action: Action;
  toolResult: ToolResult | null;
  observation: { text: string; tokens: TokenCell[] } | null;
  rewards: Record<string, WireNumber | null>;
}

export interface EpisodeView {
  seq: number;
  key: string;
  step: number | null;
  id: string;
  taskId: string;
  family: string;
  policyId: string;
  seed: number;
  group: number | null;
  correct: boolean;
  outcomeReward: WireNumber | null;
  finalAnswer: string | null;
  endReason: string;
  prompt: { text: string; tokens: TokenCell[] };
  turns: TurnView[];
  tokenCount: number;
  /** Where the advantages come from, or why there are none. */
  advantageNote: string;
  /** `trajectory.info` as lossless JSON (see json-codec.ts), or null. */
  infoJson: string | null;
}

export function wireNumber(value: number): WireNumber {
  return Number.isFinite(value) ? value : String(value);
}

const nullableWire = (value: number | null | undefined) =>
  value === null || value === undefined ? null : wireNumber(value);

export function episodeView(
  stored: { seq: number; key: string; step: number | null; trajectory: Trajectory },
  advantages: { values: ArrayLike<number> | null; note: string },
): EpisodeView {
  const trajectory = stored.trajectory;
  const flat = flattenTrajectory(trajectory);
  if (advantages.values && advantages.values.length !== flat.tokenIds.length) {
    throw new Error(
      `advantages have ${advantages.values.length} entries for ${flat.tokenIds.length} tokens of episode ${trajectory.id}`,
    );
  }
  let position = 0;
  const cells = (ids: number[], text: string, logprobs: number[] | null): TokenCell[] => {
    const labels = tokenLabels(text, ids.length);
    return ids.map((id, i) => {
      const at = position++;
      const mask = flat.lossMask[at] === 1 ? 1 : 0;
      const advantage = advantages.values && mask === 1 ? wireNumber(advantages.values[at]) : null;
      const logprob = mask === 1 && logprobs ? nullableWire(logprobs[i]) : null;
      return { id, label: labels?.[i] ?? null, mask, logprob, advantage };
    });
  };
  const prompt = {
    text: trajectory.prompt.text,
    tokens: cells(trajectory.prompt.tokenIds, trajectory.prompt.text, null),
  };
  const turns = trajectory.turns.map(
    (turn): TurnView => ({
      index: turn.index,
      text: turn.text,
      tokens: cells(turn.tokenIds, turn.text, turn.logprobs),
      action: turn.action,
      toolResult: turn.toolResult ?? null,
      observation: turn.observation
        ? {
            text: turn.observation.text,
            tokens: cells(turn.observation.tokenIds, turn.observation.text, null),
          }
        : null,
      rewards: Object.fromEntries(Object.entries(turn.rewards).map(([name, v]) => [name, nullableWire(v)])),
    }),
  );
  return {
    seq: stored.seq,
    key: stored.key,
    step: stored.step,
    id: trajectory.id,
    taskId: trajectory.taskId,
    family: trajectory.family,
    policyId: trajectory.policyId,
    seed: trajectory.seed,
    group: trajectory.group ?? null,
    correct: trajectory.correct,
    outcomeReward: nullableWire(trajectory.outcomeReward),
    finalAnswer: trajectory.finalAnswer,
    endReason: trajectory.endReason,
    prompt,
    turns,
    tokenCount: position,
    advantageNote: advantages.note,
    infoJson: trajectory.info === undefined ? null : encodeJson(trajectory.info),
  };
}
