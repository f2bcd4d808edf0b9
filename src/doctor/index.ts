/** `agentrl doctor`: pre-flight checks of tasks, verifier, reward, environment and base before RL. */
export { type CoverageRow, checkCoverage, DEFAULT_SIGNAL_TARGET } from "./coverage.ts";
export { checkDeterminism, type ToolStats, toolStats } from "./determinism.ts";
export { doctorPage } from "./page.ts";
export { goldPolicy, PANEL_MEMBERS, type PanelMember, panelPolicy } from "./panel.ts";
export { type JobPreflight, preflightJob } from "./preflight.ts";
export { checkRewardHacking, DEFAULT_HACK_THRESHOLD, type MemberScore } from "./reward-hacking.ts";
export { type DoctorAgent, type DoctorOptions, runDoctor, spreadTasks } from "./run-doctor.ts";
export { doctorMetrics, type SavedDoctorRun, saveDoctorRun } from "./save.ts";
export { checkTokenExactness, DEFAULT_MAX_BREAK_RATE, type GatewayEpisode } from "./token-exactness.ts";
export {
  CHANGE_KINDS,
  CHEAP_CHECKS,
  CHECK_IDS,
  type Change,
  type ChangeKind,
  type CheckId,
  type DoctorCheck,
  type DoctorReport,
  type Verdict,
} from "./types.ts";
export { verdictOf } from "./verdict.ts";
export { checkVerifier, goldForms, type Verify } from "./verifier-check.ts";
