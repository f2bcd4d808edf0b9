/**
 * A stored episode as supervised examples for a Hugging Face checkpoint, rendered as the chat
 * policy (policy.ts) renders it at sampling time: the messages the OpenAI policy would send
 * (buildChatMessages), the tools, the checkpoint's own template and tokenizer. The loss covers
 * what the assistant wrote: for turn k, the template's rendering with turn k as the last message
 * minus its rendering of the context before it with the generation prompt on (so role markers,
 * end-of-turn tokens and Hermes `<tool_call>` tags the model must emit are trained; prompts, tool
 * results and what the template writes after the end-of-turn token are masked).
 *
 * Turns are packed into one example while each context extends the text before it. A template
 * that rewrites earlier turns (Qwen3 writes an empty `<think>` block only into the last assistant
 * message) starts a new example from the full rendering there: every example is a context the
 * model will read, never a splice it will not.
 */
import type { ChatCompletionTool } from "openai/resources/chat/completions";
import type { PolicyContext } from "../../types/policy.ts";
import type { Task } from "../../types/task.ts";
import type { Trajectory } from "../../types/trajectory.ts";
import { buildChatMessages } from "../openai/messages.ts";
import type { HfTextSide } from "./policy.ts";

export interface EncodedExample {
  ids: number[];
  /** 1 on tokens the assistant wrote (the loss), 0 elsewhere. */
  mask: number[];
}

/**
 * The examples of one episode, or null when one is longer than `maxLen` or the template's
 * rendering with a turn does not extend its rendering before it (nothing to mask by).
 */
export function encodeChatEpisode(
  trajectory: Trajectory,
  task: Pick<Task, "question" | "systemPrompt">,
  text: Pick<HfTextSide, "tokenizer" | "template">,
  options: { tools?: readonly ChatCompletionTool[]; maxLen: number; templateExtra?: Record<string, unknown> },
): EncodedExample[] | null {
  const render = (turns: Trajectory["turns"], addGenerationPrompt: boolean) => {
    const messages = buildChatMessages({ task, turns } as unknown as PolicyContext);
    // The turn's own tool messages come after it: a context ends at its last assistant message.
    if (!addGenerationPrompt)
      while (messages.length > 0 && messages.at(-1)!.role !== "assistant") messages.pop();
    return text.template.render(messages, {
      ...(options.tools && options.tools.length > 0 ? { tools: options.tools } : {}),
      addGenerationPrompt,
      ...(options.templateExtra ? { extra: options.templateExtra } : {}),
    });
  };
  const encode = (piece: string) => text.tokenizer.encode(piece, { addSpecialTokens: false });
  const examples: EncodedExample[] = [];
  let current: (EncodedExample & { text: string }) | null = null;
  for (let k = 0; k < trajectory.turns.length; k++) {
    const before = render(trajectory.turns.slice(0, k), true);
    const withTurn = render(
      [...trajectory.turns.slice(0, k), { ...trajectory.turns[k], observation: undefined }],
      false,
    );
    if (!withTurn.startsWith(before)) return null;
    if (!current || !before.startsWith(current.text)) {
      if (current) examples.push(current);
      current = { text: "", ids: [], mask: [] };
    }
    const context = encode(before.slice(current.text.length));
    const written = encode(withTurn.slice(before.length));
    // What follows the end-of-turn token (a newline) is the template's, not the model's.
    const stops = new Set(text.tokenizer.eosTokenIds);
    const end = written.findLastIndex((id) => stops.has(id));
    current.ids.push(...context, ...written);
    current.mask.push(...context.map(() => 0), ...written.map((_, i) => (end < 0 || i <= end ? 1 : 0)));
    current.text = withTurn;
  }
  if (current) examples.push(current);
  if (examples.some((example) => example.ids.length > options.maxLen)) return null;
  return examples.map(({ ids, mask }) => ({ ids, mask }));
}
