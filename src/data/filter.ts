/**
 * Rejection-sampling filters for collected trajectories. A filter is a list of criteria, all of
 * which must hold; on the command line a comma-separated spec:
 *
 *   correct                       the answer was right (the default)
 *   correct,no-format-error       ... and no malformed turn
 *   correct,max-turns=8           ... in at most 8 turns
 *   all                           keep everything (no criterion)
 *
 * Criteria: `correct`, `answered` (ended with an answer, right or wrong), `no-format-error`,
 * `with-tool-failure` (at least one tool call failed: recovery demonstrations), `max-turns=N`,
 * `max-tool-calls=N`.
 */
import type { Trajectory } from "../types/trajectory.ts";

export type FilterCriterion =
  | { type: "correct" }
  | { type: "answered" }
  | { type: "no-format-error" }
  | { type: "with-tool-failure" }
  | { type: "max-turns"; value: number }
  | { type: "max-tool-calls"; value: number };

export const FILTER_CRITERIA = [
  "all",
  "correct",
  "answered",
  "no-format-error",
  "with-tool-failure",
  "max-turns=N",
  "max-tool-calls=N",
] as const;

/** Parses a filter spec (see the file comment); throws naming the bad part and the valid ones. */
export function parseFilter(spec: string): FilterCriterion[] {
  const criteria: FilterCriterion[] = [];
  for (const part of spec
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)) {
    if (part === "all") continue;
    if (
      part === "correct" ||
      part === "answered" ||
      part === "no-format-error" ||
      part === "with-tool-failure"
    ) {
      criteria.push({ type: part });
      continue;
    }
    const match = /^(max-turns|max-tool-calls)=(\d+)$/.exec(part);
    if (match && Number(match[2]) >= 1) {
      criteria.push({ type: match[1] as "max-turns" | "max-tool-calls", value: Number(match[2]) });
      continue;
    }
    throw new Error(`filter: unknown criterion "${part}" (valid: ${FILTER_CRITERIA.join(", ")}; N >= 1)`);
  }
  return criteria;
}

/** The spec of a list of criteria (`all` when empty): what provenance records. */
export function formatFilter(criteria: readonly FilterCriterion[]): string {
  if (criteria.length === 0) return "all";
  return criteria.map((c) => ("value" in c ? `${c.type}=${c.value}` : c.type)).join(",");
}

/** The first criterion the trajectory fails (its rejection reason), or null when it passes. */
export function rejectionReason(trajectory: Trajectory, criteria: readonly FilterCriterion[]): string | null {
  for (const criterion of criteria) {
    if (!holds(trajectory, criterion))
      return "value" in criterion ? `${criterion.type}=${criterion.value}` : criterion.type;
  }
  return null;
}

function holds(trajectory: Trajectory, criterion: FilterCriterion): boolean {
  switch (criterion.type) {
    case "correct":
      return trajectory.correct;
    case "answered":
      return trajectory.endReason === "answer";
    case "no-format-error":
      return trajectory.turns.every((turn) => turn.action.type !== "format-error");
    case "with-tool-failure":
      return trajectory.turns.some(
        (turn) => turn.toolResult !== undefined && turn.toolResult.status !== "ok",
      );
    case "max-turns":
      return trajectory.turns.length <= criterion.value;
    case "max-tool-calls":
      return trajectory.turns.filter((turn) => turn.action.type === "tool-call").length <= criterion.value;
  }
}
