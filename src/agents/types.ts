/**
 * The agent contract of `--agent <module>`: a module whose default export is
 *
 *   export default async function agent(task, { baseURL, apiKey, model, signal }) { … return answer; }
 *
 * `task` is what the agent may see (question, id, family, metadata, the world seed its tools need),
 * never the answer, aliases, gold plan or evidence. `baseURL` is the episode's own gateway URL: every
 * call made through it is recorded. The answer is a string (or null/undefined for none).
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
  /** OpenAI-compatible base URL of this episode (ends in `/v1`). */
  baseURL: string;
  /** Key for the gateway (its token; a placeholder when it has none). */
  apiKey: string;
  /** Model name to send. */
  model: string;
  /** Aborted when the episode times out or the run stops. */
  signal: AbortSignal;
}

export type AgentFunction = (task: AgentTask, context: AgentContext) => Promise<unknown> | unknown;
