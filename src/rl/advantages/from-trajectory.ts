/**
 * Trajectories → the estimators' input. Token arrays come from `flattenTrajectory`, turn rewards
 * from each turn's `rewards` (filled by src/reward/ `withRewards`), anchor state keys from the
 * text the policy saw.
 */
import { flattenTrajectory, type Trajectory } from "../../types/trajectory.ts";
import type { AdvantageBatch, AdvantageEpisode } from "./types.ts";

/**
 * How GiGPO recognises "the same state". `observation`: the state turn t starts from is the last
 * thing the environment showed (the prompt for turn 0, turn t-1's observation after it), the
 * environment-state view verl-agent uses; two rollouts that searched the same name and got the same
 * document meet there, whatever they did before (a generic observation, an error message, merges
 * more than it should). `history`: the whole context so far (prompt, every earlier turn and
 * observation): exact, but rollouts meet only while their pasts are identical.
 */
export type AnchorMode = "observation" | "history";

export function anchorKeys(trajectory: Trajectory, mode: AnchorMode): string[] {
  const keys: string[] = [];
  let history = trajectory.prompt.text;
  let last = trajectory.prompt.text;
  for (const turn of trajectory.turns) {
    keys.push(mode === "history" ? history : last);
    const observation = turn.observation?.text ?? "";
    history += `\u0000${turn.text}\u0000${observation}`;
    last = observation;
  }
  return keys;
}

export interface EpisodeOptions {
  /** Key of `turn.rewards` holding the turn reward (default `total`, what `withRewards` writes). */
  turnRewardKey?: string;
  /** Compute anchor state keys for GiGPO (default: none). */
  anchors?: AnchorMode;
  /** Critic values per token, aligned with `flattenTrajectory` (GAE). */
  values?: ArrayLike<number>;
}

/**
 * One trajectory as an estimator episode. The group is `trajectory.group`, or the task id when the
 * trajectory has none. A turn whose rewards lack the key earned 0; a null stays null (neutral).
 */
export function toAdvantageEpisode(trajectory: Trajectory, options: EpisodeOptions = {}): AdvantageEpisode {
  const flat = flattenTrajectory(trajectory);
  const key = options.turnRewardKey ?? "total";
  const episode: AdvantageEpisode = {
    group: trajectory.group ?? trajectory.taskId,
    outcomeReward: trajectory.outcomeReward,
    turnRewards: trajectory.turns.map((turn) => (key in turn.rewards ? turn.rewards[key] : 0)),
    turnIndex: flat.turnIndex,
    lossMask: flat.lossMask,
  };
  if (options.anchors) episode.anchorKeys = anchorKeys(trajectory, options.anchors);
  if (options.values) episode.values = options.values;
  return episode;
}

export function toAdvantageBatch(
  trajectories: readonly Trajectory[],
  options: Omit<EpisodeOptions, "values"> & { values?: readonly ArrayLike<number>[] } = {},
): AdvantageBatch {
  return {
    episodes: trajectories.map((trajectory, i) =>
      toAdvantageEpisode(trajectory, { ...options, values: options.values?.[i] }),
    ),
  };
}
