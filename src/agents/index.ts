/** Running a user's agent (`--agent` module, `--agent-cmd` command) through the recording gateway. */

export { type AgentRolloutOptions, agentRollout } from "./agent-rollout.ts";
export {
  type AgentEpisodeItem,
  type AgentRunner,
  type AgentRunnerOptions,
  openAgentRunner,
} from "./agent-runner.ts";
export {
  type AgentSource,
  type AgentSourceOptions,
  agentSourceOf,
  DEFAULT_SLOT_MEMORY_MB,
  openSlot,
} from "./agent-source.ts";
export {
  type CollectAgentDatasetOptions,
  type CollectAgentDatasetResult,
  collectAgentDataset,
} from "./collect-agent.ts";
export { commandAnswer, commandSlot } from "./command-slot.ts";
export {
  AGENT_EVAL_DEFAULTS,
  type AgentEvalConfig,
  type EvaluateAgentOptions,
  evaluateAgent,
} from "./evaluate-agent.ts";
export { functionSlot } from "./function-slot.ts";
export { loadAgent } from "./load-agent.ts";
export { parseRlRunConfig, type RlRunConfig, type RunAgent, resumedRunAgent } from "./rl-run.ts";
export { type AgentEpisode, type AgentEpisodeOptions, answerText, runAgentEpisode } from "./run-episode.ts";
export { scoreWorldEpisode } from "./score-episode.ts";
export { type AgentSlot, type SlotEpisode, type SlotOutcome, slotEnvironment } from "./slot.ts";
export { agentTask } from "./task-view.ts";
export { startToolsServer, type ToolsServer } from "./tools-server.ts";
export type { AgentContext, AgentFunction, AgentTask } from "./types.ts";
export { workerSlot } from "./worker-slot.ts";
export {
  type AgentWorldTools,
  agentWorldTools,
  type WorldToolCheck,
  withWorldToolResults,
} from "./world-tools.ts";
