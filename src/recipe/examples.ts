/**
 * Example trajectories for the report: real rollouts read back from an RL run's store, shown turn
 * by turn with the tool call, the tool's status (and whether the noise injected it), the per-turn
 * rewards, and the advantage each turn's tokens got. Advantages are not stored with rollouts; they
 * are recomputed here with the run's own estimator over the rollout's whole group (the same pure
 * function and inputs as the update used), so they are the numbers the update saw.
 */
import { createRng } from "../core/random.ts";
import { loadDataset } from "../data/dataset.ts";
import { toAdvantageBatch } from "../rl/advantages/from-trajectory.ts";
import { computeAdvantages } from "../rl/advantages/index.ts";
import { openRunDirectory } from "../store/index.ts";
import { flattenTrajectory, type Trajectory } from "../types/trajectory.ts";

export interface ExampleTurn {
  index: number;
  action: string;
  status: string | null;
  injected: boolean;
  observation: string;
  rewards: Record<string, number | null>;
  /** Mean advantage over the turn's policy tokens (null when it could not be recomputed). */
  advantage: number | null;
}

export interface ExampleTrajectory {
  taskId: string;
  family: string;
  question: string;
  step: number;
  correct: boolean;
  answer: string | null;
  outcomeReward: number | null;
  endReason: string;
  /** Rollouts of the group and how many were correct. */
  group: { size: number; correct: number };
  turns: ExampleTurn[];
  note?: string;
  /** Where a non-RL example comes from (a dataset), shown instead of its RL step and group. */
  source?: string;
}

function truncate(text: string, max = 160): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function actionText(trajectory: Trajectory, index: number): string {
  const action = trajectory.turns[index].action;
  if (action.type === "tool-call") return `${action.tool}(${truncate(JSON.stringify(action.arguments), 80)})`;
  if (action.type === "answer") return `answer: ${truncate(action.answer, 80)}`;
  return `format error: ${truncate(action.error, 80)}`;
}

/** Mean advantage per turn of one trajectory's flattened advantage row. */
function turnAdvantages(trajectory: Trajectory, row: ArrayLike<number>): number[] {
  const flat = flattenTrajectory(trajectory);
  const sums = new Map<number, { sum: number; n: number }>();
  for (let i = 0; i < flat.tokenIds.length && i < row.length; i++) {
    if (!flat.lossMask[i]) continue;
    const entry = sums.get(flat.turnIndex[i]) ?? { sum: 0, n: 0 };
    entry.sum += row[i];
    entry.n++;
    sums.set(flat.turnIndex[i], entry);
  }
  return trajectory.turns.map((turn) => {
    const entry = sums.get(turn.index);
    return entry ? entry.sum / entry.n : 0;
  });
}

/**
 * Up to `count` examples from the last stored step of an RL run, preferring groups with mixed
 * outcomes (the ones that carried signal): one correct and one wrong rollout of such a group when
 * it has both.
 */
export function rlExamples(options: {
  directory: string;
  runId: string;
  estimator: string;
  count: number;
  seed: number;
  questions?: Map<string, string>;
}): ExampleTrajectory[] {
  if (options.count === 0) return [];
  const store = openRunDirectory(options.directory, { readOnly: true });
  let stored: Trajectory[];
  try {
    stored = store.trajectories(options.runId);
  } finally {
    store.close();
  }
  const stepOf = (trajectory: Trajectory) =>
    ((trajectory.info?.rl as { step?: number } | undefined)?.step ?? 0) as number;
  const lastStep = Math.max(0, ...stored.map(stepOf));
  const groups = new Map<string, Trajectory[]>();
  for (const trajectory of stored) {
    if (stepOf(trajectory) !== lastStep) continue;
    const key = `${trajectory.taskId}#${trajectory.group ?? 0}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key)!.push(trajectory);
  }
  const rng = createRng(options.seed);
  const ordered = rng.shuffle([...groups.values()]);
  ordered.sort((a, b) => Number(mixed(b)) - Number(mixed(a)));
  const examples: ExampleTrajectory[] = [];
  for (const group of ordered) {
    if (examples.length >= options.count) break;
    let advantages: ArrayLike<number>[] | null = null;
    let note: string | undefined;
    try {
      advantages = computeAdvantages(options.estimator, toAdvantageBatch(group)).advantages;
    } catch (error) {
      note = `advantages not recomputed: ${(error as Error).message}`;
    }
    const picks = mixed(group) ? [group.find((t) => t.correct)!, group.find((t) => !t.correct)!] : [group[0]];
    for (const trajectory of picks) {
      if (examples.length >= options.count) break;
      const row = advantages?.[group.indexOf(trajectory)];
      const perTurn = row ? turnAdvantages(trajectory, row) : null;
      examples.push({
        taskId: trajectory.taskId,
        family: trajectory.family,
        question: options.questions?.get(trajectory.taskId) ?? trajectory.prompt.text,
        step: lastStep,
        correct: trajectory.correct,
        answer: trajectory.finalAnswer,
        outcomeReward: trajectory.outcomeReward,
        endReason: trajectory.endReason,
        group: { size: group.length, correct: group.filter((t) => t.correct).length },
        turns: exampleTurns(trajectory, perTurn),
        ...(note ? { note } : {}),
      });
    }
  }
  return examples;
}

function exampleTurns(trajectory: Trajectory, perTurn: readonly number[] | null): ExampleTurn[] {
  return trajectory.turns.map((turn, i) => ({
    index: turn.index,
    action: actionText(trajectory, i),
    status: turn.toolResult?.status ?? null,
    injected: turn.toolResult?.injected ?? false,
    observation: truncate(turn.observation?.text ?? ""),
    rewards: turn.rewards,
    advantage: perTurn ? perTurn[i] : null,
  }));
}

/**
 * One trajectory of an SFT dataset as an example: of the trajectories with the most decisions
 * (tool calls whose result failed, then the most turns), one drawn with `seed`; null when empty.
 */
export function datasetExample(directory: string, seed: number, source: string): ExampleTrajectory | null {
  const { trajectories } = loadDataset(directory);
  if (trajectories.length === 0) return null;
  const failures = (t: Trajectory) =>
    t.turns.filter((turn) => turn.toolResult && turn.toolResult.status !== "ok").length;
  const score = (t: Trajectory) => failures(t) * 100 + t.turns.length;
  const best = Math.max(...trajectories.map(score));
  const candidates = trajectories.filter((t) => score(t) === best);
  const trajectory = candidates[createRng(seed).int(candidates.length)];
  return {
    taskId: trajectory.taskId,
    family: trajectory.family,
    question: trajectory.prompt.text,
    step: 0,
    correct: trajectory.correct,
    answer: trajectory.finalAnswer,
    outcomeReward: trajectory.outcomeReward,
    endReason: trajectory.endReason,
    group: { size: 1, correct: trajectory.correct ? 1 : 0 },
    turns: exampleTurns(trajectory, null),
    source,
  };
}

function mixed(group: readonly Trajectory[]): boolean {
  return group.some((t) => t.correct) && group.some((t) => !t.correct);
}
