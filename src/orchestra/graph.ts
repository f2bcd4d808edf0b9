/**
 * The dependency graph of an orchestration task and the five MASBench axes measured on it
 * (MAS-Orchestra, arXiv:2601.14652, its section 4 on the benchmark's axes).
 *
 * Nodes are sub-tasks in topological order (every dependency has a smaller id); the last node is
 * the answer. A `lookup` reads one attribute of an entity: of a named entity when it has no
 * dependency, else of the entity its one dependency resolved to (a bridge hop). A `calc` adds the
 * numbers of its dependencies. A node with a `decoy` carries adversarial content: whoever looks it
 * up without cross-checking sees the true value and the decoy side by side.
 *
 * Axes, as measured here:
 * - depth: nodes on the longest dependency chain;
 * - horizon: intermediate results needed, i.e. every node but the answer;
 * - breadth: the most dependencies of one node;
 * - parallel: independent retrieval components, i.e. connected components of the lookup nodes
 *   (edges between lookups only: calcs are where components join);
 * - robustness: nodes carrying a decoy.
 */
import type { Attribute } from "../world/index.ts";

export const AXES = ["depth", "horizon", "breadth", "parallel", "robustness"] as const;
export type Axis = (typeof AXES)[number];

export type OrchestraNode =
  | {
      id: number;
      kind: "lookup";
      attribute: Attribute;
      /** Name of the entity read, for a node without dependency. */
      entity?: string;
      deps: number[];
      /** The node's true value (a number as digits, or an entity name). */
      value: string;
      /** Adversarial content: a conflicting value shown next to the true one. */
      decoy?: string;
    }
  | { id: number; kind: "calc"; op: "+"; deps: number[]; value: string };

export interface OrchestraGraph {
  nodes: OrchestraNode[];
}

export type AxisValues = Record<Axis, number>;

/** Throws unless nodes are numbered 0…n-1 in topological order with valid dependencies. */
export function validateGraph(graph: OrchestraGraph): void {
  if (graph.nodes.length === 0) throw new Error("orchestra graph: no nodes");
  graph.nodes.forEach((node, i) => {
    if (node.id !== i) throw new Error(`orchestra graph: node ${i} has id ${node.id}`);
    for (const dep of node.deps) {
      if (!(dep >= 0 && dep < i)) throw new Error(`orchestra graph: node ${i} depends on ${dep}`);
    }
    if (node.kind === "lookup" && node.deps.length > 1)
      throw new Error(`orchestra graph: lookup ${i} has ${node.deps.length} dependencies`);
    if (node.kind === "lookup" && node.deps.length === 0 && !node.entity)
      throw new Error(`orchestra graph: lookup ${i} names no entity`);
    if (node.kind === "calc" && node.deps.length < 2)
      throw new Error(`orchestra graph: calc ${i} needs at least two inputs`);
  });
}

/** Nodes on the longest chain ending at each node, then the maximum. */
export function depthOf(graph: OrchestraGraph): number {
  const depth: number[] = [];
  for (const node of graph.nodes) depth.push(1 + Math.max(0, ...node.deps.map((dep) => depth[dep])));
  return Math.max(...depth);
}

export function parallelOf(graph: OrchestraGraph): number {
  const parent = graph.nodes.map((node) => node.id);
  const find = (i: number): number => {
    while (parent[i] !== i) i = parent[i];
    return i;
  };
  const lookups = graph.nodes.filter((node) => node.kind === "lookup");
  for (const node of lookups) {
    for (const dep of node.deps) if (graph.nodes[dep].kind === "lookup") parent[find(node.id)] = find(dep);
  }
  return new Set(lookups.map((node) => find(node.id))).size;
}

export function measureAxes(graph: OrchestraGraph): AxisValues {
  return {
    depth: depthOf(graph),
    horizon: graph.nodes.length - 1,
    breadth: Math.max(...graph.nodes.map((node) => node.deps.length)),
    parallel: parallelOf(graph),
    robustness: graph.nodes.filter((node) => node.kind === "lookup" && node.decoy !== undefined).length,
  };
}
