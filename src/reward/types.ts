/**
 * Reward function types. A reward is a pure function of a finished trajectory and its task; it
 * never calls a model or a tool. `null` means unscorable (the episode died of an endpoint error,
 * or the task lacks what the reward needs): advantage estimators exclude it from baselines, the
 * TRL convention for `None` rewards.
 */
import type { Task } from "../types/task.ts";
import type { Trajectory } from "../types/trajectory.ts";

/** One scalar for the whole episode (the outcome). */
export type OutcomeRewardFn<Options = undefined> = (
  trajectory: Trajectory,
  task: Task,
  options?: Options,
) => number | null;

/**
 * One value per turn, aligned with `trajectory.turns`. `null` marks a turn the reward does not
 * judge (an answer turn for a tool reward, a turn spoiled by injected tool noise).
 */
export type TurnRewardFn<Options = undefined> = (
  trajectory: Trajectory,
  task: Task,
  options?: Options,
) => (number | null)[];
