/**
 * Where each server kind puts token ids in a chat completion, across the field names it has used in
 * the versions agentrl supports (server-kind.ts says how to ask for them). Untrusted input: a field
 * that is not a list of non-negative integers is not ids.
 *
 *   prompt ids       vllm/agentrl: top-level `prompt_token_ids`
 *                    sglang: `choices[i].prompt_token_ids` (`return_prompt_token_ids`), or
 *                    `sglext.input_ids`
 *   completion ids   vllm: `choices[i].token_ids`, or log-prob tokens written `token_id:<id>`
 *                    (`return_tokens_as_token_ids`)
 *                    agentrl: `choices[i].token_ids`, or `token_id` on each log-prob entry
 *                    sglang: `token_ids` (PR #30917), renamed `response_token_ids` (PR #35225, no
 *                    alias), or `sglext.output_ids`
 *                    llamacpp: `logprobs.content[i].id`
 *   ollama, openai   none
 *
 * `unknown` (no kind named) reads every location: the union is safe, since no server uses another's
 * field for something else.
 */
import type { UpstreamKind } from "./server-kind.ts";

type Kind = UpstreamKind | "unknown";
type Body = Record<string, unknown>;

export function isTokenIds(value: unknown): value is number[] {
  return (
    Array.isArray(value) && value.every((id) => typeof id === "number" && Number.isInteger(id) && id >= 0)
  );
}

function record(value: unknown): Body | null {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Body) : null;
}

const TOKEN_ID_PREFIX = /^token_id:(\d+)$/;

/** Ids written on each log-prob entry (`id`, `token_id`, or a `token_id:<n>` token), or null. */
function idsFromLogprobs(choice: Body, fields: readonly ("id" | "token_id" | "prefix")[]): number[] | null {
  const entries = record(choice.logprobs)?.content;
  if (!Array.isArray(entries) || entries.length === 0) return null;
  const ids: number[] = [];
  for (const raw of entries) {
    const entry = record(raw);
    let id: number | null = null;
    for (const field of fields) {
      if (field === "prefix") {
        const match = typeof entry?.token === "string" ? TOKEN_ID_PREFIX.exec(entry.token) : null;
        if (match) id = Number(match[1]);
      } else if (isTokenIds([entry?.[field]])) id = entry?.[field] as number;
      if (id !== null) break;
    }
    if (id === null) return null;
    ids.push(id);
  }
  return ids;
}

const PROMPT_READERS: Record<Kind, readonly ((body: Body) => unknown)[]> = {
  vllm: [(body) => body.prompt_token_ids],
  agentrl: [(body) => body.prompt_token_ids],
  sglang: [(body) => record(firstChoice(body))?.prompt_token_ids, (body) => record(body.sglext)?.input_ids],
  llamacpp: [],
  ollama: [],
  openai: [],
  unknown: [
    (body) => body.prompt_token_ids,
    (body) => record(firstChoice(body))?.prompt_token_ids,
    (body) => record(body.sglext)?.input_ids,
  ],
};

function firstChoice(body: Body): unknown {
  return Array.isArray(body.choices) ? body.choices[0] : undefined;
}

/** The prompt's ids where `kind` puts them, or null. */
export function readPromptIds(body: Body, kind: Kind = "unknown"): number[] | null {
  for (const read of PROMPT_READERS[kind]) {
    const ids = read(body);
    if (isTokenIds(ids)) return [...ids];
  }
  return null;
}

const COMPLETION_READERS: Record<Kind, readonly ((choice: Body, body: Body) => unknown)[]> = {
  vllm: [(choice) => choice.token_ids, (choice) => idsFromLogprobs(choice, ["prefix"])],
  agentrl: [(choice) => choice.token_ids, (choice) => idsFromLogprobs(choice, ["token_id", "prefix"])],
  sglang: [
    (choice) => choice.response_token_ids,
    (choice) => choice.token_ids,
    (_, body) => record(body.sglext)?.output_ids,
  ],
  llamacpp: [(choice) => idsFromLogprobs(choice, ["id"])],
  ollama: [],
  openai: [],
  unknown: [
    (choice) => choice.token_ids,
    (choice) => choice.response_token_ids,
    (_, body) => record(body.sglext)?.output_ids,
    (choice) => idsFromLogprobs(choice, ["id", "token_id", "prefix"]),
  ],
};

/** A choice's sampled ids where `kind` puts them, or null (never re-tokenised from the text). */
export function readCompletionIds(choice: Body, body: Body, kind: Kind = "unknown"): number[] | null {
  for (const read of COMPLETION_READERS[kind]) {
    const ids = read(choice, body);
    if (isTokenIds(ids)) return [...ids];
  }
  return null;
}

/** The reasoning text of a message or delta: `reasoning_content` (vLLM < 0.11, SGLang), `reasoning` (vLLM, Ollama). */
export function readReasoning(message: Body | null | undefined): string | null {
  if (!message) return null;
  if (typeof message.reasoning_content === "string") return message.reasoning_content;
  if (typeof message.reasoning === "string") return message.reasoning;
  return null;
}

/** Fields that carry ids, on a completion or a chunk: taken out of what an agent did not ask for. */
export const ID_FIELDS = ["prompt_token_ids", "token_ids", "response_token_ids"] as const;
