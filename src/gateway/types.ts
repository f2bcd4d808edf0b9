/**
 * What the gateway records: one `GatewayCall` per chat-completions request an agent makes, kept as
 * it completes (request as sent, the assembled response, latency, usage, and the exact prompt and
 * completion token ids and log-probs the upstream returned under vLLM's `return_token_ids`).
 * Upstream keys travel only in headers and are never part of a record.
 */
import type { Failure } from "../types/failure.ts";

/** One choice of a completion, as the trajectory builder reads it. */
export interface RecordedChoice {
  index: number;
  content: string | null;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReason: string | null;
  /** Exact sampled ids (`choices[i].token_ids`), null when the upstream gave none. */
  tokenIds: number[] | null;
  /** Log-prob of each sampled id (`choices[i].logprobs.content[*].logprob`), null when absent. */
  logprobs: number[] | null;
  /** Reasoning text (`reasoning_content` / `reasoning`), whose ids are part of `tokenIds`. */
  reasoning?: string;
}

export interface GatewayCall {
  episodeId: string;
  /** Order of the call within its episode (0, 1, …). */
  seq: number;
  /** `chat` for /chat/completions, `responses` / `messages` for a translated Responses / Messages API call. */
  api: "chat" | "responses" | "messages";
  startedAt: string;
  latencyMs: number;
  stream: boolean;
  /** The chat-completions request sent upstream (after the gateway's additions). */
  request: Record<string, unknown>;
  /** The upstream's completion (streams assembled), or null when the call failed. */
  response: Record<string, unknown> | null;
  /** Exact context ids (`prompt_token_ids`), null when the upstream gave none. */
  promptTokenIds: number[] | null;
  choices: RecordedChoice[];
  usage: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | null;
  /** Why the call failed (upstream error, malformed answer); the episode then ends as `policy-error`. */
  error?: string;
  /** The class of that failure (`infra` when the upstream broke: upstream-faults.ts). */
  failure?: Failure;
}

/** Rewards an agent posts (`POST /episodes/<id>/reward`). */
export interface PostedReward {
  /** Outcome reward of the episode. */
  reward?: number | null;
  /**
   * Per-turn rewards: model turn (the episode's n-th successful call, from 0) → value, stored as
   * the `posted` reward of that call's first turn (a call with several tool calls has one turn each).
   */
  turnRewards?: Record<string, number>;
}
