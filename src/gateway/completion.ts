/**
 * An upstream's chat completion, checked: the gateway records what it can trust and calls anything
 * else malformed (the call is then recorded with its error and the episode ends as `policy-error`).
 * Token ids are read where the upstream's kind of server puts them (policy/openai/token-ids.ts),
 * log-probs from `choices[i].logprobs.content[*].logprob`, reasoning text from `reasoning_content`
 * or `reasoning`. `tokenIdsVerdict` then says whether a server that should give ids gave them all.
 */
import { z } from "zod";
import type { UpstreamKind } from "../policy/openai/server-kind.ts";
import { readCompletionIds, readPromptIds, readReasoning } from "../policy/openai/token-ids.ts";
import { type Failure, infraFailure } from "../types/failure.ts";
import type { RecordedChoice } from "./types.ts";

const completionSchema = z.object({
  choices: z
    .array(
      z.object({
        index: z.number().int().min(0).optional(),
        message: z.object({
          content: z.string().nullish(),
          tool_calls: z
            .array(
              z.object({
                id: z.string(),
                function: z.object({ name: z.string(), arguments: z.string() }),
              }),
            )
            .nullish(),
        }),
        finish_reason: z.string().nullish(),
        logprobs: z.object({ content: z.array(z.object({ logprob: z.number() })).nullish() }).nullish(),
      }),
    )
    .min(1),
  usage: z
    .object({
      prompt_tokens: z.number().optional(),
      completion_tokens: z.number().optional(),
      total_tokens: z.number().optional(),
    })
    .nullish(),
});

export interface ParsedCompletion {
  promptTokenIds: number[] | null;
  choices: RecordedChoice[];
  usage: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | null;
}

/**
 * The recorded view of a completion, or an error message saying what is malformed. `kind`: where
 * to read ids (default: every server's fields).
 */
export function parseCompletion(
  body: unknown,
  kind: UpstreamKind | "unknown" = "unknown",
): ParsedCompletion | { error: string } {
  const parsed = completionSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { error: `malformed completion from the upstream: ${issue.path.join(".")}: ${issue.message}` };
  }
  const raw = body as Record<string, unknown>;
  const rawChoices = raw.choices as Record<string, unknown>[];
  const choices = parsed.data.choices.map((choice, position): RecordedChoice => {
    const logprobs = choice.logprobs?.content?.map((entry) => entry.logprob) ?? null;
    const message = rawChoices[position].message as Record<string, unknown>;
    const reasoning = readReasoning(message);
    return {
      index: choice.index ?? position,
      content: choice.message.content ?? null,
      toolCalls: (choice.message.tool_calls ?? []).map((call) => ({
        id: call.id,
        name: call.function.name,
        arguments: call.function.arguments,
      })),
      finishReason: choice.finish_reason ?? null,
      tokenIds: readCompletionIds(rawChoices[position], raw, kind),
      logprobs,
      ...(reasoning !== null ? { reasoning } : {}),
    };
  });
  for (const choice of choices) {
    if (choice.tokenIds && choice.logprobs && choice.tokenIds.length !== choice.logprobs.length) {
      return {
        error: `malformed completion from the upstream: choice ${choice.index} has ${choice.tokenIds.length} token ids but ${choice.logprobs.length} log-probs`,
      };
    }
  }
  return {
    promptTokenIds: readPromptIds(raw, kind),
    choices,
    usage: parsed.data.usage ?? null,
  };
}

/**
 * Whether a completion that came with ids came with all of them: prompt ids but a choice without
 * ids (vLLM 0.10.2 on gpt-oss, `include_reasoning: false`), completion ids without prompt ids, or
 * fewer completion ids than `usage.completion_tokens` (a tool parser that dropped the call's ids
 * when streaming, vLLM ≤ 0.11) would be stored as a silent text-only or cut-short turn. That is
 * the server's failure (`infra`): the turn is not a sample of the policy, and nothing can train on
 * it. A completion with no ids at all is text-only (a server that has none: counted and labelled
 * by the trajectory, refused by training), not this. Null when complete or text-only.
 * `checkUsage: false` skips the count (llama.cpp: its ids are its log-prob entries, which it trims
 * at a stop word while `usage` counts every decoded token).
 */
export function tokenIdsVerdict(
  parsed: ParsedCompletion,
  options: { checkUsage?: boolean } = {},
): Failure | null {
  const withoutIds = parsed.choices.filter((choice) => choice.tokenIds === null);
  if (parsed.promptTokenIds === null && withoutIds.length === parsed.choices.length) return null;
  if (parsed.promptTokenIds === null)
    return infraFailure(
      "missing-token-ids",
      "the upstream returned completion token ids but no prompt token ids",
    );
  if (withoutIds.length > 0)
    return infraFailure(
      "missing-token-ids",
      `the upstream returned prompt token ids but no completion token ids for choice ${withoutIds.map((choice) => choice.index).join(", ")}`,
    );
  const sampled = parsed.choices.reduce((sum, choice) => sum + (choice.tokenIds?.length ?? 0), 0);
  const counted = parsed.usage?.completion_tokens;
  if (options.checkUsage !== false && typeof counted === "number" && sampled < counted)
    return infraFailure(
      "short-token-ids",
      `the upstream returned ${sampled} completion token ids for ${counted} completion tokens (usage.completion_tokens)`,
    );
  return null;
}

/**
 * The message of an upstream error body, nested (`{"error": {"message"}}`: vLLM, OpenAI, llama.cpp,
 * Ollama) or flat (`{"object": "error", "message"}`: SGLang), or null.
 */
export function upstreamErrorMessage(body: unknown): string | null {
  if (typeof body !== "object" || body === null) return null;
  const { error, message } = body as { error?: unknown; message?: unknown };
  if (typeof error === "object" && error !== null) {
    const nested = (error as { message?: unknown }).message;
    if (typeof nested === "string") return nested;
  }
  if (typeof error === "string") return error;
  return typeof message === "string" ? message : null;
}
