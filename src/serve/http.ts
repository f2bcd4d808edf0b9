/**
 * `agentrl serve`'s server-sent-event responses (the JSON plumbing all servers share is in
 * src/http/json.ts).
 */
import type { ServerResponse } from "node:http";
import type { ChatChoice } from "./completion.ts";
import type { ChatRequest } from "./request.ts";

/** Server-sent events: each choice whole in one chunk, then its finish chunk, usage if asked, `[DONE]`. */
export function sendStream(
  res: ServerResponse,
  response: {
    id: string;
    created: number;
    model: string;
    system_fingerprint: string;
    choices: ChatChoice[];
    usage: unknown;
    prompt_token_ids?: number[];
  },
  request: ChatRequest,
) {
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  const base = {
    id: response.id,
    object: "chat.completion.chunk",
    created: response.created,
    model: response.model,
    system_fingerprint: response.system_fingerprint,
  };
  const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
  let first = true;
  for (const choice of response.choices) {
    const delta: Record<string, unknown> = { role: "assistant", content: choice.message.content };
    if (choice.message.tool_calls)
      delta.tool_calls = choice.message.tool_calls.map((call, index) => ({ index, ...call }));
    send({
      ...base,
      choices: [
        {
          index: choice.index,
          delta,
          logprobs: choice.logprobs,
          finish_reason: null,
          ...(choice.token_ids ? { token_ids: choice.token_ids } : {}),
        },
      ],
      // vLLM sends the prompt's ids once, on the first chunk.
      ...(first && response.prompt_token_ids ? { prompt_token_ids: response.prompt_token_ids } : {}),
    });
    first = false;
    send({
      ...base,
      choices: [{ index: choice.index, delta: {}, logprobs: null, finish_reason: choice.finish_reason }],
    });
  }
  if (request.stream_options?.include_usage) send({ ...base, choices: [], usage: response.usage });
  res.end("data: [DONE]\n\n");
}
