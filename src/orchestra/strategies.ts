/**
 * Scripted orchestrators: the fixed strategies of the evaluation and the behaviours of the
 * pretraining corpus. Each reads the task's dependency graph (its plan, like the world's scripted
 * expert reads the task plan) but takes every value from the sub-agents' observations, never from
 * the graph.
 *
 * - `decompose`: one call per sub-task in dependency order (searcher per lookup, calculator per
 *   sum), optionally with independent lookups batched into one `parallel` plan, visible failures
 *   retried, and conflicting results (`a or b`) or every lookup cross-checked by the verifier;
 * - `delegate`: hand the whole question to one sub-agent (the solver) and answer what it says;
 * - `guess`: answer a made-up number without calling anyone.
 *
 * `slip` copies a value wrongly with that probability and `skipSum` answers before the sum (the
 * corpus's sloppy orchestrators). With references (the default) the final answer is `result`, the
 * last call's output (env.ts); without, the value is copied.
 */
import { createRng, mixSeeds, type Rng } from "../core/random.ts";
import { renderAnswer, renderToolCall } from "../env/protocol.ts";
import type { Policy, PolicyContext, PolicyStep } from "../types/policy.ts";
import { ORCHESTRA_MESSAGES, RESULT_ANSWER } from "./env.ts";
import { orchestraMetadata } from "./generate.ts";
import type { OrchestraGraph, OrchestraNode } from "./graph.ts";
import { renderLookup, renderTerm } from "./question.ts";
import { partsOf, referenceOf } from "./references.ts";
import type { SubAgentName } from "./sub-agents.ts";

export interface StrategyOptions {
  id: string;
  mode: "decompose" | "delegate" | "guess";
  /** Batch ready lookups into one `parallel` plan (high degree only). */
  parallel?: boolean;
  /** Cross-check with the verifier: never, conflicting results only, or every one-hop lookup. */
  verify?: "none" | "conflicts" | "all";
  /** Times a visibly failed call is repeated before giving up (default 0). */
  retries?: number;
  /** Send each whole lookup chain to the searcher in one call instead of hop by hop. */
  chains?: boolean;
  /** Probability of copying a value wrongly. */
  slip?: number;
  /**
   * Name sub-tasks by reference (`part 2 step 1`, `part 1 + part 2`, `question`: references.ts)
   * instead of writing them out with names and numbers (default true).
   */
  references?: boolean;
  /** Answer once every lookup is in, without the sum (a sloppy orchestrator). */
  skipSum?: boolean;
}

/** The fixed strategies of the evaluation, by name. */
export const FIXED_STRATEGIES = {
  "delegate-one": { id: "delegate-one", mode: "delegate" },
  "call-every": { id: "call-every", mode: "decompose", verify: "all", parallel: true, retries: 1 },
} as const satisfies Record<string, StrategyOptions>;

interface Call {
  agent: SubAgentName;
  question: string;
  /** Node whose value the call resolves. */
  node: number;
  purpose: "value" | "check";
  attempts: number;
  /** The call reads one hop (the verifier can check it). */
  oneHop: boolean;
}

interface EpisodeState {
  rng: Rng;
  values: Map<number, string>;
  /** Values awaiting a cross-check, by node. */
  unchecked: Map<number, string>;
  inFlight: Call[];
  retry: Call[];
  failed: boolean;
}

const GIVE_UP_ANSWER = "0";

export function createStrategyPolicy(options: StrategyOptions): Policy {
  const states = new Map<string, EpisodeState>();
  const step = (text: string): PolicyStep => ({ text, tokenIds: [], logprobs: null, finishReason: "stop" });
  // With references the system's output is the last call's (`result`); without, the value is copied.
  const finalAnswer = (value: string) => (options.references === false ? value : RESULT_ANSWER);

  const act1 = (context: PolicyContext): PolicyStep => {
    let state = states.get(context.episodeId);
    if (!state) {
      state = {
        rng: createRng(mixSeeds(context.seed, 0x5c)),
        values: new Map(),
        unchecked: new Map(),
        inFlight: [],
        retry: [],
        failed: false,
      };
      states.set(context.episodeId, state);
    }
    const graph = orchestraMetadata(context.task)?.graph;
    if (options.mode === "guess" || !graph) return step(renderAnswer(String(state.rng.range(10, 99999))));
    const last = context.turns.at(-1);
    if (options.mode === "delegate") {
      if (!last)
        return step(
          renderToolCall("solver", options.references === false ? context.task.question : "question"),
        );
      const value = firstValue(last.toolResult?.content ?? "");
      return step(renderAnswer(value === null ? GIVE_UP_ANSWER : finalAnswer(value)));
    }
    if (last) absorb(state, last.toolResult?.content ?? "", options);
    if (state.failed) return step(renderAnswer(GIVE_UP_ANSWER));
    const answerId = graph.nodes.length - 1;
    const done = state.values.get(answerId);
    if (done !== undefined) return step(renderAnswer(finalAnswer(done)));
    // Sloppy: answer with the last lookup once every lookup is in, skipping the sum.
    if (options.skipSum && graph.nodes.every((node) => node.kind === "calc" || state.values.has(node.id))) {
      return step(renderAnswer(finalAnswer(state.values.get(graph.nodes.length - 2) ?? GIVE_UP_ANSWER)));
    }
    const calls = nextCalls(graph, state, options);
    if (calls.length === 0) return step(renderAnswer(GIVE_UP_ANSWER));
    state.inFlight = calls;
    if (calls.length === 1) return step(renderToolCall(calls[0].agent, calls[0].question));
    return step(
      renderToolCall("parallel", calls.map((call) => `${call.agent} : ${call.question}`).join(" ; ")),
    );
  };

  return {
    id: `orchestra:${options.id}`,
    protocol: "text",
    async act(contexts) {
      return contexts.map(act1);
    },
    release(ids) {
      for (const id of ids) states.delete(id);
    },
  };
}

/** The first value of a result (`a or b` → a), or null for a failure. */
function firstValue(content: string): string | null {
  if (content === "" || content.startsWith("error")) return null;
  return content.split(" or ")[0].trim();
}

function copy(value: string, rng: Rng, slip = 0): string {
  if (!/^\d+$/.test(value) || !rng.chance(slip)) return value;
  const digits = value.split("");
  const i = rng.int(digits.length);
  digits[i] = String((Number(digits[i]) + rng.range(1, 9)) % 10);
  return digits.join("");
}

/** Reads the observation of the calls in flight into the state. */
function absorb(state: EpisodeState, content: string, options: StrategyOptions) {
  const calls = state.inFlight;
  state.inFlight = [];
  if (calls.length === 0) return;
  const parts =
    calls.length === 1 ? [content] : content.split(" ; ").map((part) => part.replace(/^\d+ : /, ""));
  calls.forEach((call, i) => {
    const result = parts[i] ?? "";
    if (result === "" || result.startsWith("error")) {
      if (result === ORCHESTRA_MESSAGES.invalidPlan || call.attempts >= (options.retries ?? 0)) {
        if (call.purpose === "check") state.values.set(call.node, state.unchecked.get(call.node)!);
        else state.failed = true;
        state.unchecked.delete(call.node);
        return;
      }
      state.retry.push({ ...call, attempts: call.attempts + 1 });
      return;
    }
    const conflict = result.includes(" or ");
    const value = copy(firstValue(result)!, state.rng, options.slip);
    if (call.purpose === "check") {
      state.values.set(call.node, value);
      state.unchecked.delete(call.node);
    } else if (
      call.agent === "searcher" &&
      ((conflict && options.verify !== "none" && options.verify !== undefined) || options.verify === "all") &&
      call.oneHop
    ) {
      state.unchecked.set(call.node, value);
    } else {
      state.values.set(call.node, value);
    }
  });
}

/** The calls of the next turn: retries first, then cross-checks, then every ready sub-task. */
function nextCalls(graph: OrchestraGraph, state: EpisodeState, options: StrategyOptions): Call[] {
  const refs = options.references !== false;
  const ready: Call[] = [...state.retry];
  state.retry = [];
  for (const node of state.unchecked.keys()) {
    if (ready.some((call) => call.node === node)) continue;
    const lookup = graph.nodes[node] as Extract<OrchestraNode, { kind: "lookup" }>;
    const entity = lookup.deps.length === 0 ? lookup.entity! : state.values.get(lookup.deps[0])!;
    ready.push({
      agent: "verifier",
      question: refs ? referenceOf(graph, node, true) : renderLookup(lookup.attribute, entity),
      node,
      purpose: "check",
      attempts: 0,
      oneHop: true,
    });
  }
  const busy = new Set([...ready.map((call) => call.node), ...state.unchecked.keys()]);
  const chains = options.chains === true;
  const needed = neededNodes(graph, chains);
  const chainLength = new Map(
    partsOf(graph).flatMap((chain) => chain.map((id) => [id, chain.length] as const)),
  );
  for (const node of graph.nodes) {
    if (!needed.has(node.id) || state.values.has(node.id) || busy.has(node.id)) continue;
    if (chains && node.kind === "lookup") {
      ready.push({
        agent: "searcher",
        question: refs ? referenceOf(graph, node.id, false) : renderTerm(graph, node),
        node: node.id,
        purpose: "value",
        attempts: 0,
        oneHop: chainLength.get(node.id) === 1,
      });
      continue;
    }
    if (!node.deps.every((dep) => state.values.has(dep))) continue;
    if (node.kind === "calc") {
      const question = refs
        ? referenceOf(graph, node.id, true)
        : node.deps.map((dep) => state.values.get(dep)!).join(" + ");
      ready.push({
        agent: "calculator",
        question,
        node: node.id,
        purpose: "value",
        attempts: 0,
        oneHop: false,
      });
    } else {
      const entity = node.deps.length === 0 ? node.entity! : state.values.get(node.deps[0])!;
      ready.push({
        agent: "searcher",
        question: refs ? referenceOf(graph, node.id, true) : renderLookup(node.attribute, entity),
        node: node.id,
        purpose: "value",
        attempts: 0,
        oneHop: true,
      });
    }
  }
  if (!options.parallel) return ready.slice(0, 1);
  // A calc only runs alone: its inputs are final once no lookup is pending.
  const lookups = ready.filter((call) => call.agent !== "calculator");
  return lookups.length > 0 ? lookups : ready.slice(0, 1);
}

/** Nodes the strategy resolves itself: all of them, or (chains) only the ends of lookup chains and calcs. */
function neededNodes(graph: OrchestraGraph, chains: boolean): Set<number> {
  if (!chains) return new Set(graph.nodes.map((node) => node.id));
  const inner = new Set<number>();
  for (const node of graph.nodes) if (node.kind === "lookup") for (const dep of node.deps) inner.add(dep);
  return new Set(graph.nodes.filter((node) => !inner.has(node.id)).map((node) => node.id));
}
