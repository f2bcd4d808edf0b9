/**
 * The recipe report's count of infra failures (types/failure.ts) per eval stage: episodes left
 * out of pass@k because the upstream, a sandbox or the verifier broke. The embedded lab has no
 * upstream and no sandbox, so these are 0 unless `AGENTRL_FAULTS` injects verifier faults; the
 * report says so either way, so a run with faults cannot pass for a clean one.
 */
import type { TaskCount } from "../eval/task-counts.ts";

export function infraFailuresByStage(
  evals: Readonly<Record<string, { counts: readonly TaskCount[] }>>,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(evals).map(([stage, result]) => [
      stage,
      result.counts.reduce((sum, count) => sum + (count.infraFailures ?? 0), 0),
    ]),
  );
}

/** One sentence for the report: the total, and the stages that had any. */
export function describeInfraFailures(byStage: Readonly<Record<string, number>>): string {
  const faulted = Object.entries(byStage).filter(([, count]) => count > 0);
  const total = faulted.reduce((sum, [, count]) => sum + count, 0);
  if (total === 0) return "Infra failures (upstream, sandbox or verifier broke): none in any eval stage.";
  return (
    `Infra failures (upstream, sandbox or verifier broke; left out of pass@k): ${total} in all, ` +
    `${faulted.map(([stage, count]) => `${stage} ${count}`).join(", ")}.`
  );
}
