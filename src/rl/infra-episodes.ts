/**
 * Infra-failed episodes in RL groups. An episode whose failure class is `infra` (the upstream, a
 * sandbox or the verifier broke: types/failure.ts) says nothing about the policy, so it never
 * takes part in an update: its group is **shrunk**, not refilled. The group's baseline and spread
 * are those of the other episodes, so their advantages are exactly what a run that never sampled
 * the faulted episode would give them (tested in infra-episodes.test.ts). A group left with no
 * episode is dropped. Refilling would need a fresh sample of the same task with the same
 * parameters, and would make a step's episode count depend on faults; shrinking keeps both the
 * seeds and the other episodes of the step unchanged. The faulted episodes are still stored (with
 * `info.rl.kept = false`) and counted under `rollout/infra_failures`.
 */
import { isInfraFailure } from "../types/failure.ts";
import type { Trajectory } from "../types/trajectory.ts";

/** The episodes of a group that can be scored (infra failures removed), in their order. */
export function scorableEpisodes<T extends Pick<Trajectory, "failure">>(group: readonly T[]): T[] {
  return group.filter((trajectory) => !isInfraFailure(trajectory));
}

/** Metric key of the count of infra-failed episodes (a step's rollouts, an eval, a collection). */
export const INFRA_FAILURES_METRIC = "rollout/infra_failures";
