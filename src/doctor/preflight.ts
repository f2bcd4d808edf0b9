/**
 * The pre-flight `agentrl verl init` runs before it writes a job: the doctor's cheap checks
 * (`verifier`, `reward-hacking`), which need no samples from the model, on the job's training
 * tasks. A failure refuses the job with the reasons and what to change; `--no-doctor` skips it.
 *
 * The reward judged is exact match: the job's reward is the verifier's verdict (verl's
 * `compute_score` through `agentrl verify serve`, or the agent-server's outcome), so the panel
 * tests whether that verdict can be won without solving (a spray, text aimed at the checker).
 */
import type { Task } from "../types/task.ts";
import { VERIFIER_NAMES, type VerifierName } from "../verify/index.ts";
import { runDoctor } from "./run-doctor.ts";
import { CHEAP_CHECKS, type DoctorReport } from "./types.ts";

export interface JobPreflight {
  tasks: readonly Task[];
  /** `world`, or a task file's verifier name. */
  verifier: string;
  /** The tools a task file's episodes get. */
  code?: boolean;
  python?: boolean;
}

/** Runs the cheap checks; resolves with the report when they pass, throws the verdict when not. */
export async function preflightJob(job: JobPreflight): Promise<DoctorReport> {
  const world = job.verifier === "world";
  if (!world && !(VERIFIER_NAMES as readonly string[]).includes(job.verifier))
    throw new Error(
      `doctor: unknown verifier "${job.verifier}" (valid: world, ${VERIFIER_NAMES.join(", ")})`,
    );
  const report = await runDoctor({
    policySpec: "none",
    tasks: { type: "given", tasks: job.tasks, name: "the job's training tasks" },
    ...(world
      ? {}
      : {
          verifier: job.verifier as VerifierName,
          toolSetup: { code: Boolean(job.code), ...(job.python ? { python: true } : {}), mcp: null },
        }),
    reward: "exact-match",
    checks: CHEAP_CHECKS,
  });
  if (report.ready) return report;
  throw new Error(
    [
      "agentrl doctor refuses this job:",
      ...report.verdict.reasons.map((reason) => `  - ${reason}`),
      "What to change:",
      ...report.verdict.changes.map((change) => `  - [${change.kind}] ${change.text}`),
      "(run agentrl doctor for the whole check, or give --no-doctor to write the job anyway)",
    ].join("\n"),
  );
}
