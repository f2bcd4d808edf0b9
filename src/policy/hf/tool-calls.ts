/**
 * Tool calls parsed from a model's sampled text by the checkpoint's format, into OpenAI
 * `tool_calls`; the chat template renders them back (tool-calls.test.ts checks the round trip).
 *
 * Formats:
 * - `hermes` (Qwen2.5, Qwen3): `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>` blocks,
 *   any number, after the content.
 * - `llama3-json` (Llama 3.1/3.2): the whole reply is `{"name": …, "parameters": {…}}`, optionally
 *   after `<|python_tag|>`, several joined by `;`. A reply that does not start with `{` is content.
 * - `agentrl-text` (a lab model exported by `agentrl export hf`): the lab's tagged protocol,
 *   `<search> zenda </search>`, parsed as the lab's episode loop parses it (agentrl-text.ts). The
 *   stop tag closing the call is part of the text (`stopIsText`).
 * - `none`: the template cannot render tools; the text is content.
 *
 * Thinking: text before `</think>` (without its `<think>`) is `reasoning`, the rest is parsed, as
 * vLLM's Qwen3 reasoning parser splits it; newlines around both are stripped as Qwen3's template
 * strips them.
 *
 * Model output is untrusted: a call that is not valid JSON, lacks a string `name` or an object of
 * arguments, or a `<tool_call>` left open (the sample ran out of tokens) is returned in
 * `malformed` (its raw text, which also stays in `content`) for the caller to record as a format
 * failure. Nothing here throws on model text.
 */
import { randomBytes } from "node:crypto";
import { AGENTRL_TEXT_MARKER, type AgentrlTextTool, parseAgentrlText } from "./agentrl-text.ts";
import {
  type HfChatMessage,
  type HfToolCall,
  loadChatTemplate,
  NoChatTemplateError,
} from "./chat-template.ts";

export type ToolCallFormat = "hermes" | "llama3-json" | "agentrl-text" | "none";
export const TOOL_CALL_FORMATS: readonly ToolCallFormat[] = ["hermes", "llama3-json", "agentrl-text", "none"];

/**
 * Whether the end-of-turn id a format stops on is part of what is parsed: the lab's closing tags
 * (`</search>`) end its turns and close its calls; other formats' end-of-sequence ids are not text.
 */
export function stopIsText(format: ToolCallFormat): boolean {
  return format === "agentrl-text";
}

/**
 * Whether the format's template renders a malformed call back as the text the model wrote (the
 * lab's template reads the `malformed_tool_call` entry: its raw turn, and the lab's own feedback).
 * Other templates would render it as a tool call, with other ids than were sampled, so the policy
 * records such a turn as its raw text instead.
 */
export function rendersMalformed(format: ToolCallFormat): boolean {
  return format === "agentrl-text";
}

export interface ParsedToolCalls {
  content: string;
  reasoning?: string;
  toolCalls: HfToolCall[];
  /** Raw text of each call that could not be parsed: a format failure of the policy. */
  malformed: string[];
}

export interface ParseToolCallsOptions {
  /** Id of the index-th call (default: `call_` and 24 random hex digits, as OpenAI ids look). */
  callId?: (index: number) => string;
  /** The episode's tools (`agentrl-text` needs each one's text argument). */
  tools?: readonly AgentrlTextTool[];
}

/**
 * The format the folder's chat template renders tool calls in. The template decides (it is what
 * the model was trained to write); `modelType` only settles a template that shows both markers.
 */
export async function toolCallFormatOf(folder: string, modelType: string): Promise<ToolCallFormat> {
  let sources: readonly string[];
  try {
    sources = (await loadChatTemplate(folder)).sources;
  } catch (error) {
    // A checkpoint without a template (a base model) writes no tool calls.
    if (error instanceof NoChatTemplateError) return "none";
    throw error;
  }
  return toolCallFormatOfTemplate(sources.join("\n"), modelType);
}

/** The format a template's text writes tool calls in (see toolCallFormatOf). */
export function toolCallFormatOfTemplate(source: string, modelType = ""): ToolCallFormat {
  if (source.includes(AGENTRL_TEXT_MARKER)) return "agentrl-text";
  const hermes = source.includes("<tool_call>");
  const llama =
    source.includes('"parameters"') && (source.includes("ipython") || source.includes("<|python_tag|>"));
  if (hermes && llama) return modelType.startsWith("llama") ? "llama3-json" : "hermes";
  if (hermes) return "hermes";
  if (llama) return "llama3-json";
  return "none";
}

export function parseToolCalls(
  text: string,
  format: ToolCallFormat,
  options: ParseToolCallsOptions = {},
): ParsedToolCalls {
  const callId = options.callId ?? (() => `call_${randomBytes(12).toString("hex")}`);
  // The lab's protocol has no thinking blocks: `<think>` there is an unknown tag, not reasoning.
  if (format === "agentrl-text") return parseAgentrlText(text, options.tools ?? [], callId);
  const { reasoning, rest } = splitReasoning(text);
  const parsed =
    format === "hermes"
      ? parseHermes(rest, callId)
      : format === "llama3-json"
        ? parseLlamaJson(rest, callId)
        : { content: rest, toolCalls: [], malformed: [] };
  return reasoning === undefined ? parsed : { ...parsed, reasoning };
}

/** The assistant message of a parsed sample (tool_calls and reasoning_content only when present). */
export function assistantMessageOf(parsed: ParsedToolCalls): HfChatMessage {
  return {
    role: "assistant",
    content: parsed.content,
    ...(parsed.reasoning !== undefined ? { reasoning_content: parsed.reasoning } : {}),
    ...(parsed.toolCalls.length > 0 ? { tool_calls: parsed.toolCalls } : {}),
  };
}

function splitReasoning(text: string): { reasoning?: string; rest: string } {
  const end = text.indexOf("</think>");
  if (end < 0) return { rest: text };
  let before = text.slice(0, end);
  const start = before.indexOf("<think>");
  if (start >= 0) before = before.slice(start + "<think>".length);
  return { reasoning: trimNewlines(before), rest: text.slice(end + "</think>".length).replace(/^\n+/, "") };
}

function trimNewlines(text: string): string {
  return text.replace(/^\n+/, "").replace(/\n+$/, "");
}

const HERMES_BLOCK = /<tool_call>([\s\S]*?)<\/tool_call>/g;

function parseHermes(text: string, callId: (index: number) => string): Omit<ParsedToolCalls, "reasoning"> {
  const toolCalls: HfToolCall[] = [];
  const malformed: string[] = [];
  let content = "";
  let last = 0;
  for (const match of text.matchAll(HERMES_BLOCK)) {
    content += text.slice(last, match.index);
    last = match.index + match[0].length;
    const call = callOf(match[1]!.trim(), "arguments", callId(toolCalls.length));
    if (call === undefined) {
      malformed.push(match[0]);
      content += match[0];
    } else {
      toolCalls.push(call);
    }
  }
  const tail = text.slice(last);
  const open = tail.indexOf("<tool_call>");
  if (open >= 0) malformed.push(tail.slice(open));
  content += tail;
  return { content: toolCalls.length > 0 ? content.trimEnd() : content, toolCalls, malformed };
}

function parseLlamaJson(text: string, callId: (index: number) => string): Omit<ParsedToolCalls, "reasoning"> {
  const body = text
    .trimStart()
    .replace(/^<\|python_tag\|>/, "")
    .trim();
  if (!body.startsWith("{")) return { content: text, toolCalls: [], malformed: [] };
  const pieces = splitJsonObjects(body);
  const values = pieces?.map((piece) => tryJson(piece));
  if (pieces === undefined || values === undefined || values.some((value) => value === undefined)) {
    return { content: text, toolCalls: [], malformed: [text] };
  }
  // A JSON object without a name is an answer written as JSON, not a call.
  if (values.every((value) => !isObject(value) || !("name" in value))) {
    return { content: text, toolCalls: [], malformed: [] };
  }
  const toolCalls: HfToolCall[] = [];
  for (const piece of pieces) {
    const call = callOf(piece, "parameters", callId(toolCalls.length));
    if (call === undefined) return { content: text, toolCalls: [], malformed: [text] };
    toolCalls.push(call);
  }
  return { content: "", toolCalls, malformed: [] };
}

/** A call from its JSON text: a string `name` and object arguments under `key` (or the other name). */
function callOf(json: string, key: "arguments" | "parameters", id: string): HfToolCall | undefined {
  const value = tryJson(json);
  if (!isObject(value) || typeof value.name !== "string" || value.name === "") return undefined;
  const other = key === "arguments" ? "parameters" : "arguments";
  const args = key in value ? value[key] : value[other];
  if (!isObject(args)) return undefined;
  return { id, type: "function", function: { name: value.name, arguments: JSON.stringify(args) } };
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * `{…}; {…}` split into its objects by brace depth outside strings; undefined when the text is
 * not objects separated by `;` (or when braces do not balance).
 */
export function splitJsonObjects(text: string): string[] | undefined {
  const pieces: string[] = [];
  let depth = 0;
  let inString = false;
  let start = -1;
  let expectSeparator = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (depth === 0) {
      if (/\s/.test(ch)) continue;
      if (expectSeparator) {
        if (ch !== ";") return undefined;
        expectSeparator = false;
        continue;
      }
      if (ch !== "{") return undefined;
      start = i;
    }
    if (ch === '"') inString = true;
    else if (ch === "{" || ch === "[") depth++;
    else if (ch === "}" || ch === "]") {
      depth--;
      if (depth === 0) {
        pieces.push(text.slice(start, i + 1));
        expectSeparator = true;
      }
    }
  }
  return depth === 0 && !inString && pieces.length > 0 ? pieces : undefined;
}
