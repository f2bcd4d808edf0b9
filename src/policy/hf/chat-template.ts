/**
 * The chat template of a Hugging Face checkpoint folder, rendered by `@huggingface/jinja` the way
 * transformers' `apply_chat_template` renders it (chat-template.test.ts compares with it).
 *
 * Where the template comes from, as transformers 5 reads a folder: `chat_template.jinja` when the
 * folder has one, else the `chat_template` field of `tokenizer_config.json` (a string, or a list
 * of `{ name, template }` from which `tool_use` is taken when tools are given, else `default`).
 *
 * What the template sees: `messages`, `tools` (omitted when none, so `{% if tools %}` is false),
 * `add_generation_prompt`, the special tokens by name (`bos_token`, `eos_token`, …, strings as in
 * transformers), then `extra` (`enable_thinking`, `date_string`, …), which may override any of
 * them. Messages are passed as given, except that a tool call's `arguments` string holding a JSON
 * object is passed as that object: templates write `arguments | tojson` and expect a mapping,
 * which is what transformers documents and what vLLM does before rendering.
 */
import { join } from "node:path";
import { Template } from "@huggingface/jinja";
import {
  readOptional,
  readTokenizerConfig,
  specialTokenText,
  TEMPLATE_SPECIAL_TOKENS,
} from "./tokenizer-config.ts";

/** The OpenAI chat message shape, as it comes from a client or from a parsed sample. */
export interface HfChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  /** Text, or OpenAI content parts (their text parts are joined with "\n" for the template). */
  content?: string | null | readonly HfContentPart[];
  tool_calls?: readonly HfToolCall[];
  tool_call_id?: string;
  name?: string;
  /** The assistant's thinking, as vLLM's reasoning parsers return it (Qwen3's template reads it). */
  reasoning_content?: string | null;
}

export type HfContentPart = { type: "text"; text: string } | { type: string; [key: string]: unknown };

export interface HfToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface ChatRenderOptions {
  /** OpenAI-format tool specs (`{ type: "function", function: { name, description, parameters } }`). */
  tools?: readonly unknown[];
  addGenerationPrompt: boolean;
  /** More template variables (`enable_thinking: false` for Qwen3, `date_string` for Llama 3.1). */
  extra?: Record<string, unknown>;
}

export interface ChatTemplate {
  render(messages: readonly HfChatMessage[], options: ChatRenderOptions): string;
  /** Every template text the folder holds (`default` first, then `tool_use`), for format detection. */
  readonly sources: readonly string[];
}

/**
 * The name a call the parser could not read is recorded under: the episode loop finds no such
 * tool and records the turn as a format failure (the policy's), with the raw text as arguments.
 * A template may render it back as written (agentrl-text.ts).
 */
export const MALFORMED_CALL = "malformed_tool_call";

/** The folder has no chat template (a base model): it cannot be served a chat. */
export class NoChatTemplateError extends Error {
  constructor(folder: string) {
    super(
      `${folder}: no chat template: neither chat_template.jinja nor a chat_template field in tokenizer_config.json`,
    );
    this.name = "NoChatTemplateError";
  }
}

/** Reads the folder's template; throws NoChatTemplateError naming both places when neither holds one. */
export async function loadChatTemplate(folder: string): Promise<ChatTemplate> {
  const config = await readTokenizerConfig(folder);
  const jinja = await readOptional(join(folder, "chat_template.jinja"));
  const templates = jinja !== undefined ? { default: jinja } : namedTemplates(config.chat_template, folder);
  const specialTokens: Record<string, string> = {};
  for (const name of TEMPLATE_SPECIAL_TOKENS) {
    const text = specialTokenText(config[name]);
    if (text !== undefined) specialTokens[name] = text;
  }
  return chatTemplateFrom(templates, specialTokens);
}

/** A template from its text(s) and the special tokens it may name. */
export function chatTemplateFrom(
  templates: { default: string; tool_use?: string },
  specialTokens: Record<string, string> = {},
): ChatTemplate {
  const compiled = new Map<string, Template>();
  const compile = (text: string) => {
    let template = compiled.get(text);
    if (template === undefined) {
      template = new Template(text);
      compiled.set(text, template);
    }
    return template;
  };
  compile(templates.default);
  return {
    sources: templates.tool_use === undefined ? [templates.default] : [templates.default, templates.tool_use],
    render(messages, options) {
      const hasTools = options.tools !== undefined && options.tools.length > 0;
      const text = hasTools && templates.tool_use !== undefined ? templates.tool_use : templates.default;
      return compile(text).render({
        ...specialTokens,
        messages: messages.map(templateMessage),
        ...(hasTools ? { tools: options.tools } : {}),
        add_generation_prompt: options.addGenerationPrompt,
        ...options.extra,
      });
    },
  };
}

/**
 * The message as the template sees it: undefined fields dropped, content parts joined into text
 * (templates of text models call string methods on `content`; vLLM joins them the same way), and
 * JSON-object arguments parsed. A non-text part (an image) is refused by its type: these
 * checkpoints read text only.
 */
export function templateMessage(message: HfChatMessage): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(message)) {
    if (value !== undefined) result[key] = value;
  }
  if (Array.isArray(message.content)) result.content = partsText(message.content);
  if (message.tool_calls !== undefined) {
    result.tool_calls = message.tool_calls.map((call) => ({
      ...call,
      function: { ...call.function, arguments: parsedArguments(call.function.arguments) },
    }));
  }
  return result;
}

function partsText(parts: readonly HfContentPart[]): string {
  return parts
    .map((part) => {
      if (part.type === "text" && typeof part.text === "string") return part.text;
      throw new Error(`chat message content part of type "${part.type}": only "text" parts are supported`);
    })
    .join("\n");
}

function parsedArguments(text: string): unknown {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? value : text;
  } catch {
    return text;
  }
}

function namedTemplates(field: unknown, folder: string): { default: string; tool_use?: string } {
  if (typeof field === "string") return { default: field };
  if (Array.isArray(field)) {
    const byName = new Map<string, string>();
    for (const entry of field as { name?: unknown; template?: unknown }[]) {
      if (typeof entry?.name === "string" && typeof entry.template === "string")
        byName.set(entry.name, entry.template);
    }
    const fallback = byName.get("default");
    if (fallback !== undefined) return { default: fallback, tool_use: byName.get("tool_use") };
    throw new Error(
      `${join(folder, "tokenizer_config.json")}: chat_template is a list without a "default" entry (names: ${[...byName.keys()].join(", ") || "none"})`,
    );
  }
  throw new NoChatTemplateError(folder);
}
