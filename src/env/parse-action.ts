/**
 * Parsing a policy's turn into an `Action`. Model output is untrusted: both parsers return a
 * `format-error` action for anything malformed and never throw, for any input (fuzzed in
 * parse-action.test.ts).
 *
 * Text protocol (protocol.ts): the first tag of the text must open an action and the next tag must
 * close it; that pair decides the action and anything after it is ignored. Free text before the
 * first tag is allowed (the policy may think aloud). A tool tag gives a `tool-call` whose text
 * argument is the trimmed payload; `<answer>` gives an `answer`. Format errors, with the canonical
 * reasons of `FORMAT_ERRORS` (shown to the policy as `error : <reason>`):
 *   no tag at all → `no action tag`; the first tag is a closing tag, or the pair's closing tag has
 *   another name → `mismatched tag`; the first tag is neither a tool nor `answer` (including `<obs>`,
 *   `<q>`, `<think>`) → `unknown tag`; no tag after the opening one → `unclosed tag`; another opening
 *   tag inside the payload → `nested tag`; a blank payload → `empty action`; a payload longer than
 *   `maxPayloadLength` → `action too long`.
 * A tag is `<name>` or `</name>` with `name` an ASCII identifier (letters, digits, `_ . -`), so
 * `3 < 4` in a payload is text, not a tag.
 *
 * Chat protocol (OpenAI tool calls): see `parseChatAction`.
 */
import { FORMAT_ERRORS } from "../tools/messages.ts";
import type { ChatToolCall } from "../types/policy.ts";
import type { AnyTool } from "../types/tool.ts";
import type { Action } from "../types/trajectory.ts";
import { ANSWER_TAG } from "./protocol.ts";

/** What the text parser needs to know of a tool. */
export interface TextProtocolTool {
  readonly name: string;
  readonly textArgument: string;
}

export interface ParseOptions {
  /** Longest payload accepted, in characters (default `MAX_PAYLOAD_LENGTH`). */
  maxPayloadLength?: number;
}

export const MAX_PAYLOAD_LENGTH = 500;

const TAG_PATTERN = /<(\/?)([A-Za-z_][\w.-]*)>/g;

function formatError(error: string): Action {
  return { type: "format-error", error };
}

/** Parses a text-protocol turn; never throws. */
export function parseTextAction(
  text: string,
  tools: readonly TextProtocolTool[],
  options: ParseOptions = {},
): Action {
  try {
    return parseText(text, tools, options.maxPayloadLength ?? MAX_PAYLOAD_LENGTH);
  } catch {
    return formatError(FORMAT_ERRORS.invalidAction);
  }
}

function parseText(text: string, tools: readonly TextProtocolTool[], maxPayloadLength: number): Action {
  if (typeof text !== "string") return formatError(FORMAT_ERRORS.missingAction);
  const tags = new RegExp(TAG_PATTERN.source, "g");
  const open = tags.exec(text);
  if (!open) return formatError(FORMAT_ERRORS.missingAction);
  const [openTag, openSlash, name] = open;
  if (openSlash) return formatError(FORMAT_ERRORS.mismatchedTag);
  const tool = name === ANSWER_TAG ? undefined : tools.find((candidate) => candidate.name === name);
  if (name !== ANSWER_TAG && !tool) return formatError(FORMAT_ERRORS.unknownTag);

  const close = tags.exec(text);
  if (!close) return formatError(FORMAT_ERRORS.unclosedTag);
  if (!close[1]) return formatError(FORMAT_ERRORS.nestedTag);
  if (close[2] !== name) return formatError(FORMAT_ERRORS.mismatchedTag);

  const payload = text.slice(open.index + openTag.length, close.index).trim();
  if (!payload) return formatError(FORMAT_ERRORS.emptyAction);
  if (payload.length > maxPayloadLength) return formatError(FORMAT_ERRORS.actionTooLong);
  if (!tool) return { type: "answer", answer: payload };
  return { type: "tool-call", tool: tool.name, arguments: { [tool.textArgument]: payload } };
}

/**
 * Parses a chat turn (OpenAI-style tool calls); never throws.
 *
 * - With tool calls, only the first is executed: the episode loop runs one tool per turn, the same
 *   as the text protocol. Calls after the first are dropped (they stay visible in the turn's
 *   policy output, `PolicyStep.toolCalls`, to whoever records it). An unknown function name,
 *   arguments that are not a JSON object, or arguments the tool's zod schema rejects are a
 *   `format-error` whose reason names the problem (chat models read English, so these reasons are
 *   descriptive rather than canonical). Empty argument text counts as `{}`.
 * - Without tool calls the message text is the answer: `<think>…</think>` blocks are dropped (and
 *   whatever precedes a lone `</think>`), then
 *   the content of the last `\boxed{…}` is taken if there is one, else the payload of an
 *   `<answer>…</answer>` pair, else what follows the last line starting with `answer:` (also
 *   `final answer:`, `**Answer:**`), else the whole text, trimmed. A blank answer is a format-error.
 */
export function parseChatAction(
  step: { text: string; toolCalls?: readonly ChatToolCall[] },
  tools: readonly AnyTool[],
): Action {
  try {
    return parseChat(step, tools);
  } catch {
    return formatError(FORMAT_ERRORS.invalidAction);
  }
}

const MAX_REASON_LENGTH = 300;

function parseChat(
  step: { text: string; toolCalls?: readonly ChatToolCall[] },
  tools: readonly AnyTool[],
): Action {
  const call = step.toolCalls?.[0];
  if (!call) {
    const answer = extractChatAnswer(typeof step.text === "string" ? step.text : "");
    return answer ? { type: "answer", answer } : formatError("no tool call and no answer");
  }
  const tool = tools.find((candidate) => candidate.name === call.name);
  if (!tool) {
    const available = tools.map((candidate) => candidate.name).join(", ");
    return formatError(clip(`unknown tool ${JSON.stringify(String(call.name))} (available: ${available})`));
  }
  const raw = typeof call.arguments === "string" ? call.arguments.trim() : "";
  let args: unknown;
  try {
    args = raw === "" ? {} : JSON.parse(raw);
  } catch {
    return formatError(`arguments of ${tool.name} are not valid JSON`);
  }
  if (typeof args !== "object" || args === null || Array.isArray(args)) {
    return formatError(`arguments of ${tool.name} must be a JSON object`);
  }
  const parsed = tool.schema.safeParse(args);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const path = issue.path.map(String).join(".");
      return path ? `${path}: ${issue.message}` : issue.message;
    });
    return formatError(clip(`invalid arguments for ${tool.name}: ${problems.join("; ")}`));
  }
  return {
    type: "tool-call",
    tool: tool.name,
    arguments: parsed.data as Record<string, unknown>,
    ...(typeof call.id === "string" && call.id ? { callId: call.id } : {}),
  };
}

function clip(text: string): string {
  return text.length > MAX_REASON_LENGTH ? `${text.slice(0, MAX_REASON_LENGTH - 3)}...` : text;
}

const ANSWER_LINE = /(?:^|\n)[ \t>#*_-]*(?:final[ \t]+)?answer[ \t]*\**[ \t]*[:：][ \t]*\**/gi;

/** The answer a chat model's final message gives (rules in `parseChatAction`). */
export function extractChatAnswer(text: string): string {
  let visible = dropBlocks(text, "<think>", "</think>");
  // Servers that strip the opening `<think>` leave its close: the answer follows the last one.
  const thoughtEnd = visible.lastIndexOf("</think>");
  if (thoughtEnd >= 0) visible = visible.slice(thoughtEnd + "</think>".length);
  const boxed = lastBoxed(visible);
  if (boxed !== null) return boxed.trim();
  const tagged = firstBlock(visible, "<answer>", "</answer>");
  if (tagged !== null) return tagged.trim();
  let end = -1;
  for (const match of visible.matchAll(ANSWER_LINE)) end = match.index + match[0].length;
  return (end >= 0 ? visible.slice(end) : visible).trim();
}

// indexOf scans rather than lazy regexes: `<think>` repeated without a close would make a regex
// rescan the rest of the text from every occurrence (quadratic on a long hostile output).

/** `text` without its `open…close` blocks; an unclosed block runs to the end. */
function dropBlocks(text: string, open: string, close: string): string {
  let out = "";
  let from = 0;
  for (;;) {
    const start = text.indexOf(open, from);
    if (start < 0) return out + text.slice(from);
    out += `${text.slice(from, start)} `;
    const end = text.indexOf(close, start + open.length);
    if (end < 0) return out;
    from = end + close.length;
  }
}

/** Payload of the first complete `open…close` block, or null. */
function firstBlock(text: string, open: string, close: string): string | null {
  const start = text.indexOf(open);
  if (start < 0) return null;
  const end = text.indexOf(close, start + open.length);
  return end < 0 ? null : text.slice(start + open.length, end);
}

/** Content of the last `\boxed{…}` with balanced braces, or null. */
function lastBoxed(text: string): string | null {
  const start = text.lastIndexOf("\\boxed{");
  if (start < 0) return null;
  let depth = 0;
  const from = start + "\\boxed{".length;
  for (let i = from; i < text.length; i++) {
    const char = text[i];
    if (char === "{") depth++;
    else if (char === "}") {
      if (depth === 0) return text.slice(from, i);
      depth--;
    }
  }
  return null;
}
