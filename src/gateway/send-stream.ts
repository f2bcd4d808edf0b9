/**
 * A whole chat completion written to the agent as server-sent chunks. The gateway asks a server
 * unstreamed where its streamed path has no token ids (SGLang, llama.cpp with tools, vLLM < 0.12
 * with tools: policy/openai/server-kind.ts) and streams the answer itself, so an agent that streams
 * gets the same chunks it would have, and the call keeps its ids. Per choice: one chunk with the
 * role, reasoning, content, tool calls (indexed), log-probs and ids (when the completion still holds
 * them: the agent asked), then its finish chunk; a usage chunk when the agent asked
 * (`stream_options.include_usage`); then `[DONE]`.
 */
import type { ServerResponse } from "node:http";

export function sendCompletionStream(
  res: ServerResponse,
  completion: Record<string, unknown>,
  asked: Record<string, unknown>,
): void {
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  const base = {
    id: completion.id,
    object: "chat.completion.chunk",
    created: completion.created,
    model: completion.model,
  };
  const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
  const choices = Array.isArray(completion.choices) ? (completion.choices as Record<string, unknown>[]) : [];
  let first = true;
  for (const choice of choices) {
    const { message, finish_reason, ...rest } = choice;
    const { tool_calls, ...delta } = (message ?? {}) as Record<string, unknown>;
    send({
      ...base,
      choices: [
        {
          ...rest,
          delta: {
            ...delta,
            ...(Array.isArray(tool_calls)
              ? { tool_calls: tool_calls.map((call, index) => ({ index, ...(call as object) })) }
              : {}),
          },
          finish_reason: null,
        },
      ],
      ...(first && completion.prompt_token_ids ? { prompt_token_ids: completion.prompt_token_ids } : {}),
    });
    first = false;
    send({ ...base, choices: [{ index: choice.index, delta: {}, logprobs: null, finish_reason }] });
  }
  const options = asked.stream_options as { include_usage?: unknown } | undefined;
  if (options?.include_usage === true && completion.usage)
    send({ ...base, choices: [], usage: completion.usage });
  res.end("data: [DONE]\n\n");
}
