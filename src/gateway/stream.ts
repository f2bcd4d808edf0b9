/**
 * Server-sent chat-completion chunks assembled back into one completion, so a streamed call is
 * recorded like any other: content, reasoning and tool-call arguments concatenated per choice,
 * log-prob entries and per-chunk ids (`token_ids`, `response_token_ids`) appended in order under
 * the server's own names, `prompt_token_ids` (top-level or per choice) and `usage` taken from
 * whichever chunk carries them (vLLM sends the prompt's ids on the first chunk, usage on the last).
 * A chunk that is an error (`data: {"error": …}`, which vLLM and SGLang send mid-stream before
 * `[DONE]`) is kept as `upstreamError`: the stream failed, whatever came before it.
 */
import { upstreamErrorMessage } from "./completion.ts";

interface ChoiceAccumulator {
  index: number;
  content: string | null;
  toolCalls: { id: string; type: "function"; function: { name: string; arguments: string } }[];
  logprobs: unknown[] | null;
  /** Ids per field name (`token_ids`, `response_token_ids`), appended chunk by chunk. */
  ids: Map<string, number[]>;
  /** Reasoning text under the field name the server used. */
  reasoning: { field: string; text: string } | null;
  promptTokenIds: number[] | null;
  finishReason: string | null;
}

const DELTA_ID_FIELDS = ["token_ids", "response_token_ids"] as const;

export class StreamAssembler {
  private readonly choices = new Map<number, ChoiceAccumulator>();
  private buffer = "";
  private head: Record<string, unknown> = {};
  private promptTokenIds: number[] | null = null;
  private usage: unknown = null;
  private sglext: unknown = null;
  done = false;
  /** The message of an error chunk, when the server failed mid-stream. */
  upstreamError: string | null = null;
  /** Set when a chunk was not JSON or not an object: the stream is malformed. */
  error: string | null = null;

  /** Feeds raw bytes of the event stream (events may be split across calls). */
  push(text: string): void {
    this.buffer += text;
    let cut = this.buffer.indexOf("\n\n");
    while (cut >= 0) {
      this.event(this.buffer.slice(0, cut));
      this.buffer = this.buffer.slice(cut + 2);
      cut = this.buffer.indexOf("\n\n");
    }
  }

  private event(block: string): void {
    const data = block
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trimStart())
      .join("\n");
    if (!data) return;
    if (data === "[DONE]") {
      this.done = true;
      return;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      this.error ??= "a stream chunk is not JSON";
      return;
    }
    if (typeof chunk !== "object" || chunk === null) {
      this.error ??= "a stream chunk is not an object";
      return;
    }
    const record = chunk as Record<string, unknown>;
    if (record.error !== undefined || record.object === "error") {
      this.upstreamError ??= upstreamErrorMessage(record) ?? JSON.stringify(record).slice(0, 500);
      return;
    }
    if (record.sglext) this.sglext = record.sglext;
    for (const key of ["id", "created", "model", "system_fingerprint"]) {
      if (record[key] !== undefined && this.head[key] === undefined) this.head[key] = record[key];
    }
    if (Array.isArray(record.prompt_token_ids)) this.promptTokenIds = record.prompt_token_ids as number[];
    if (record.usage) this.usage = record.usage;
    for (const raw of Array.isArray(record.choices) ? record.choices : []) {
      const choice = raw as Record<string, unknown>;
      const index = typeof choice.index === "number" ? choice.index : 0;
      let acc = this.choices.get(index);
      if (!acc) {
        acc = {
          index,
          content: null,
          toolCalls: [],
          logprobs: null,
          ids: new Map(),
          reasoning: null,
          promptTokenIds: null,
          finishReason: null,
        };
        this.choices.set(index, acc);
      }
      const delta = (choice.delta ?? {}) as Record<string, unknown>;
      if (typeof delta.content === "string") acc.content = (acc.content ?? "") + delta.content;
      for (const field of ["reasoning_content", "reasoning"]) {
        if (typeof delta[field] !== "string") continue;
        acc.reasoning ??= { field, text: "" };
        acc.reasoning.text += delta[field];
      }
      for (const rawCall of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
        const call = rawCall as Record<string, unknown>;
        const at = typeof call.index === "number" ? call.index : acc.toolCalls.length;
        const fn = (call.function ?? {}) as Record<string, unknown>;
        acc.toolCalls[at] ??= { id: "", type: "function", function: { name: "", arguments: "" } };
        const target = acc.toolCalls[at];
        if (typeof call.id === "string") target.id = call.id;
        if (typeof fn.name === "string") target.function.name += fn.name;
        if (typeof fn.arguments === "string") target.function.arguments += fn.arguments;
      }
      const logprobs = choice.logprobs as { content?: unknown } | null | undefined;
      if (logprobs && Array.isArray(logprobs.content))
        acc.logprobs = [...(acc.logprobs ?? []), ...logprobs.content];
      for (const field of DELTA_ID_FIELDS) {
        const ids = choice[field];
        if (Array.isArray(ids)) acc.ids.set(field, [...(acc.ids.get(field) ?? []), ...(ids as number[])]);
      }
      if (Array.isArray(choice.prompt_token_ids)) acc.promptTokenIds ??= choice.prompt_token_ids as number[];
      if (typeof choice.finish_reason === "string") acc.finishReason = choice.finish_reason;
    }
  }

  /** The completion the chunks add up to (call after the stream ended). */
  completion(): Record<string, unknown> {
    if (this.buffer.trim()) this.event(this.buffer);
    this.buffer = "";
    const choices = [...this.choices.values()]
      .sort((a, b) => a.index - b.index)
      .map((acc) => ({
        index: acc.index,
        message: {
          role: "assistant",
          content: acc.content,
          ...(acc.reasoning ? { [acc.reasoning.field]: acc.reasoning.text } : {}),
          ...(acc.toolCalls.length > 0 ? { tool_calls: acc.toolCalls.filter(Boolean) } : {}),
        },
        logprobs: acc.logprobs ? { content: acc.logprobs } : null,
        finish_reason: acc.finishReason,
        ...Object.fromEntries(acc.ids),
        ...(acc.promptTokenIds ? { prompt_token_ids: acc.promptTokenIds } : {}),
      }));
    return {
      ...this.head,
      object: "chat.completion",
      choices,
      ...(this.usage ? { usage: this.usage } : {}),
      ...(this.promptTokenIds ? { prompt_token_ids: this.promptTokenIds } : {}),
      ...(this.sglext ? { sglext: this.sglext } : {}),
    };
  }
}
