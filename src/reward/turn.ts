/**
 * Turn-level rewards (MT-GRPO, arXiv:2505.11821, generalised to any number of turns): one value
 * per turn, null on the turns a reward does not judge. These are the naive variants: a turn whose
 * tool failed scores as a policy failure whatever the cause; `noiseAware` (./noise.ts) wraps them
 * to stop punishing the policy for injected tool noise.
 *
 * Repeats earn nothing: evidence and calc rewards pay once per needed fact / gold calc step, so a
 * policy cannot farm turn rewards by repeating a good call. With `fraction` they also pay a share
 * (1/|needed|) instead of 1, so an episode's sum is at most 1 whatever the chain length: a 5-hop
 * chain cannot earn five times what a lookup earns for the same complete retrieval.
 */
import type { Task } from "../types/task.ts";
import type { Trajectory, Turn } from "../types/trajectory.ts";

export interface ToolExecutedOptions {
  /** Judge only calls to this tool (default: every tool). */
  tool?: string;
}

/**
 * The tool call parsed and executed: 1 for a tool call whose result has status `ok`, 0 for any
 * other status (`error`, `empty`, `timeout`, `corrupted`) and for a format error (a call that did
 * not parse; judged only when no `tool` filter is set, since its intended tool is unknown);
 * null for answer turns and for calls to other tools.
 *
 * Paid per call, a positive weight on this reward pays for MORE calls (turn-level
 * estimators optimise the sum of turn rewards); keep it small next to the outcome, or rely on the
 * evidence and calc rewards, which pay only for new progress.
 */
export function toolExecutedReward(
  trajectory: Trajectory,
  _task: Task,
  options?: ToolExecutedOptions,
): (number | null)[] {
  return trajectory.turns.map((turn) => {
    const action = turn.action;
    if (action.type === "format-error") return options?.tool === undefined ? 0 : null;
    if (action.type !== "tool-call") return null;
    if (options?.tool !== undefined && action.tool !== options.tool) return null;
    return turn.toolResult?.status === "ok" ? 1 : 0;
  });
}

function callsTool(turn: Turn, tool: string): boolean {
  return turn.action.type === "tool-call" && turn.action.tool === tool;
}

export interface EvidenceOptions {
  /** Name of the search tool (default `search`). */
  tool?: string;
  /** Pay 1/|task.evidence| per newly retrieved fact instead of 1 (the episode's sum is at most 1). */
  fraction?: boolean;
}

/**
 * The search result holds a fact the task needs: 1 when a search turn's result (status `ok`: a
 * corrupted result is by definition the wrong document) refers to an entity of `task.evidence`
 * that no earlier turn had retrieved, 0 for any other search turn, null for other turns. All
 * null when the task lists no evidence (unscorable). With `fraction`, k newly retrieved facts pay
 * k/|task.evidence|.
 */
export function evidenceReward(
  trajectory: Trajectory,
  task: Task,
  options?: EvidenceOptions,
): (number | null)[] {
  const tool = options?.tool ?? "search";
  const needed = new Set(task.evidence ?? []);
  if (needed.size === 0) return trajectory.turns.map(() => null);
  const found = new Set<string>();
  return trajectory.turns.map((turn) => {
    if (!callsTool(turn, tool)) return null;
    const refs = turn.toolResult?.status === "ok" ? (turn.toolResult.refs ?? []) : [];
    const fresh = refs.filter((ref) => needed.has(ref) && !found.has(ref));
    for (const ref of fresh) found.add(ref);
    if (options?.fraction) return fresh.length / needed.size;
    return fresh.length > 0 ? 1 : 0;
  });
}

export interface CalcCorrectOptions {
  /** Name of the calculator tool (default `calc`). */
  tool?: string;
  /** Relative tolerance of the comparison (default 1e-9). */
  tolerance?: number;
  /** Pay 1/|gold calc steps| per matched step instead of 1 (the episode's sum is at most 1). */
  fraction?: boolean;
}

/**
 * The calc result is right: 1 when a calc turn (status `ok`) returned the value of a gold calc step
 * of `task.gold` not matched by an earlier turn, 0 for any other calc turn, null for other turns.
 * Compared with the GOLD results, not recomputed from the facts the episode retrieved: a correct
 * computation on wrongly retrieved operands scores 0, because it does not advance the task. All
 * null when the task has no gold plan (unscorable); every calc turn scores 0 when the gold plan
 * has no calc step (a calc the task does not need). With `fraction` a matched step pays
 * 1/|gold calc steps|.
 */
export function calcCorrectReward(
  trajectory: Trajectory,
  task: Task,
  options?: CalcCorrectOptions,
): (number | null)[] {
  const tool = options?.tool ?? "calc";
  const tolerance = options?.tolerance ?? 1e-9;
  if (!task.gold) return trajectory.turns.map(() => null);
  const pending = task.gold.flatMap((step) => (step.type === "calc" ? [Number(step.result)] : []));
  const share = options?.fraction && pending.length > 0 ? 1 / pending.length : 1;
  return trajectory.turns.map((turn) => {
    if (!callsTool(turn, tool)) return null;
    const value = turn.toolResult?.status === "ok" ? turn.toolResult.value : undefined;
    if (value === undefined) return 0;
    const match = pending.findIndex(
      (gold) => Math.abs(value - gold) <= tolerance * Math.max(1, Math.abs(gold)),
    );
    if (match < 0) return 0;
    pending.splice(match, 1);
    return share;
  });
}
