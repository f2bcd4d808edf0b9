/**
 * The lab's tagged text protocol (src/env/protocol.ts) as a chat format, so that a lab model
 * exported as a Hugging Face checkpoint (`agentrl export hf`) runs as `--policy hf:<folder>` on
 * exactly the ids the lab's embedded policy feeds it:
 *
 * - `AGENTRL_TEXT_TEMPLATE`, written as the export's `chat_template.jinja`, renders OpenAI
 *   messages into the lab's prompt text: the first user message is the question `<q> … </q>`, an
 *   assistant tool call `<name> argument </name>` (its content, if any, before it), a tool result
 *   or a later user message (the loop's error feedback) `<obs> … </obs>`, an assistant message
 *   without calls its text. System messages and tool specs are not shown: the lab model never saw
 *   them. No generation prompt: the lab's turn follows the last observation directly. A turn
 *   the lab would reject is rendered as the model wrote it, and the result the loop gave back is
 *   replaced by the lab's own feedback, `<obs> error : <reason> </obs>` with the lab's reason
 *   (below): the chat loop's reason for it (an unknown `malformed_tool_call`) is not what the lab
 *   model was trained to read.
 * - `parseAgentrlText` reads a sampled turn as the lab's episode loop does (`parseTextAction`: the
 *   first tag pair decides): a tool tag is one OpenAI tool call whose single argument is the tool's
 *   text argument; an `<answer>` pair is content (the chat loop takes the `<answer>` payload as the
 *   answer, as the lab does); anything the lab would count a format error (no tag, an unknown or
 *   unclosed tag, an empty or overlong payload) is returned as malformed, a format failure here too;
 *   the malformed entry is `{"text": <the turn>, "error": <the lab's reason>}` as JSON, which the
 *   template reads back.
 *
 * Decoding: the exported tokenizer.json decodes every token apart (`1 8 5 0`), where the lab's
 * decoder glues digit runs (`1850`); the parser rejoins them by the lab's rule first, so a payload
 * is the lab's text and a `calc` argument the lab's expression.
 */
import { parseTextAction, type TextProtocolTool } from "../../env/parse-action.ts";
import { type HfToolCall, MALFORMED_CALL } from "./chat-template.ts";

/** The marker `toolCallFormatOfTemplate` detects the format by. */
export const AGENTRL_TEXT_MARKER = "agentrl-text";

export const AGENTRL_TEXT_TEMPLATE = `{#- ${AGENTRL_TEXT_MARKER}: the agentrl lab's tagged text protocol (src/env/protocol.ts in agentrl).
    Question <q> ... </q>; tool call <name> argument </name>; tool result or feedback <obs> ... </obs>;
    answer <answer> ... </answer>. System messages and tool specs are not shown. -#}
{%- set ns = namespace(asked=false, error="") -%}
{%- for message in messages -%}
  {%- if message.role == "user" and not ns.asked -%}
    {{- "<q> " + message.content + " </q>" -}}
    {%- set ns.asked = true -%}
  {%- elif message.role == "tool" and ns.error -%}
    {{- " <obs> error : " + ns.error + " </obs>" -}}
    {%- set ns.error = "" -%}
  {%- elif message.role == "user" or message.role == "tool" -%}
    {{- " <obs> " + message.content + " </obs>" -}}
  {%- elif message.role == "assistant" -%}
    {%- set ns.error = "" -%}
    {%- if message.content -%}{{- " " + message.content -}}{%- endif -%}
    {%- if message.tool_calls -%}
      {%- set call = message.tool_calls[0].function -%}
      {%- if call.arguments is string -%}
        {{- " " + call.arguments -}}
      {%- elif call.name == "${MALFORMED_CALL}" and call.arguments.text is defined -%}
        {{- " " + call.arguments.text -}}
        {%- set ns.error = call.arguments.error -%}
      {%- elif call.name == "${MALFORMED_CALL}" -%}
        {{- " " + (call.arguments | tojson) -}}
      {%- else -%}
        {{- " <" + call.name + ">" -}}
        {%- for key, value in call.arguments.items() -%}{{- " " + (value | string) -}}{%- endfor -%}
        {{- " </" + call.name + ">" -}}
      {%- endif -%}
    {%- endif -%}
  {%- endif -%}
{%- endfor -%}
`;

/** A tool as the parser needs it: its name and the argument its tag's payload is. */
export interface AgentrlTextTool {
  name: string;
  /** The lab's text argument (ToolSpec.textArgument); else the schema's first required property. */
  textArgument?: string;
  parameters?: Record<string, unknown>;
}

function textArgumentOf(tool: AgentrlTextTool): string {
  if (tool.textArgument) return tool.textArgument;
  const required = tool.parameters?.required;
  if (Array.isArray(required) && typeof required[0] === "string") return required[0];
  const properties = tool.parameters?.properties;
  const first = properties && typeof properties === "object" ? Object.keys(properties)[0] : undefined;
  return first ?? "input";
}

/** Text decoded token by token (`1 8 5 0 <obs>`) with digit runs glued as the lab decodes them. */
export function labSpacing(text: string): string {
  return text
    .split(/\s+/)
    .filter(Boolean)
    .reduce((out, word, i, words) => {
      const glue = i > 0 && /^\d$/.test(word) && /^\d$/.test(words[i - 1]!);
      return out === "" ? word : glue ? out + word : `${out} ${word}`;
    }, "");
}

export interface AgentrlTextParse {
  content: string;
  toolCalls: HfToolCall[];
  malformed: string[];
}

/** Parses a sampled turn by the lab's rules (see the header); never throws. */
export function parseAgentrlText(
  raw: string,
  tools: readonly AgentrlTextTool[],
  callId: (index: number) => string,
): AgentrlTextParse {
  const text = labSpacing(raw);
  const textTools: TextProtocolTool[] = tools.map((tool) => ({
    name: tool.name,
    textArgument: textArgumentOf(tool),
  }));
  const action = parseTextAction(text, textTools);
  if (action.type === "answer") return { content: text, toolCalls: [], malformed: [] };
  if (action.type !== "tool-call")
    return { content: "", toolCalls: [], malformed: [JSON.stringify({ text, error: action.error })] };
  const open = text.indexOf(`<${action.tool}>`);
  return {
    content: text.slice(0, open).trim(),
    toolCalls: [
      {
        id: callId(0),
        type: "function",
        function: { name: action.tool, arguments: JSON.stringify(action.arguments) },
      },
    ],
    malformed: [],
  };
}
