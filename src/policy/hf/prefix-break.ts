/**
 * Does the next prompt extend what the model saw and sampled, token for token? When it does, the
 * turn's ids are exact training data and a KV cache can be reused; when a chat template re-renders
 * an earlier turn (Qwen3 drops `<think>` from turns before the last user message, templates
 * reformat tool-call JSON) or the text re-encodes to other ids, the episode breaks there: RL trains
 * on a context the model never saw, and the server prefills again from the break.
 *
 * `comparePrefix` is the pure check on ids (the gateway's and doctor's token-exactness question,
 * with where and what it costs); `conversationPrefixBreaks` replays a conversation through a real
 * template and tokenizer to measure how often that template breaks it.
 */
import type { ChatRenderOptions, ChatTemplate, HfChatMessage } from "./chat-template.ts";
import type { HfTokenizer } from "./tokenizer.ts";

export interface PrefixCheck {
  /** The next prompt starts with prompt + sampled. */
  extends: boolean;
  /** Index (into prompt + sampled) of the first differing token; null when it extends. */
  breakAt: number | null;
  /**
   * Where the first difference is: in the earlier `prompt` (the template re-rendered a past turn),
   * in the `sampled` ids (the turn came back as other ids), or `short` (the next prompt is a
   * strict prefix: something was cut off); null when it extends.
   */
  site: "prompt" | "sampled" | "short" | null;
  /** Tokens of prompt + sampled from the break on: context to prefill again, and not trained as seen. */
  lostTokens: number;
}

export function comparePrefix(
  prompt: readonly number[],
  sampled: readonly number[],
  next: readonly number[],
): PrefixCheck {
  const total = prompt.length + sampled.length;
  const at = (i: number) => (i < prompt.length ? prompt[i] : sampled[i - prompt.length]);
  let i = 0;
  while (i < total && i < next.length && at(i) === next[i]) i++;
  if (i === total) return { extends: true, breakAt: null, site: null, lostTokens: 0 };
  const site = i === next.length ? "short" : i < prompt.length ? "prompt" : "sampled";
  return { extends: false, breakAt: i, site, lostTokens: total - i };
}

export interface ConversationBreaks {
  /** Assistant messages followed by another prompt (the transitions checked). */
  transitions: number;
  breaks: number;
  /** One entry per transition, in order. */
  checks: PrefixCheck[];
}

/**
 * Replays a conversation as an agent loop would: before each assistant message, the prompt is the
 * template's rendering of the messages so far with the generation prompt; the assistant's text
 * (the `sampled` text given for it, as the model wrote it, ending with its stop token) is encoded
 * as the sampled ids; the next prompt is rendered from the messages up to the next assistant
 * message. `sampled[k]` is the text of the k-th assistant message.
 */
export function conversationPrefixBreaks(
  template: ChatTemplate,
  tokenizer: HfTokenizer,
  messages: readonly HfChatMessage[],
  sampled: readonly string[],
  options: Omit<ChatRenderOptions, "addGenerationPrompt"> = {},
): ConversationBreaks {
  const assistantAt = messages.flatMap((message, i) => (message.role === "assistant" ? [i] : []));
  if (assistantAt.length !== sampled.length) {
    throw new Error(
      `conversationPrefixBreaks: ${assistantAt.length} assistant messages but ${sampled.length} sampled texts`,
    );
  }
  const promptBefore = (index: number) =>
    tokenizer.encode(template.render(messages.slice(0, index), { ...options, addGenerationPrompt: true }));
  const checks: PrefixCheck[] = [];
  assistantAt.forEach((index, k) => {
    // The next prompt: before the next assistant message, else after everything (when the
    // conversation goes on past the last one); an assistant message that ends it has none.
    const nextIndex = assistantAt[k + 1] ?? (index + 1 < messages.length ? messages.length : undefined);
    if (nextIndex === undefined) return;
    checks.push(comparePrefix(promptBefore(index), tokenizer.encode(sampled[k]!), promptBefore(nextIndex)));
  });
  return { transitions: checks.length, breaks: checks.filter((check) => !check.extends).length, checks };
}
