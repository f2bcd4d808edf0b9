/** The OpenAI-compatible chat policy: real LLMs (and `agentrl serve`) behind the `Policy` interface. */
export {
  buildChatMessages,
  chatTools,
  DEFAULT_SYSTEM_PROMPT,
  NOT_EXECUTED,
  type RecordedTurn,
} from "./messages.ts";
export { createOpenAiPolicy, OPENAI_POLICY_DEFAULTS, type OpenAiPolicyOptions } from "./policy.ts";
export { errorStep, stepFromCompletion } from "./response.ts";
export { backoffDelay, isRetryable, type RetryOptions, retryAfterMs, withRetries } from "./retry.ts";
export { createSemaphore, type Semaphore } from "./semaphore.ts";
export { parseOpenAiSpec, TASK_ID_HEADER } from "./spec.ts";
