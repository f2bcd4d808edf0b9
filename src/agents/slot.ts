/**
 * An agent slot: where one episode of a user's agent runs at a time. A run of `concurrency`
 * episodes holds that many slots, each with its own gateway slot URL (src/gateway/episodes.ts
 * `SlotTable`) that the slot's environment points every client at:
 *
 *   OPENAI_BASE_URL     <gateway>/slots/<slot>/v1     OPENAI_API_KEY     the gateway's token
 *   ANTHROPIC_BASE_URL  <gateway>/slots/<slot>        ANTHROPIC_API_KEY  the gateway's token
 *   AGENTRL_MODEL       the model to send             ANTHROPIC_AUTH_TOKEN the same token (sent as a bearer)
 *   AGENTRL_TOOLS_URL   the world's tools over HTTP for the episode's task (world tasks; tools-server.ts)
 *
 * Three kinds: a function run in process (the library API and tests: shares the process, so global
 * clients are shared too), a module in a worker thread (`--agent`: worker-slot.ts) and a command
 * run per episode (`--agent-cmd`: command-slot.ts). The `baseURL` an agent function is handed is
 * the slot's own URL in a worker slot (one per slot, stable across its episodes, so a global client
 * or a provider cached from it keeps working), and the episode's own URL in a function slot (all
 * function slots share one process: a global set from a slot URL would send one slot's calls into
 * another slot's episode, silently, where an episode URL fails loudly once its episode ended). A slot never throws for what the agent did: an
 * agent that throws, hangs, exits, runs out of memory or prints no answer is an `agent` failure of
 * that episode, and the slot is ready for the next one.
 */
import type { Failure } from "../types/failure.ts";
import type { AgentTask } from "./types.ts";

export interface SlotEpisode {
  task: AgentTask;
  /** The gateway's id of the episode. */
  episodeId: string;
  /**
   * The episode's own base URL (`/episodes/<id>/v1`): the `baseURL` handed to an agent whose slot
   * has no URL of its own (a function in this process, a command's process per episode). A worker
   * slot hands its slot's URL instead (worker-slot.ts).
   */
  baseURL: string;
  apiKey: string;
  model: string;
  /** The world's tools for this task, when it is a world task. */
  toolsURL?: string;
  timeoutMs: number;
  /** Aborted when the run stops. */
  signal?: AbortSignal;
}

export type SlotOutcome = { answer: unknown; stderr?: string } | { failure: Failure; stderr?: string };

export interface AgentSlot {
  run(episode: SlotEpisode): Promise<SlotOutcome>;
  close(): Promise<void>;
}

/** The environment of slot `slot` of a gateway (see the table above). */
export function slotEnvironment(
  slotURL: string,
  apiKey: string,
  model: string,
  toolsURL?: string,
): Record<string, string> {
  return {
    OPENAI_BASE_URL: `${slotURL}/v1`,
    OPENAI_API_KEY: apiKey,
    ANTHROPIC_BASE_URL: slotURL,
    ANTHROPIC_API_KEY: apiKey,
    ANTHROPIC_AUTH_TOKEN: apiKey,
    AGENTRL_MODEL: model,
    ...(toolsURL ? { AGENTRL_TOOLS_URL: toolsURL } : {}),
  };
}

/**
 * agentrl's own secrets, never handed to an agent: the upstream's key (an agent holding it could
 * call the model around the gateway, unrecorded) and the bearer token of every agentrl server
 * (`AGENTRL_<SERVER>_TOKEN`, each server's `tokenEnv`), present and future.
 */
const AGENTRL_SECRET = /^AGENTRL_(API_KEY|[A-Z_]+_TOKEN)$/;

/** A slot's whole environment: this process's, less agentrl's secrets, with the slot's on top. */
export function agentProcessEnv(slotEnv: Record<string, string>): Record<string, string | undefined> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !AGENTRL_SECRET.test(name)));
  return { ...env, ...slotEnv };
}

export function agentFailure(code: string, message: string): Failure {
  return { class: "agent", code, message };
}

/** The last `max` characters of a captured stream (an agent's stderr can be unbounded). */
export function tail(text: string, max = 16_384): string {
  return text.length <= max ? text : `…${text.slice(text.length - max)}`;
}
