/**
 * The store: runs, trajectories, metrics, artifacts and state in SQLite (`node:sqlite`), run
 * directories, and OpenAI chat JSONL export/import.
 */
export type { DatabaseOptions } from "./database.ts";
export { decodeJson, encodeJson } from "./json-codec.ts";
export { JsonlError, type JsonlRow, readJsonl, writeJsonl } from "./jsonl.ts";
export {
  type AgentrlChatRecord,
  CHAT_RECORD_VERSION,
  type ChatLine,
  type ChatToTrajectoryOptions,
  chatLineTools,
  chatToTrajectory,
  type OpenAiFunctionTool,
  type OpenAiMessage,
  type OpenAiToolCall,
  questionOfPrompt,
  stripObservation,
  type TrajectoryToChatOptions,
  toolSpecsToOpenAi,
  trajectoryMessages,
  trajectoryToChat,
} from "./openai-chat.ts";
export {
  deriveToolSpecs,
  type ExportOptions,
  type ExportSummary,
  exportOpenAiJsonl,
  type ImportSummary,
  importOpenAiJsonl,
} from "./openai-jsonl.ts";
export {
  type CreatedRunDirectory,
  createRunDirectory,
  DEFAULT_RUNS_ROOT,
  directoryRun,
  isAbandonedRunDirectory,
  isRunDirectory,
  listRunDirectories,
  openOrCreateRunDirectory,
  openRunDirectory,
  runStorePath,
  STORE_FILE,
} from "./run-directory.ts";
export { failureStatus, finishRunAfterError } from "./run-failure.ts";
export { defaultRunId } from "./runs.ts";
export { SCHEMA_VERSION } from "./schema.ts";
export { createRunDirectoryStaged } from "./staged-run-directory.ts";
export { openStore, Store, type StoreOptions, TOOL_SPECS_STATE_KEY } from "./store.ts";
export { episodeKey } from "./trajectories.ts";
export { assertTrajectory } from "./trajectory-schema.ts";
export * from "./types.ts";
