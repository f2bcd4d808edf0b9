/**
 * The calls of one episode turned into one trajectory of the contract (src/types/trajectory.ts).
 *
 *   call i:   prompt ids P_i → completion ids C_i (choice the next call continues, else choice 0)
 *   turn i:   text, action (its tool call, else the content as the answer), C_i with its log-probs;
 *             a completion with several tool calls gives one turn per call, the first holding the
 *             text and all of C_i, the others empty (the same split as imported chat lines)
 *   obs i:    the messages the next call adds after the assistant's (tool results, user text; each
 *             call's own result is its turn's `toolResult`), on the completion's last turn, with
 *             ids P_{i+1}[|P_i| + |C_i| …] when P_{i+1} starts with exactly P_i ++ C_i
 *
 * When the next prompt does not extend the previous prompt and completion exactly (the agent edited
 * its history, a chat template re-rendered a turn differently) the calls are split into segments,
 * never papered over: each break is counted (`gateway/prefix_breaks`), the stored trajectory keeps
 * every turn's text but token ids only for its first segment (so `flattenTrajectory` is always an
 * exact context), and each later segment is a complete trajectory of its own in
 * `info.gateway.segments` (read them with `trajectorySegments`). Calls without token ids (an
 * upstream that does not return them) give text-only turns, counted as `missingTokenIds` and, when
 * the call had no ids at all, as `textOnlyCalls` (the server named in `server`). A turn's reasoning
 * text, returned apart by the server, is kept on the turn beside the ids that cover it.
 */
import { comparePrefix } from "../policy/hf/prefix-break.ts";
import type { EndReason, Trajectory, Turn } from "../types/trajectory.ts";
import type { GatewayCall, PostedReward, RecordedChoice } from "./types.ts";

export interface BuildOptions {
  episodeId: string;
  taskId: string;
  family: string;
  policyId: string;
  seed: number;
  /** What the agent returned (null: nothing). */
  finalAnswer: string | null;
  /** Why the episode failed (the agent threw or timed out, the upstream failed). */
  error?: string;
  reward?: PostedReward;
  /** The upstream's server, recorded with the episode (and named when its turns are text-only). */
  server?: { kind: string; version: string | null; tokenIds: boolean };
}

export interface GatewayInfo {
  episodeId: string;
  calls: number;
  prefixBreaks: number;
  /**
   * Where each break was (comparePrefix in src/policy/hf/prefix-break.ts): an earlier turn of the
   * prompt re-rendered (a template dropping `<think>`), the sampled ids (the turn came back as
   * other ids), or a next prompt cut short. Absent in episodes recorded before it was counted.
   */
  prefixBreakSites?: { prompt: number; sampled: number; short: number };
  /** Tokens of context from each break on, summed: prefilled again, and not trained as seen. */
  prefixLostTokens?: number;
  missingTokenIds: number;
  /**
   * Calls answered with no ids at all by a server that has none (Ollama, a hosted API, a policy
   * without a tokenizer): their turns are text-only, and training refuses them (text-only.ts).
   */
  textOnlyCalls: number;
  /** The upstream's server kind and version, when the gateway knew them. */
  server?: { kind: string; version: string | null };
  /** Calls that failed (upstream unreachable or erroring, malformed answers). */
  failedCalls: number;
  /** Segments after the first, each a trajectory with exact token ids. */
  segments: Trajectory[];
}

export interface BuiltEpisode {
  /** `correct` false and `outcomeReward` from a posted reward or null: the caller verifies. */
  trajectory: Trajectory;
  prefixBreaks: number;
}

interface Message {
  role?: unknown;
  content?: unknown;
  tool_call_id?: unknown;
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content))
    return content
      .map((part) => (typeof part?.text === "string" ? part.text : ""))
      .filter(Boolean)
      .join("\n");
  return "";
}

function messagesOf(call: GatewayCall): Message[] {
  const messages = call.request.messages;
  return Array.isArray(messages) ? (messages as Message[]) : [];
}

/**
 * The prompt's text: the user messages of the call (the question, as exports expect it); the
 * whole request, system messages included, stays in the recorded call.
 */
function renderMessages(messages: readonly Message[]): string {
  return messages
    .filter((message) => message.role === "user")
    .map((message) => contentText(message.content))
    .join("\n");
}

function startsWith(ids: readonly number[], prefix: readonly number[]): boolean {
  if (prefix.length > ids.length) return false;
  for (let i = 0; i < prefix.length; i++) if (ids[i] !== prefix[i]) return false;
  return true;
}

/** The choice the next call continues: the one whose ids its prompt extends, else the first. */
function chosen(call: GatewayCall, next: GatewayCall | undefined): RecordedChoice {
  const { choices } = call;
  if (choices.length > 1 && next?.promptTokenIds && call.promptTokenIds) {
    const prompt = call.promptTokenIds;
    const found = choices.find(
      (choice) => choice.tokenIds && startsWith(next.promptTokenIds!, [...prompt, ...choice.tokenIds]),
    );
    if (found) return found;
  }
  return choices[0];
}

function actionOf(call: RecordedChoice["toolCalls"][number]): Turn["action"] {
  let args: unknown;
  try {
    args = JSON.parse(call.arguments);
  } catch {
    args = undefined;
  }
  return typeof args === "object" && args !== null && !Array.isArray(args)
    ? {
        type: "tool-call",
        tool: call.name,
        arguments: args as Record<string, unknown>,
        ...(call.id ? { callId: call.id } : {}),
      }
    : { type: "format-error", error: `tool call ${call.name}: arguments are not a JSON object` };
}

/**
 * The turns of one completion: one per tool call it made (the first holds the message's text and
 * every sampled id; the others are empty, so the token sequence stays exact), or one answer turn.
 * This is how imported chat lines with several tool calls are split too (src/store/openai-chat.ts).
 */
function turnsOf(index: number, choice: RecordedChoice): Turn[] {
  const text = choice.content ?? "";
  const first = {
    index,
    text,
    tokenIds: choice.tokenIds ? [...choice.tokenIds] : [],
    logprobs: choice.tokenIds && choice.logprobs ? [...choice.logprobs] : null,
    ...(choice.reasoning ? { reasoning: choice.reasoning } : {}),
    rewards: {},
  };
  if (choice.toolCalls.length === 0)
    return [{ ...first, action: { type: "answer", answer: (choice.content ?? "").trim() } }];
  return choice.toolCalls.map((call, i) =>
    i === 0
      ? { ...first, action: actionOf(call) }
      : { index: index + i, text: "", tokenIds: [], logprobs: null, action: actionOf(call), rewards: {} },
  );
}

/**
 * What the next call adds after the last assistant message (tool results, user text): the tool
 * result of each of `group`'s calls (by call id), and the text appended after the group, less the
 * results already given to the group's earlier calls (each call's result is its own turn's).
 */
function observationOf(
  group: readonly Turn[],
  next: GatewayCall,
): { text: string; toolContents: (string | null)[] } {
  const messages = messagesOf(next);
  let last = -1;
  messages.forEach((message, i) => {
    if (message.role === "assistant") last = i;
  });
  const added = messages.slice(last + 1);
  const used = new Set<Message>();
  /** Results given to the group's calls before its last. */
  const earlier = new Set<Message>();
  const toolContents = group.map((turn, g) => {
    if (turn.action.type !== "tool-call") return null;
    const callId = turn.action.callId;
    const tool = added.find(
      (message) => message.role === "tool" && message.tool_call_id === callId && !used.has(message),
    );
    if (!tool) return null;
    used.add(tool);
    if (g < group.length - 1) earlier.add(tool);
    return contentText(tool.content);
  });
  const shown = added.filter((message) => !earlier.has(message));
  return { text: shown.map((message) => contentText(message.content)).join("\n"), toolContents };
}

interface Segment {
  promptText: string;
  promptIds: number[];
  turns: Turn[];
}

export function buildTrajectory(calls: readonly GatewayCall[], options: BuildOptions): BuiltEpisode {
  const ok = [...calls]
    .filter((call) => !call.error && call.choices.length > 0)
    .sort((a, b) => a.seq - b.seq);
  const segments: Segment[] = [];
  const turns: Turn[] = [];
  let prefixBreaks = 0;
  const breakSites = { prompt: 0, sampled: 0, short: 0 };
  let lostTokens = 0;
  let missingTokenIds = 0;
  let textOnlyCalls = 0;
  /** Index of each successful call's first turn (posted turn rewards are per call). */
  const callTurns: number[] = [];
  ok.forEach((call, i) => {
    const next = ok[i + 1];
    const choice = chosen(call, next);
    if (!call.promptTokenIds || !choice.tokenIds) missingTokenIds++;
    if (!call.promptTokenIds && call.choices.every((each) => !each.tokenIds)) textOnlyCalls++;
    if (segments.length === 0) {
      segments.push({
        promptText: renderMessages(messagesOf(call)),
        promptIds: call.promptTokenIds ? [...call.promptTokenIds] : [],
        turns: [],
      });
    }
    const segment = segments[segments.length - 1];
    callTurns.push(turns.length);
    const group = turnsOf(turns.length, choice);
    const locals = group.map((turn, g) => ({ ...turn, index: segment.turns.length + g }));
    turns.push(...group);
    segment.turns.push(...locals);
    if (!next) return;
    const observation = observationOf(group, next);
    group.forEach((turn, g) => {
      if (turn.action.type !== "tool-call") return;
      const content = observation.toolContents[g];
      const toolResult = {
        status: content === null ? ("empty" as const) : ("ok" as const),
        content: content ?? "",
        injected: false,
      };
      turn.toolResult = toolResult;
      locals[g].toolResult = toolResult;
    });
    // The context appended after the completion belongs to the group's last turn.
    const turn = group[group.length - 1];
    const local = locals[locals.length - 1];
    const check =
      call.promptTokenIds && choice.tokenIds && next.promptTokenIds
        ? comparePrefix(call.promptTokenIds, choice.tokenIds, next.promptTokenIds)
        : null;
    if (check?.extends) {
      const length = call.promptTokenIds!.length + choice.tokenIds!.length;
      const observed = { text: observation.text, tokenIds: next.promptTokenIds!.slice(length) };
      turn.observation = observed;
      local.observation = observed;
      return;
    }
    turn.observation = { text: observation.text, tokenIds: [] };
    local.observation = { text: observation.text, tokenIds: [] };
    if (check?.site) {
      prefixBreaks++;
      breakSites[check.site]++;
      lostTokens += check.lostTokens;
    }
    segments.push({
      promptText: renderMessages(messagesOf(next)),
      promptIds: next.promptTokenIds ? [...next.promptTokenIds] : [],
      turns: [],
    });
  });

  for (const [index, value] of Object.entries(options.reward?.turnRewards ?? {})) {
    const turn = turns[callTurns[Number(index)] ?? -1];
    if (turn) turn.rewards.posted = value;
  }
  const lastChoice = ok.length > 0 ? chosen(ok[ok.length - 1], undefined) : null;
  const endReason: EndReason = options.error
    ? "policy-error"
    : options.finalAnswer !== null
      ? "answer"
      : lastChoice?.finishReason === "length"
        ? "max-tokens"
        : "format-error";
  const outcomeReward = options.reward?.reward ?? null;
  const base = {
    taskId: options.taskId,
    family: options.family,
    policyId: options.policyId,
    seed: options.seed,
    finalAnswer: options.finalAnswer,
    correct: false,
    outcomeReward,
    endReason,
  };
  // The stored trajectory: every turn's text; token ids of the first segment only (exact context).
  const firstLength = segments[0]?.turns.length ?? 0;
  const mainTurns = turns.map((turn, i) =>
    i < firstLength
      ? turn
      : {
          ...turn,
          tokenIds: [],
          logprobs: null,
          ...(turn.observation ? { observation: { text: turn.observation.text, tokenIds: [] } } : {}),
        },
  );
  const later: Trajectory[] = segments.slice(1).map((segment, s) => ({
    id: `${options.episodeId}/segment-${s + 1}`,
    ...base,
    prompt: { text: segment.promptText, tokenIds: segment.promptIds },
    turns: segment.turns,
  }));
  const info: GatewayInfo = {
    episodeId: options.episodeId,
    calls: calls.length,
    prefixBreaks,
    prefixBreakSites: breakSites,
    prefixLostTokens: lostTokens,
    missingTokenIds,
    textOnlyCalls,
    ...(options.server ? { server: { kind: options.server.kind, version: options.server.version } } : {}),
    failedCalls: calls.filter((call) => call.error !== undefined).length,
    segments: later,
  };
  // An episode that ended in error right after an upstream call broke is the infrastructure's
  // failure (infra, never scored); one whose agent went on after it is the agent's episode.
  const lastCall = [...calls].sort((a, b) => a.seq - b.seq).at(-1);
  const failure = endReason === "policy-error" && lastCall?.failure ? lastCall.failure : undefined;
  const trajectory: Trajectory = {
    id: options.episodeId,
    ...base,
    ...(failure ? { failure } : {}),
    prompt: { text: segments[0]?.promptText ?? "", tokenIds: segments[0]?.promptIds ?? [] },
    turns: mainTurns,
    info: { gateway: info, ...(options.error ? { error: options.error } : {}) },
  };
  return { trajectory, prefixBreaks };
}

/**
 * The exact token-level pieces of a gateway trajectory: itself (first segment) then each later
 * segment, with its outcome fields copied from the episode (they may have been set after building).
 */
export function trajectorySegments(trajectory: Trajectory): Trajectory[] {
  const info = (trajectory.info?.gateway ?? null) as GatewayInfo | null;
  const first: Trajectory = {
    ...trajectory,
    turns: trajectory.turns.slice(0, trajectory.turns.length - sumTurns(info?.segments ?? [])),
  };
  const { correct, outcomeReward, finalAnswer, endReason } = trajectory;
  return [
    first,
    ...(info?.segments ?? []).map((segment) => ({
      ...segment,
      correct,
      outcomeReward,
      finalAnswer,
      endReason,
    })),
  ];
}

function sumTurns(segments: readonly Trajectory[]): number {
  return segments.reduce((sum, segment) => sum + segment.turns.length, 0);
}
