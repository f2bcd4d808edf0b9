/** Running a user's agent module (`--agent`) through the recording gateway. */
export { type AgentRolloutOptions, agentRollout } from "./agent-rollout.ts";
export {
  type AgentEpisodeItem,
  type AgentRunner,
  type AgentRunnerOptions,
  openAgentRunner,
} from "./agent-runner.ts";
export {
  type CollectAgentDatasetOptions,
  type CollectAgentDatasetResult,
  collectAgentDataset,
} from "./collect-agent.ts";
export {
  AGENT_EVAL_DEFAULTS,
  type AgentEvalConfig,
  type EvaluateAgentOptions,
  evaluateAgent,
} from "./evaluate-agent.ts";
export { loadAgent } from "./load-agent.ts";
export { parseRlRunConfig, type RlRunConfig, type RunAgent, resumedRunAgent } from "./rl-run.ts";
export { type AgentEpisode, type AgentEpisodeOptions, answerText, runAgentEpisode } from "./run-episode.ts";
export { scoreWorldEpisode } from "./score-episode.ts";
export { agentTask } from "./task-view.ts";
export type { AgentContext, AgentFunction, AgentTask } from "./types.ts";
export {
  type AgentWorldTools,
  agentWorldTools,
  type WorldToolCheck,
  withWorldToolResults,
} from "./world-tools.ts";
