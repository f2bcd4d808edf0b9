/**
 * The agent contract of `--agent <module>`: a module whose default export is
 *
 *   export default async function agent(task, { baseURL, apiKey, model, signal }) { … return answer; }
 *
 * `task` is what the agent may see (question, id, family, metadata, the world seed its tools need),
 * never the answer, aliases, gold plan or evidence. `baseURL` is the slot's own gateway URL, the same
 * on every episode the slot runs, which the gateway maps to the slot's current episode: every call
 * made through it is recorded as that episode's, so a client made from it once (a global default
 * client, a cached provider) keeps working. The answer is a string (or null/undefined for none).
 *
 * The module runs in a slot of its own (a worker thread, slot.ts), whose environment also points
 * clients that never see `baseURL` at the gateway: `OPENAI_BASE_URL`, `OPENAI_API_KEY`,
 * `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`, and `AGENTRL_MODEL` for the model.
 */

/** The task as the agent sees it. */
export interface AgentTask {
  id: string;
  question: string;
  family: string;
  template?: string;
  /** World tasks: the world the search tool must be built over. */
  worldSeed?: number;
  systemPrompt?: string;
  metadata?: Record<string, unknown>;
}

export interface AgentContext {
  /**
   * OpenAI-compatible base URL (ends in `/v1`): the slot's under `--agent` (stable across its
   * episodes, always meaning the episode it runs now); the episode's own for a function run in
   * process (the library API) and for `--agent-cmd`.
   */
  baseURL: string;
  /** Key for the gateway (its token; a placeholder when it has none). */
  apiKey: string;
  /** Model name to send. */
  model: string;
  /** Aborted when the episode times out or the run stops. */
  signal: AbortSignal;
}

export type AgentFunction = (task: AgentTask, context: AgentContext) => Promise<unknown> | unknown;
