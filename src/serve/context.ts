/**
 * A stateless chat request turned back into the episode context of a text-protocol policy, so a
 * client that replays the conversation gets the same context the in-process episode loop builds:
 *
 *   user question                     → prompt `<q> question </q>` (canonicalText)
 *   assistant tool call search{query} → turn ` <search> query </search>` (the first call only: the
 *                                       loop runs one tool per turn; text before it is kept)
 *   tool message answering that call  → its observation ` <obs> content </obs>`
 *   assistant plain content           → ` content` when it holds protocol tags (a format error
 *                                       returned as content), else ` <answer> content </answer>`
 *   user message after a turn         → (appended to) that turn's observation
 *
 * Tool-call arguments and observations are put in canonical form too (lower case, punctuation
 * split off) except that decimal numbers stay whole (`2.5`, which `canonicalText` would split),
 * so a scripted policy can still find the number it asked for. What a client cannot send back is
 * lost: token ids are re-encoded from the text (the word-level tokenizer is canonical, so they
 * match) and text the model wrote around a tag is kept only as far as the content carried it.
 * System messages are not part of the text protocol: they reach the policy as `task.systemPrompt`.
 */
import { parseTextAction } from "../env/parse-action.ts";
import {
  canonicalText,
  renderAnswer,
  renderObservation,
  renderPrompt,
  renderToolCall,
} from "../env/protocol.ts";
import type { PolicyContext, Tokenizer, ToolSpec } from "../types/policy.ts";
import type { Task } from "../types/task.ts";
import type { Turn } from "../types/trajectory.ts";
import { type ChatRequest, type ChatTool, contentText, RequestError } from "./request.ts";

const TAG = /<\/?[A-Za-z_][\w.-]*>/;

export interface ChatEpisode {
  /** Canonical question. */
  question: string;
  systemPrompt?: string;
  /** Past turns in protocol text, with their observation content (canonical, unwrapped). */
  turns: { text: string; observation?: string }[];
}

/** Canonical protocol text that keeps decimal numbers whole. */
export function canonicalContent(text: string): string {
  return text
    .toLowerCase()
    .replace(/[,:;?!()]|\.(?!\d)|(?<!\d)\./g, " $& ")
    .split(/\s+/)
    .filter(Boolean)
    .join(" ");
}

/**
 * The argument a text-protocol tag carries: the only property, else the first required string
 * property, else the first string property, else the first property (`input` when none).
 */
export function inferTextArgument(parameters: Record<string, unknown> | undefined): string {
  const properties = parameters?.properties;
  if (typeof properties !== "object" || properties === null) return "input";
  const entries = Object.entries(properties as Record<string, { type?: unknown }>);
  if (entries.length === 0) return "input";
  if (entries.length === 1) return entries[0][0];
  const isString = ([, schema]: [string, { type?: unknown }]) => schema?.type === "string";
  const required = Array.isArray(parameters?.required) ? (parameters.required as unknown[]) : [];
  const requiredString = entries.find((entry) => required.includes(entry[0]) && isString(entry));
  return (requiredString ?? entries.find(isString) ?? entries[0])[0];
}

export function toolSpecsFromRequest(tools: readonly ChatTool[] | null | undefined): ToolSpec[] {
  return (tools ?? []).map((tool) => {
    const parameters = tool.function.parameters ?? { type: "object", properties: {} };
    return {
      name: tool.function.name,
      description: tool.function.description ?? "",
      parameters,
      textArgument: inferTextArgument(parameters),
    };
  });
}

/** Rebuilds the episode of a request; throws a 400 `RequestError` for a conversation it cannot map. */
export function episodeFromMessages(
  messages: ChatRequest["messages"],
  tools: readonly ToolSpec[],
): ChatEpisode {
  const question: string[] = [];
  const system: string[] = [];
  const turns: ChatEpisode["turns"] = [];
  /** Call ids of the current turn: the first (its observation) and the rest (ignored). */
  let pending: { first: string; others: Set<string>; messageIndex: number; answered: boolean } | null = null;

  const checkAnswered = () => {
    if (pending && !pending.answered) {
      throw new RequestError(
        400,
        `messages[${pending.messageIndex}].tool_calls: tool call "${pending.first}" has no tool message answering it`,
        `messages[${pending.messageIndex}].tool_calls`,
      );
    }
  };
  const observe = (text: string) => {
    const turn = turns[turns.length - 1];
    const canonical = canonicalContent(text);
    turn.observation = turn.observation === undefined ? canonical : `${turn.observation} ${canonical}`.trim();
  };

  messages.forEach((message, i) => {
    switch (message.role) {
      case "system":
      case "developer":
        system.push(contentText(message.content));
        return;
      case "user":
        if (turns.length === 0) question.push(contentText(message.content));
        else observe(contentText(message.content));
        return;
      case "assistant": {
        if (question.length === 0) {
          throw new RequestError(
            400,
            `messages[${i}]: the question (a user message) must come before any assistant message`,
            `messages[${i}]`,
          );
        }
        checkAnswered();
        const text = contentText(message.content).trim();
        const calls = message.tool_calls ?? [];
        if (calls.length === 0) {
          const canonical = canonicalContent(text);
          turns.push({ text: TAG.test(canonical) ? ` ${canonical}` : renderAnswer(canonical) });
          pending = null;
          return;
        }
        const [first, ...others] = calls;
        const spec = tools.find((candidate) => candidate.name === first.function.name);
        const payload = canonicalContent(toolPayload(first.function.arguments, spec?.textArgument));
        const prefix = text ? ` ${canonicalContent(text)}` : "";
        turns.push({ text: prefix + renderToolCall(first.function.name, payload) });
        pending = {
          first: first.id,
          others: new Set(others.map((call) => call.id)),
          messageIndex: i,
          answered: false,
        };
        return;
      }
      case "tool": {
        if (pending?.others.has(message.tool_call_id)) return;
        if (!pending || pending.first !== message.tool_call_id || pending.answered) {
          throw new RequestError(
            400,
            `messages[${i}].tool_call_id: "${message.tool_call_id}" does not answer a tool call of the preceding assistant message`,
            `messages[${i}].tool_call_id`,
          );
        }
        pending.answered = true;
        observe(contentText(message.content));
        return;
      }
    }
  });
  checkAnswered();
  if (question.length === 0) {
    throw new RequestError(400, "messages: no user message with the question", "messages");
  }
  const last = messages[messages.length - 1];
  if (last.role === "assistant") {
    throw new RequestError(
      400,
      `messages[${messages.length - 1}]: the last message must come from the user or a tool (the server writes the next assistant turn)`,
      `messages[${messages.length - 1}]`,
    );
  }
  const systemPrompt = system.join("\n").trim();
  return {
    question: canonicalText(question.join(" ")),
    ...(systemPrompt ? { systemPrompt } : {}),
    turns,
  };
}

/** The text argument of a call: the named property when present, else the only string, else the raw text. */
function toolPayload(rawArguments: string, textArgument: string | undefined): string {
  let args: unknown;
  try {
    args = JSON.parse(rawArguments);
  } catch {
    return rawArguments;
  }
  if (typeof args !== "object" || args === null || Array.isArray(args)) return rawArguments;
  const record = args as Record<string, unknown>;
  const value =
    textArgument !== undefined && textArgument in record
      ? record[textArgument]
      : Object.values(record).find((candidate) => typeof candidate === "string");
  if (value === undefined) return rawArguments;
  return typeof value === "string" ? value : JSON.stringify(value);
}

export interface ContextOptions {
  task: Task;
  /** Tools offered to the policy for its next turn. */
  tools: readonly ToolSpec[];
  /** Tools the past turns are parsed against (default `tools`; differs under `tool_choice: "none"`). */
  historyTools?: readonly ToolSpec[];
  tokenizer?: Tokenizer;
  /** One context per seed (the `n` samples). */
  seeds: readonly number[];
  maxTokens: number;
  /** Episode ids are `<prefix>#<sample index>`. */
  episodeIdPrefix: string;
}

/** The policy contexts of the `n` samples of one request (one per seed, the same history). */
export function buildContexts(episode: ChatEpisode, options: ContextOptions): PolicyContext[] {
  const encode = (text: string) => options.tokenizer?.encode(text) ?? [];
  const promptText = renderPrompt(episode.question);
  const prompt = { text: promptText, tokenIds: encode(promptText) };
  const turns: Turn[] = episode.turns.map((turn, index) => {
    const observation = turn.observation === undefined ? undefined : renderObservation(turn.observation);
    return {
      index,
      text: turn.text,
      tokenIds: encode(turn.text),
      logprobs: null,
      action: parseTextAction(turn.text, options.historyTools ?? options.tools),
      ...(observation === undefined
        ? {}
        : { observation: { text: observation, tokenIds: encode(observation) } }),
      rewards: {},
    };
  });
  return options.seeds.map((seed, i) => ({
    episodeId: `${options.episodeIdPrefix}#${i}`,
    task: options.task,
    prompt,
    turns,
    tools: options.tools,
    seed,
    maxTokens: options.maxTokens,
  }));
}
