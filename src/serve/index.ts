/** `agentrl serve`: an OpenAI-compatible chat-completions server over a text-protocol policy. */
export { type ActBatcher, createActBatcher } from "./batcher.ts";
export { type ChatChoice, choiceFromStep, truncateAtStop } from "./completion.ts";
export {
  buildContexts,
  type ChatEpisode,
  canonicalContent,
  episodeFromMessages,
  inferTextArgument,
  toolSpecsFromRequest,
} from "./context.ts";
export {
  type ChatRequest,
  chatRequestSchema,
  formatPath,
  parseChatRequest,
  RequestError,
} from "./request.ts";
export {
  type ChatServer,
  type ChatServerOptions,
  type SamplingSettings,
  SERVE_DEFAULTS,
  startChatServer,
  type TaskRequest,
} from "./server.ts";
export { worldTaskResolver } from "./world-tasks.ts";
