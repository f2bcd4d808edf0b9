/**
 * Scoring an episode recorded by the standalone gateway (`agentrl gateway --reward <preset>`) when
 * its task is a world task (named by the agent's calls or by `POST /episodes/<id>/end {taskId}`):
 * the answer is checked with the world's `checkAnswer`, the tool results against the world's own
 * tools (`withWorldToolResults`), and the reward preset fills the outcome and turn rewards as it
 * does for in-process episodes (`withRewards`). An episode whose task id is not a world task id is
 * returned unchanged (`null` task): the agent's posted rewards are all it has.
 */
import { type RewardSpec, withRewards } from "../reward/index.ts";
import type { Task } from "../types/task.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { checkAnswer, taskFromId } from "../world/index.ts";
import { withWorldToolResults } from "./world-tools.ts";

export async function scoreWorldEpisode(
  trajectory: Trajectory,
  reward?: RewardSpec | string,
): Promise<{ trajectory: Trajectory; task: Task | null }> {
  let task: Task;
  try {
    task = taskFromId(trajectory.taskId);
  } catch {
    return { trajectory, task: null };
  }
  const correct = trajectory.endReason === "answer" && checkAnswer(task, trajectory.finalAnswer);
  const checked = await withWorldToolResults(
    {
      ...trajectory,
      family: task.family,
      correct,
      outcomeReward: trajectory.outcomeReward ?? (correct ? 1 : 0),
    },
    task,
  );
  if (reward === undefined) return { trajectory: checked, task };
  const posted = trajectory.outcomeReward;
  const scored = withRewards(checked, task, reward);
  return {
    trajectory: posted === null ? scored : { ...scored, info: { ...scored.info, postedReward: posted } },
    task,
  };
}
