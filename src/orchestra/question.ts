/**
 * The question grammar of orchestration tasks, rendered from a graph and parsed back by the
 * scripted sub-agents (never evaluated: a parser over a closed word list).
 *
 *   question := "what is" sum "?"        sum  := term ("plus" term)*
 *   term     := word "of" term | name | number
 *
 * e.g. `what is population of country of birthplace of arin vold plus employees of kelto ?`.
 * Attribute words are single tokens so a term's words map one to one onto the graph's hops.
 */
import { canonicalText } from "../env/protocol.ts";
import type { Attribute } from "../world/index.ts";
import type { OrchestraGraph, OrchestraNode } from "./graph.ts";

export const ATTRIBUTE_WORDS: Record<Attribute, string> = {
  capital: "capital",
  leader: "leader",
  country: "country",
  bornIn: "birthplace",
  founder: "founder",
  headquarters: "headquarters",
  population: "population",
  founded: "founded",
  born: "born",
  employees: "employees",
};

const ATTRIBUTE_OF_WORD = new Map<string, Attribute>(
  Object.entries(ATTRIBUTE_WORDS).map(([attribute, word]) => [word, attribute as Attribute]),
);

/** One summand: a chain of attribute reads (outermost first) applied to a named entity, or a number. */
export type Term = { attributes: Attribute[]; entity: string } | { number: string };

/** The text of one node: its chain of reads down to a named entity, or its sum. */
export function renderTerm(graph: OrchestraGraph, node: OrchestraNode): string {
  if (node.kind === "calc") return node.deps.map((dep) => renderTerm(graph, graph.nodes[dep])).join(" plus ");
  const inner = node.deps.length === 0 ? node.entity! : renderTerm(graph, graph.nodes[node.deps[0]]);
  return `${ATTRIBUTE_WORDS[node.attribute]} of ${inner}`;
}

/** A one-hop sub-question: one attribute of a named entity (`population of zenda`). */
export function renderLookup(attribute: Attribute, entity: string): string {
  return `${ATTRIBUTE_WORDS[attribute]} of ${entity}`;
}

export function renderQuestion(graph: OrchestraGraph): string {
  return canonicalText(`what is ${renderTerm(graph, graph.nodes[graph.nodes.length - 1])} ?`);
}

/** The terms of a question or sub-question, or null when it does not follow the grammar. */
export function parseTerms(text: string): Term[] | null {
  let tokens = canonicalText(text).split(" ").filter(Boolean);
  if (tokens[0] === "what" && tokens[1] === "is") tokens = tokens.slice(2);
  if (tokens.at(-1) === "?") tokens = tokens.slice(0, -1);
  const parts: string[][] = [[]];
  for (const token of tokens) {
    if (token === "plus" || token === "+") parts.push([]);
    else parts[parts.length - 1].push(token);
  }
  const terms: Term[] = [];
  for (const part of parts) {
    const attributes: Attribute[] = [];
    let i = 0;
    while (i + 1 < part.length && ATTRIBUTE_OF_WORD.has(part[i]) && part[i + 1] === "of") {
      attributes.push(ATTRIBUTE_OF_WORD.get(part[i])!);
      i += 2;
    }
    const rest = part.slice(i);
    if (rest.length === 0) return null;
    if (attributes.length === 0 && rest.length === 1 && /^-?\d+$/.test(rest[0]))
      terms.push({ number: rest[0] });
    else if (rest.some((token) => /[^a-z]/.test(token))) return null;
    else terms.push({ attributes, entity: rest.join(" ") });
  }
  return terms;
}
