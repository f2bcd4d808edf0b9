/**
 * What `agentrl doctor` reports: checks, each `{ id, ok, detail }` in plain words, and a verdict
 * that says whether RL on this setup is worth GPU time and, when not, what to change.
 */

export const CHECK_IDS = [
  "verifier",
  "reward-hacking",
  "coverage",
  "determinism",
  "token-exactness",
] as const;
export type CheckId = (typeof CHECK_IDS)[number];

/** The checks that need no samples from the user's policy (what `verl init` runs before writing a job). */
export const CHEAP_CHECKS: readonly CheckId[] = ["verifier", "reward-hacking"];

/**
 * What to change, by kind: the seed's recipe (SFT or a stronger base first), a larger group, another
 * task selection, a fix to the reward, to the tasks or verifier, to the environment, to the template.
 */
export const CHANGE_KINDS = [
  "stronger-base-or-sft",
  "larger-group",
  "task-selection",
  "fix-reward",
  "fix-tasks",
  "fix-environment",
  "fix-template",
] as const;
export type ChangeKind = (typeof CHANGE_KINDS)[number];

export interface Change {
  kind: ChangeKind;
  /** The change in words, with the numbers that motivate it. */
  text: string;
}

export interface DoctorCheck {
  id: CheckId;
  ok: boolean;
  /** What was measured and why it passed or failed, in plain words. */
  detail: string;
  /** The check did not apply to this setup (`ok` is true; `detail` says why). */
  skipped?: boolean;
  /** What to change when it failed. */
  changes: Change[];
  /** The measurements behind `detail` (shape per check; see each check's file). */
  data?: Record<string, unknown>;
}

export interface Verdict {
  /** Every check passed (skipped checks count as passed). */
  ready: boolean;
  /** One sentence per failed check: `<id>: <why>`. */
  reasons: string[];
  /** What to change, most fundamental first (tasks and reward before the base, the base before G). */
  changes: Change[];
}

export interface DoctorReport {
  ready: boolean;
  verdict: Verdict;
  checks: DoctorCheck[];
  /** What was checked: policy, tasks, reward, group size, noise, seed. */
  setup: Record<string, unknown>;
  /** Wall time of each check and in all, in seconds. */
  seconds: Record<string, number>;
}
