/**
 * The contract every server double is held to through the gateway: plain, streamed, tools (both
 * ways), multi-turn prefix exactness, and errors (HTTP 5xx, a context-length 400 in the server's
 * own error shape, a mid-stream failure). Each case is run as an agent would (HTTP to the
 * gateway's episode URL) and judged against the double's truth (the ids its model was fed and
 * sampled):
 *
 *   exact          the call is recorded with prompt and completion ids equal to the truth
 *   text-only      recorded without ids, and the server is a text-only kind (labelled)
 *   refused:<code> recorded as an infra failure that says the ids are missing or short
 *   infra:<code> / policy:<code>   how an error case was classified
 *   n/a (asked unstreamed)         a mid-stream failure cannot happen: the gateway asked unstreamed
 *
 * Anything else is `wrong: …`, which no table may hold.
 */
import { statusFailure } from "../../verl/episode-failure.ts";
import { resolveUpstream } from "../resolve-upstream.ts";
import { startGateway } from "../server.ts";
import type { GatewayCall } from "../types.ts";
import type { Upstream } from "../upstream.ts";
import { DOUBLE_WINDOW, type ServerDouble, startServerDouble } from "./testing-double.ts";
import type { DoubleKind } from "./testing-kinds.ts";

export const CONTRACT_CASES = [
  "plain",
  "streamed",
  "tools",
  "tools streamed",
  "multi-turn",
  "HTTP 5xx",
  "context-length 400",
  "mid-stream error",
] as const;
export type ContractCase = (typeof CONTRACT_CASES)[number];

export interface ContractResult {
  kind: DoubleKind;
  /** The model name the double serves. */
  model: string;
  server: string;
  outcomes: Record<ContractCase, string>;
  /** Ids or log-probs reached an agent that did not ask for them. */
  leaks: string[];
}

/** The one tool of the contract's calls (and of the server-kind tests). */
export const TOOLS = [
  {
    type: "function",
    function: {
      name: "search",
      description: "search the documents",
      parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
    },
  },
];
export const QUESTION = [{ role: "user", content: "what is the population of zenda ?" }];
/** A seed at which base-strong calls the tool on this question (checked by the tools cases). */
const SEED = 3;

type Json = Record<string, unknown>;

export async function runContract(
  kind: DoubleKind,
  inner: Upstream,
  options: { model?: string } = {},
): Promise<ContractResult> {
  const double = await startServerDouble(kind, inner, options);
  const calls: GatewayCall[] = [];
  const upstream = await resolveUpstream(`openai:${double.url}#${double.model}`);
  const gateway = await startGateway({ upstream, log: () => {}, onCall: (call) => calls.push(call) });
  const leaks: string[] = [];
  let episode = 0;
  const post = async (body: Json, headers: Record<string, string> = {}) => {
    const id = `e${++episode}`;
    const response = await fetch(`${gateway.episodeURL(id)}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ model: "m", seed: SEED, ...body }),
    });
    const text = await response.text();
    if (/prompt_token_ids|"token_ids"|response_token_ids|"logprob"/.test(text))
      leaks.push(`${kind} ${body.stream ? "streamed" : "unstreamed"}: ${text.slice(0, 120)}`);
    return { id, status: response.status, text };
  };
  const callOf = (id: string) => calls.filter((call) => call.episodeId === id).at(-1);
  const judge = (id: string, truthIndex: number): string => {
    const call = callOf(id);
    if (!call) return "wrong: no call recorded";
    if (call.failure?.code === "missing-token-ids" || call.failure?.code === "short-token-ids")
      return `refused:${call.failure.code}`;
    if (call.error) return `wrong: ${call.error}`;
    const truth = double.calls[truthIndex];
    const ids = call.choices[0]?.tokenIds ?? null;
    if (call.promptTokenIds === null && ids === null)
      return upstream.tokenIds ? "wrong: no ids from a server that gives them" : "text-only";
    if (same(call.promptTokenIds, truth?.promptIds) && same(ids, truth?.completionIds)) return "exact";
    return `wrong: ids differ (prompt ${call.promptTokenIds?.length ?? "none"}, completion ${ids?.length ?? "none"})`;
  };
  const truthCount = () => double.calls.length;
  const outcomes = {} as Record<ContractCase, string>;
  try {
    const run = async (name: ContractCase, body: Json) => {
      const index = truthCount();
      const { id } = await post(body);
      outcomes[name] = judge(id, index);
      return { id, index };
    };
    await run("plain", { messages: QUESTION });
    await run("streamed", { messages: QUESTION, stream: true });
    const tools = await run("tools", { messages: QUESTION, tools: TOOLS });
    if (double.calls[tools.index]?.toolCalls === 0)
      outcomes.tools = "wrong: the model made no tool call at this seed";
    await run("tools streamed", { messages: QUESTION, tools: TOOLS, stream: true });
    outcomes["multi-turn"] = await multiTurn(post, judge, callOf, double);
    outcomes["HTTP 5xx"] = classify(callOf((await post({ messages: QUESTION, double_fault: "5xx" })).id));
    const long = await post({ messages: QUESTION, max_tokens: DOUBLE_WINDOW + 1 });
    outcomes["context-length 400"] = classify(callOf(long.id));
    const cut = await post({ messages: QUESTION, stream: true, double_fault: "mid-stream" });
    const cutCall = callOf(cut.id);
    // A server whose streamed path has no ids is asked unstreamed: nothing can fail mid-stream.
    outcomes["mid-stream error"] =
      cutCall?.request.stream === false ? "n/a (asked unstreamed)" : classify(cutCall);
  } finally {
    await gateway.close();
    await double.close();
  }
  return { kind, model: double.model, server: upstream.server.kind, outcomes, leaks };
}

/** Two calls of one episode: the second's prompt must extend the first's prompt and completion. */
async function multiTurn(
  post: (body: Json, headers?: Record<string, string>) => Promise<{ id: string }>,
  judge: (id: string, truthIndex: number) => string,
  callOf: (id: string) => GatewayCall | undefined,
  double: ServerDouble,
): Promise<string> {
  const firstIndex = double.calls.length;
  const first = await post({ messages: QUESTION, tools: TOOLS });
  const firstCall = callOf(first.id);
  const verdict = judge(first.id, firstIndex);
  if (verdict !== "exact") return verdict;
  const choice = firstCall!.choices[0];
  const calls = choice.toolCalls.map((call) => ({
    id: call.id,
    type: "function",
    function: { name: call.name, arguments: call.arguments },
  }));
  const messages = [
    ...QUESTION,
    { role: "assistant", content: choice.content, ...(calls.length > 0 ? { tool_calls: calls } : {}) },
    calls.length > 0
      ? { role: "tool", tool_call_id: calls[0].id, content: "zenda : city in ruritania . population 4213 ." }
      : { role: "user", content: "are you sure ?" },
  ];
  const secondIndex = double.calls.length;
  const second = await post({ messages, tools: TOOLS });
  const secondVerdict = judge(second.id, secondIndex);
  if (secondVerdict !== "exact") return secondVerdict;
  const secondCall = callOf(second.id)!;
  const expected = [...firstCall!.promptTokenIds!, ...choice.tokenIds!];
  return same(secondCall.promptTokenIds?.slice(0, expected.length) ?? null, expected)
    ? "exact"
    : "prefix break";
}

function classify(call: GatewayCall | undefined): string {
  if (!call) return "wrong: no call recorded";
  if (call.failure) return `${call.failure.class}:${call.failure.code}`;
  const status = /answered (\d{3})/.exec(call.error ?? "");
  if (status) {
    const failure = statusFailure(Number(status[1]), call.error ?? "");
    return `${failure.class}:${failure.code}`;
  }
  return call.error ? `wrong: unclassified ${call.error}` : "wrong: recorded as a success";
}

function same(a: readonly number[] | null | undefined, b: readonly number[] | null | undefined): boolean {
  return !!a && !!b && a.length === b.length && a.every((value, i) => value === b[i]);
}

/** The docs table of results (docs/real-llms.md holds it; a test checks they agree). */
export function contractTable(results: readonly ContractResult[]): string {
  const header = `| double, model (detected as) | ${CONTRACT_CASES.join(" | ")} |`;
  const rule = `|---|${CONTRACT_CASES.map(() => "---").join("|")}|`;
  const rows = results.map(
    (result) =>
      `| ${result.kind}, ${result.model} (${result.server}) | ${CONTRACT_CASES.map((name) => result.outcomes[name]).join(" | ")} |`,
  );
  return [header, rule, ...rows].join("\n");
}
