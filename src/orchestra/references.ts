/**
 * References: how an orchestrator names sub-tasks and passes results between sub-agents without
 * copying names or numbers. The question's summands are its parts (`part 2`), a part's hops its
 * steps (`part 2 step 1` is the innermost lookup); `question` is the whole question. Sub-agents of
 * one episode share a blackboard: what a call found for a part or step is stored there, and a later
 * call that needs it as input (the next step's entity, the calculator's `part 1 + part 2`) reads
 * it, i.e. a reference is an edge of the multi-agent system. A reference whose input is not on the
 * blackboard yet is the orchestrator's error (`error : missing input`).
 */
import { canonicalText } from "../env/protocol.ts";
import type { OrchestraGraph, OrchestraNode } from "./graph.ts";

export type Reference = { kind: "question" } | { kind: "part"; part: number; step?: number };

/** The parts of a task: one lookup chain per summand (node ids, innermost first). */
export function partsOf(graph: OrchestraGraph): number[][] {
  const answer = graph.nodes[graph.nodes.length - 1];
  const ends = answer.kind === "calc" ? answer.deps : [answer.id];
  return ends.map((end) => {
    const chain: number[] = [];
    let node: OrchestraNode | undefined = graph.nodes[end];
    while (node && node.kind === "lookup") {
      chain.unshift(node.id);
      node = node.deps.length > 0 ? graph.nodes[node.deps[0]] : undefined;
    }
    return chain;
  });
}

/** The reference of a node: `part K` for a chain's end, `part K step H` for an inner hop. */
export function referenceOf(graph: OrchestraGraph, nodeId: number, steps: boolean): string {
  const parts = partsOf(graph);
  for (const [k, chain] of parts.entries()) {
    const h = chain.indexOf(nodeId);
    if (h < 0) continue;
    if (!steps || chain.length === 1) {
      if (h === chain.length - 1) return renderReference(k + 1);
    }
    return renderReference(k + 1, h + 1);
  }
  const answer = graph.nodes[graph.nodes.length - 1];
  if (answer.id === nodeId && answer.kind === "calc")
    return parts.map((_, k) => renderReference(k + 1)).join(" + ");
  throw new Error(`orchestra: node ${nodeId} has no reference`);
}

export function renderReference(part: number, step?: number): string {
  return step === undefined ? `part ${part}` : `part ${part} step ${step}`;
}

/** A reference, or null when `text` is not one (then it is read as a free-text question). */
export function parseReference(text: string): Reference | null {
  const tokens = canonicalText(text).split(" ");
  if (tokens.length === 1 && tokens[0] === "question") return { kind: "question" };
  const number = (token: string | undefined) => (token && /^[1-9]\d?$/.test(token) ? Number(token) : null);
  if (tokens[0] !== "part") return null;
  const part = number(tokens[1]);
  if (part === null) return null;
  if (tokens.length === 2) return { kind: "part", part };
  const step = number(tokens[3]);
  if (tokens.length === 4 && tokens[2] === "step" && step !== null) return { kind: "part", part, step };
  return null;
}
