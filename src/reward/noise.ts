/**
 * Noise-aware turn rewards. When the noise wrapper injected a tool failure
 * (`toolResult.injected`), the naive reward scores that turn as the policy's failure although
 * the tool is to blame. The noise-aware variant:
 *
 * 1. gives the failed turn null (neutral: excluded from baselines, neither reward nor penalty);
 * 2. judges the NEXT turn instead: if it calls the same tool again (a retry, same or rephrased
 *    arguments) it keeps the base reward's own verdict for that turn (1 when the retry worked; if
 *    the retry was itself hit by injected noise, rule 1 applies to it in turn); if it does
 *    anything else (answers blind, calls another tool, fails to parse) it scores 0 for giving up;
 * 3. when the failed turn was the last one (the turn budget ran out) nothing is judged.
 *
 * Only turns the base reward judges (non-null) are neutralised, so a search-only reward ignores
 * noise on calc calls. A turn judged as giving up keeps its 0 even if its own (other) tool call
 * was then hit by noise: not retrying was the policy's decision; its next turn is judged as usual.
 * The naive variant is the base reward itself.
 *
 * Corrupted results (status `corrupted`) are injected too: they look fine to the policy, but in
 * this world a document about the wrong entity is visible, so a policy that answers from it
 * anyway is judged to have given up.
 */
import type { Task } from "../types/task.ts";
import type { Trajectory } from "../types/trajectory.ts";
import type { TurnRewardFn } from "./types.ts";

export function noiseAware<Options>(base: TurnRewardFn<Options>): TurnRewardFn<Options> {
  return (trajectory: Trajectory, task: Task, options?: Options) => {
    const verdicts = base(trajectory, task, options);
    const values = [...verdicts];
    const gaveUp = new Set<number>();
    const turns = trajectory.turns;
    for (let i = 0; i < turns.length; i++) {
      const turn = turns[i];
      // Only turns the base reward judges; a tool-specific reward ignores other tools' noise.
      if (!turn.toolResult?.injected || turn.action.type !== "tool-call" || verdicts[i] === null) continue;
      // A turn already judged as giving up keeps its 0: not retrying was the policy's decision.
      if (!gaveUp.has(i)) values[i] = null;
      const next = turns[i + 1];
      if (!next) continue;
      const retried = next.action.type === "tool-call" && next.action.tool === turn.action.tool;
      if (!retried) {
        values[i + 1] = 0;
        gaveUp.add(i + 1);
      }
    }
    return values;
  };
}
