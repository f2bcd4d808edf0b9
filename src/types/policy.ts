/**
 * The policy contract. One interface for scripted policies, the embedded transformer and real
 * LLMs behind the OpenAI-compatible API. `act` is batched: the episode loop advances every live
 * episode by one turn per call, so the embedded model decodes them in lock-step with one KV cache
 * and an endpoint policy sends the requests concurrently. A policy may keep per-episode state (a KV
 * cache) keyed by `episodeId`; the loop calls `release` when an episode ends.
 */
import type { Failure } from "./failure.ts";
import type { Task } from "./task.ts";
import type { Turn } from "./trajectory.ts";

/** Maps text to token ids and back; embedded policies expose theirs so observations are encoded once. */
export interface Tokenizer {
  encode(text: string): number[];
  decode(ids: number[]): string;
  readonly vocabSize: number;
}

/** Description of a tool as the policy sees it (OpenAI function format for chat policies). */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON schema of the arguments. */
  parameters: Record<string, unknown>;
  /** Argument carried by the tagged text protocol. */
  textArgument: string;
}

export interface PolicyContext {
  episodeId: string;
  task: Task;
  /** Prompt of the episode (text protocol) and its ids when the policy has a tokenizer. */
  prompt: { text: string; tokenIds: number[] };
  /** Finished turns so far, each with its observation. */
  turns: readonly Turn[];
  tools: readonly ToolSpec[];
  /** Seed of the episode; sampling policies derive their randomness from it. */
  seed: number;
  /** Most tokens the policy may generate in this turn. */
  maxTokens: number;
  /**
   * Sampling settings of this context, overriding the policy's own (`agentrl serve` takes them per
   * request from one loaded model). Policies that do not sample ignore them.
   */
  sampling?: { temperature: number; topP: number };
  /**
   * The conversation as a chat client sent it (`agentrl serve`), in OpenAI message form. A chat
   * policy that renders its own prompt (`hf:`) renders these instead of messages rebuilt from
   * `turns`; other policies ignore them.
   */
  messages?: readonly unknown[];
  /**
   * The tools as the chat client sent them (`agentrl serve`), rendered as sent by a policy with its
   * own template (`hf:`), as vLLM and transformers do: rebuilt from `tools`, a tool without a
   * description would render differently. Only with `messages`; `tools` still decides what may be called.
   */
  requestTools?: readonly unknown[];
}

/** A chat tool call as returned by an OpenAI-compatible server. */
export interface ChatToolCall {
  id: string;
  name: string;
  /** Raw JSON text of the arguments, parsed (and possibly rejected) by the episode loop. */
  arguments: string;
}

export interface PolicyStep {
  text: string;
  tokenIds: number[];
  logprobs: number[] | null;
  /** Chat policies only: the tool calls of the message. */
  toolCalls?: ChatToolCall[];
  /** `length`: the token budget ran out mid-turn. */
  finishReason: "stop" | "length" | "tool-calls" | "error";
  /** Set when the policy itself failed (an endpoint error after retries): recorded, not thrown. */
  error?: string;
  /** The class of that failure when the policy knows it (`infra` for an upstream 5xx or timeout). */
  failure?: Failure;
  /** The ids fed before this turn, from a policy that renders its own prompt (`promptIds`). */
  promptIds?: number[];
}

export interface Policy {
  readonly id: string;
  /** `text`: the tagged protocol (`<search> … </search>`); `chat`: OpenAI tool calls. */
  readonly protocol: "text" | "chat";
  readonly tokenizer?: Tokenizer;
  act(contexts: readonly PolicyContext[], options?: { signal?: AbortSignal }): Promise<PolicyStep[]>;
  /**
   * The exact ids the policy feeds for a context (vLLM's `prompt_token_ids`), for a policy that
   * renders its own prompt (a chat template); absent: the context's prompt and turn ids.
   */
  promptIds?(context: PolicyContext): number[];
  /**
   * A policy rendering its own prompt: the turns that continued an episode, and those whose
   * rendering no longer extended the ids it had fed and sampled (a prefix break).
   */
  readonly continuedTurns?: number;
  readonly prefixBreaks?: number;
  release?(episodeIds: readonly string[]): void;
  close?(): Promise<void>;
}
