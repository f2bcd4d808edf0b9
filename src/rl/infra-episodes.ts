/**
 * Infra- and agent-failed episodes in RL groups. An episode whose failure class is `infra` (the
 * upstream, a sandbox or the verifier broke: types/failure.ts) says nothing about the policy, and
 * one whose class is `agent` (a user's agent code threw, hung, crashed its slot or gave no answer)
 * is the agent's failure, not the model's: neither is trained on as if the model wrote it. Such an
 * episode never takes part in an update: its group is **shrunk**, not refilled. (An `agent`
 * failure still counts against the agent in pass@k; only infra leaves pass@k's n.) The group's baseline and spread
 * are those of the other episodes, so their advantages are exactly what a run that never sampled
 * the faulted episode would give them (tested in infra-episodes.test.ts). A group left with no
 * episode is dropped. Refilling would need a fresh sample of the same task with the same
 * parameters, and would make a step's episode count depend on faults; shrinking keeps both the
 * seeds and the other episodes of the step unchanged. The faulted episodes are still stored (with
 * `info.rl.kept = false`) and counted under `rollout/infra_failures`.
 */
import { failureClass } from "../types/failure.ts";
import type { Trajectory } from "../types/trajectory.ts";

/** The episodes of a group that can be trained on (infra and agent failures removed), in order. */
export function scorableEpisodes<T extends Pick<Trajectory, "failure" | "correct">>(
  group: readonly T[],
): T[] {
  return group.filter((trajectory) => {
    const kind = failureClass(trajectory);
    return kind !== "infra" && kind !== "agent";
  });
}

/** Metric key of the count of infra-failed episodes (a step's rollouts, an eval, a collection). */
export const INFRA_FAILURES_METRIC = "rollout/infra_failures";
