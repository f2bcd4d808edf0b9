/**
 * Trajectories as OpenAI chat-format records (one JSONL line each): the format of OpenAI's
 * fine-tuning API and of most SFT tooling (TRL, axolotl, LLaMA-Factory).
 *
 * Export, turn by turn:
 * - the prompt: an optional `system` message (the task's system prompt, passed in options: the
 *   trajectory does not carry it), then a `user` message with the question (`<q> … </q>` stripped);
 * - tool-call turn: an `assistant` message with `tool_calls: [{ id, type: "function", function:
 *   { name, arguments: JSON } }]` (id: the call's own id, else `call_<turn index>`), whose content
 *   is the turn's text without the tagged call (`null` when nothing else was written), followed by
 *   a `tool` message with the observation (without `<obs>` tags);
 * - answer turn: an `assistant` message whose content is the answer;
 * - format-error turn: an `assistant` message with the raw text, followed by the error
 *   observation as a `user` message (what the environment told the policy), when there was one.
 *
 * Lossless: by default each record also carries `agentrl: { version, trajectory, textArguments }`,
 * the full trajectory (token ids, log-probs, tool statuses, rewards, ids). On import that record is
 * authoritative and reproduces the trajectory exactly; the messages are checked against it, so an
 * edited line is not silently replaced by its old record. OpenAI's fine-tuning API may reject
 * unknown top-level keys: export with `{ lossless: false }` for it.
 *
 * A plain line (no `agentrl` key, e.g. from another tool) imports as a valid, unscored trajectory:
 * no token ids, null log-probs, tool results `ok`, empty rewards, `correct: false`, outcome reward
 * null. An assistant message with several tool calls becomes one turn per call (the first keeps the
 * text); the last assistant message without tool calls is the answer, an earlier one is a
 * format-error turn whose observation (and error) is the user message after it. Tool arguments that
 * are not a JSON object are a format error, not an exception.
 */
import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { z } from "zod";
import { OBS_CLOSE, OBS_OPEN, QUESTION_CLOSE, QUESTION_OPEN, renderPrompt } from "../env/protocol.ts";
import type { ToolSpec } from "../types/policy.ts";
import type { Action, EndReason, Trajectory, Turn } from "../types/trajectory.ts";
import { assertTrajectory } from "./trajectory-schema.ts";

/** Version of the `agentrl` record inside a chat line. */
export const CHAT_RECORD_VERSION = 1;

export interface OpenAiToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export type OpenAiMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: OpenAiToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

export interface OpenAiFunctionTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface AgentrlChatRecord {
  version: number;
  trajectory: Trajectory;
  /** Tool name → the argument the tagged protocol carries (`ToolSpec.textArgument`). */
  textArguments: Record<string, string>;
}

export interface ChatLine {
  messages: OpenAiMessage[];
  tools: OpenAiFunctionTool[];
  agentrl?: AgentrlChatRecord;
}

export interface TrajectoryToChatOptions {
  /** System message to open the conversation with (the task's `systemPrompt`). */
  systemPrompt?: string;
  /** Carry the full trajectory under `agentrl` (default true). */
  lossless?: boolean;
}

// ---- export -------------------------------------------------------------------------------

/** The question inside `<q> … </q>`, or the whole text when it has no tags. */
export function questionOfPrompt(promptText: string): string {
  const open = promptText.indexOf(QUESTION_OPEN);
  const close = promptText.lastIndexOf(QUESTION_CLOSE);
  if (open < 0 || close < open) return promptText.trim();
  return promptText.slice(open + QUESTION_OPEN.length, close).trim();
}

/** The observation without its `<obs> … </obs>` wrapper (chat observations have none). */
export function stripObservation(text: string): string {
  const trimmed = text.trim();
  if (trimmed.startsWith(OBS_OPEN) && trimmed.endsWith(OBS_CLOSE)) {
    return trimmed.slice(OBS_OPEN.length, trimmed.length - OBS_CLOSE.length).trim();
  }
  return trimmed;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** What the assistant wrote beside a tool call: its text without the tagged call(s), or null. */
function toolCallContent(text: string, tool: string): string | null {
  const tag = escapeRegExp(tool);
  const rest = text.replace(new RegExp(`<${tag}>[\\s\\S]*?</${tag}>`, "g"), "").trim();
  return rest === "" ? null : rest;
}

export function toolSpecsToOpenAi(tools: readonly ToolSpec[]): OpenAiFunctionTool[] {
  return tools.map((tool) => ({
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
}

/** The chat messages a trajectory stands for (see the file comment for the mapping). */
export function trajectoryMessages(trajectory: Trajectory, systemPrompt?: string): OpenAiMessage[] {
  const messages: OpenAiMessage[] = [];
  if (systemPrompt !== undefined) messages.push({ role: "system", content: systemPrompt });
  messages.push({ role: "user", content: questionOfPrompt(trajectory.prompt.text) });
  for (const turn of trajectory.turns) {
    const action = turn.action;
    if (action.type === "tool-call") {
      const id = action.callId ?? `call_${turn.index}`;
      messages.push({
        role: "assistant",
        content: toolCallContent(turn.text, action.tool),
        tool_calls: [
          {
            id,
            type: "function",
            function: { name: action.tool, arguments: JSON.stringify(action.arguments) },
          },
        ],
      });
      const observed = turn.observation
        ? stripObservation(turn.observation.text)
        : (turn.toolResult?.content ?? "");
      messages.push({ role: "tool", tool_call_id: id, content: observed });
    } else if (action.type === "answer") {
      messages.push({ role: "assistant", content: action.answer });
    } else {
      messages.push({ role: "assistant", content: turn.text });
      if (turn.observation) messages.push({ role: "user", content: stripObservation(turn.observation.text) });
    }
  }
  return messages;
}

export function trajectoryToChat(
  trajectory: Trajectory,
  tools: readonly ToolSpec[],
  options: TrajectoryToChatOptions = {},
): ChatLine {
  const line: ChatLine = {
    messages: trajectoryMessages(trajectory, options.systemPrompt),
    tools: toolSpecsToOpenAi(tools),
  };
  if (options.lossless ?? true) {
    line.agentrl = {
      version: CHAT_RECORD_VERSION,
      trajectory,
      textArguments: Object.fromEntries(tools.map((tool) => [tool.name, tool.textArgument])),
    };
  }
  return line;
}

// ---- import -------------------------------------------------------------------------------

const textPart = z.looseObject({ type: z.literal("text"), text: z.string() });
const content = z.union([z.string(), z.null(), z.array(textPart)]).optional();
const toolCall = z.looseObject({
  id: z.string(),
  type: z.literal("function").optional(),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});
const message = z.discriminatedUnion("role", [
  z.looseObject({ role: z.literal("system"), content }),
  z.looseObject({ role: z.literal("developer"), content }),
  z.looseObject({ role: z.literal("user"), content }),
  z.looseObject({ role: z.literal("assistant"), content, tool_calls: z.array(toolCall).optional() }),
  z.looseObject({ role: z.literal("tool"), tool_call_id: z.string(), content }),
]);
const functionTool = z.looseObject({
  type: z.literal("function").optional(),
  function: z.looseObject({
    name: z.string(),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
});
const chatLineSchema = z.looseObject({
  messages: z.array(message),
  tools: z.array(functionTool).optional(),
  agentrl: z
    .looseObject({
      version: z.number(),
      trajectory: z.unknown(),
      textArguments: z.record(z.string(), z.string()).optional(),
    })
    .optional(),
});
type ParsedLine = z.infer<typeof chatLineSchema>;
type ParsedMessage = ParsedLine["messages"][number];

function parseChatLine(value: unknown): ParsedLine {
  const result = chatLineSchema.safeParse(value);
  if (!result.success) throw new Error(`not an OpenAI chat record:\n${z.prettifyError(result.error)}`);
  return result.data;
}

function textOf(value: z.infer<typeof content>): string {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : value.map((part) => part.text).join("");
}

/** Defaults for what a plain line does not say. */
export interface ChatToTrajectoryOptions {
  /** Default `openai-<first 16 hex of sha256(messages)>`: re-importing a line gives the same id. */
  id?: string;
  /** Default: the id. */
  taskId?: string;
  /** Default `imported`. */
  family?: string;
  /** Default `imported`. */
  policyId?: string;
  /** Default 0. */
  seed?: number;
}

/** A chat line (parsed JSON) back to a trajectory: exact with an `agentrl` record, else rebuilt. */
export function chatToTrajectory(value: unknown, options: ChatToTrajectoryOptions = {}): Trajectory {
  const line = parseChatLine(value);
  return line.agentrl ? fromRecord(line) : fromMessages(line, options);
}

/** The tool specs a chat line declares (`textArgument` from the record, else the first required argument). */
export function chatLineTools(value: unknown): ToolSpec[] {
  const line = parseChatLine(value);
  return (line.tools ?? []).map(({ function: fn }) => {
    const parameters = fn.parameters ?? { type: "object", properties: {} };
    const required = Array.isArray(parameters.required) ? parameters.required.map(String) : [];
    const properties = Object.keys((parameters.properties as Record<string, unknown> | undefined) ?? {});
    const textArgument = line.agentrl?.textArguments?.[fn.name] ?? required[0] ?? properties[0] ?? "input";
    return { name: fn.name, description: fn.description ?? "", parameters, textArgument };
  });
}

function fromRecord(line: ParsedLine): Trajectory {
  const record = line.agentrl!;
  if (record.version > CHAT_RECORD_VERSION) {
    throw new Error(
      `agentrl record version ${record.version} is newer than ${CHAT_RECORD_VERSION}: upgrade agentrl`,
    );
  }
  const trajectory = assertTrajectory(record.trajectory, "agentrl.trajectory");
  const first = line.messages[0];
  const systemPrompt =
    first?.role === "system" || first?.role === "developer" ? textOf(first.content) : undefined;
  if (!isDeepStrictEqual(normaliseMessages(line.messages), trajectoryMessages(trajectory, systemPrompt))) {
    throw new Error(
      "messages do not match the agentrl record (was the line edited?); drop the agentrl key to import the messages as they are",
    );
  }
  return trajectory;
}

/** Messages in the exact shape `trajectoryMessages` writes, for comparison. */
function normaliseMessages(messages: readonly ParsedMessage[]): OpenAiMessage[] {
  return messages.map((item): OpenAiMessage => {
    if (item.role === "assistant") {
      const text = item.content === null || item.content === undefined ? null : textOf(item.content);
      if (!item.tool_calls) return { role: "assistant", content: text };
      const calls = item.tool_calls.map(
        (call): OpenAiToolCall => ({
          id: call.id,
          type: "function",
          function: { name: call.function.name, arguments: call.function.arguments },
        }),
      );
      return { role: "assistant", content: text, tool_calls: calls };
    }
    if (item.role === "tool")
      return { role: "tool", tool_call_id: item.tool_call_id, content: textOf(item.content) };
    if (item.role === "developer") return { role: "system", content: textOf(item.content) };
    return { role: item.role, content: textOf(item.content) };
  });
}

function parseArguments(tool: string, text: string, callId: string): Action {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return { type: "format-error", error: `arguments of ${tool} are not JSON: ${(error as Error).message}` };
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    return { type: "format-error", error: `arguments of ${tool} are not a JSON object` };
  }
  return { type: "tool-call", tool, arguments: parsed as Record<string, unknown>, callId };
}

function fromMessages(line: ParsedLine, options: ChatToTrajectoryOptions): Trajectory {
  const messages = line.messages;
  let position = 0;
  let systemPrompt: string | undefined;
  while (messages[position]?.role === "system" || messages[position]?.role === "developer") {
    systemPrompt = textOf(messages[position].content);
    position++;
  }
  const question = messages[position];
  if (question?.role !== "user") throw new Error("a chat record needs a user message (the question) first");
  position++;

  const turns: Turn[] = [];
  const turnOfCall = new Map<string, Turn>();
  const newTurn = (text: string, action: Action): Turn => {
    const turn: Turn = { index: turns.length, text, tokenIds: [], logprobs: null, action, rewards: {} };
    turns.push(turn);
    return turn;
  };
  for (; position < messages.length; position++) {
    const item = messages[position];
    if (item.role === "assistant" && item.tool_calls && item.tool_calls.length > 0) {
      item.tool_calls.forEach((call, k) => {
        const action = parseArguments(call.function.name, call.function.arguments, call.id);
        turnOfCall.set(call.id, newTurn(k === 0 ? textOf(item.content) : "", action));
      });
    } else if (item.role === "assistant") {
      const text = textOf(item.content);
      if (position === messages.length - 1) {
        newTurn(text, { type: "answer", answer: text });
      } else if (messages[position + 1].role === "user") {
        const feedback = textOf(messages[++position].content);
        newTurn(text, { type: "format-error", error: feedback }).observation = {
          text: feedback,
          tokenIds: [],
        };
      } else {
        newTurn(text, { type: "format-error", error: "neither a tool call nor the final answer" });
      }
    } else if (item.role === "tool") {
      const turn = turnOfCall.get(item.tool_call_id);
      if (!turn)
        throw new Error(`message ${position}: tool result for unknown tool_call_id "${item.tool_call_id}"`);
      const observed = textOf(item.content);
      if (turn.action.type === "tool-call")
        turn.toolResult = { status: "ok", content: observed, injected: false };
      turn.observation = { text: observed, tokenIds: [] };
    } else {
      throw new Error(`message ${position}: unexpected ${item.role} message (a trajectory has one question)`);
    }
  }

  const last = turns.at(-1);
  const endReason: EndReason =
    last?.action.type === "answer"
      ? "answer"
      : last?.action.type === "format-error"
        ? "format-error"
        : "max-turns";
  const id =
    options.id ??
    `openai-${createHash("sha256").update(JSON.stringify(messages)).digest("hex").slice(0, 16)}`;
  return {
    id,
    taskId: options.taskId ?? id,
    family: options.family ?? "imported",
    policyId: options.policyId ?? "imported",
    seed: options.seed ?? 0,
    prompt: { text: renderPrompt(textOf(question.content)), tokenIds: [] },
    turns,
    finalAnswer: last?.action.type === "answer" ? last.action.answer : null,
    correct: false,
    outcomeReward: null,
    endReason,
    info: systemPrompt === undefined ? { source: "openai-chat" } : { source: "openai-chat", systemPrompt },
  };
}
