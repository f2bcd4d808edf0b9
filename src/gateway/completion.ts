/**
 * An upstream's chat completion, checked: the gateway records what it can trust and calls anything
 * else malformed (the call is then recorded with its error and the episode ends as `policy-error`).
 * Token ids and log-probs are read where vLLM puts them under `return_token_ids`/`logprobs`:
 * top-level `prompt_token_ids`, `choices[i].token_ids`, `choices[i].logprobs.content[*].logprob`.
 */
import { z } from "zod";
import type { RecordedChoice } from "./types.ts";

const ids = z.array(z.number().int().min(0));

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
        token_ids: ids.nullish(),
        logprobs: z.object({ content: z.array(z.object({ logprob: z.number() })).nullish() }).nullish(),
      }),
    )
    .min(1),
  prompt_token_ids: ids.nullish(),
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

/** The recorded view of a completion, or an error message saying what is malformed. */
export function parseCompletion(body: unknown): ParsedCompletion | { error: string } {
  const parsed = completionSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { error: `malformed completion from the upstream: ${issue.path.join(".")}: ${issue.message}` };
  }
  const choices = parsed.data.choices.map((choice, position): RecordedChoice => {
    const logprobs = choice.logprobs?.content?.map((entry) => entry.logprob) ?? null;
    return {
      index: choice.index ?? position,
      content: choice.message.content ?? null,
      toolCalls: (choice.message.tool_calls ?? []).map((call) => ({
        id: call.id,
        name: call.function.name,
        arguments: call.function.arguments,
      })),
      finishReason: choice.finish_reason ?? null,
      tokenIds: choice.token_ids ?? null,
      logprobs,
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
    promptTokenIds: parsed.data.prompt_token_ids ?? null,
    choices,
    usage: parsed.data.usage ?? null,
  };
}
