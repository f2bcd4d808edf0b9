/**
 * Per-token advantages for the token view. The store keeps rewards, not advantages, so they are
 * recomputed the way the RL trainer computed them (src/rl/update-batch.ts, step 3): the run's estimator
 * and advantage options over every episode its update kept at that step (`info.rl.kept`), with
 * the run's anchor mode. That reproduces the trainer's numbers for every estimator that reads only
 * rewards; GAE needs the critic's values at that step, which are not stored, so it gets none, and
 * neither do episodes the update dropped or runs that are not RL runs.
 */

import type { AnchorMode } from "../rl/advantages/index.ts";
import { computeAdvantages, isAdvantageEstimatorName, toAdvantageBatch } from "../rl/advantages/index.ts";
import type { RunRecord, Store } from "../store/index.ts";
import type { Trajectory } from "../types/trajectory.ts";

export interface EpisodeAdvantages {
  values: Float32Array | null;
  note: string;
}

const keptBy = (trajectory: Trajectory) =>
  (trajectory.info?.rl as { kept?: unknown } | undefined)?.kept === true;

export function episodeAdvantages(
  store: Store,
  run: RunRecord,
  stored: { seq: number; step: number | null; trajectory: Trajectory },
): EpisodeAdvantages {
  if (run.kind !== "rl") return { values: null, note: "advantages exist only for RL runs" };
  const estimator = String(run.config.estimator ?? "");
  if (!isAdvantageEstimatorName(estimator)) {
    return { values: null, note: `the run's estimator "${estimator}" is unknown to this agentrl` };
  }
  if (estimator === "gae") {
    return {
      values: null,
      note: "GAE advantages need the critic's values of that step, which are not stored",
    };
  }
  if (stored.step === null || !keptBy(stored.trajectory)) {
    return { values: null, note: "the update did not use this episode (dropped group or no step)" };
  }
  const batch: Trajectory[] = [];
  let index = -1;
  for (const other of store.iterateTrajectories(run.id, { step: stored.step })) {
    if (!keptBy(other.trajectory)) continue;
    if (other.seq === stored.seq) index = batch.length;
    batch.push(other.trajectory);
  }
  const anchors = (run.config.anchors === "history" ? "history" : "observation") as AnchorMode;
  const options = (run.config.advantage ?? {}) as Record<string, unknown>;
  const result = computeAdvantages(estimator, toAdvantageBatch(batch, { anchors }), options);
  return {
    values: Float32Array.from(result.advantages[index]),
    note: `${estimator}, recomputed from the stored rewards of the ${batch.length} episodes the update of step ${stored.step} kept`,
  };
}
