/**
 * MASBench-style tasks over the embedded world, one axis at a time. Each task is a dependency
 * graph of lookups (one attribute of one entity) and sums, rendered as one question in a small
 * fixed grammar (question.ts parses it back), with the graph and its measured axes in
 * `task.metadata.orchestra`. Shapes, by the axis that is varied (value v):
 *
 *   depth v       one chain of v lookups (v - 1 bridge hops, then a number)
 *   horizon v     two chains of ⌈v/2⌉ and ⌊v/2⌋ lookups, summed
 *   breadth v     one sum over v independent lookups
 *   parallel v    v independent chains of 2 lookups, summed
 *   robustness v  one sum over v independent lookups, each carrying a decoy (v = 1: one lookup)
 *
 * The other axes take whatever the shape gives (breadth and parallel move together, by
 * construction of a sum over independent parts); every task records all five. Worlds come from the
 * task's split only, as for world tasks.
 */
import { createRng, mixSeeds, type Rng } from "../core/random.ts";
import { cachedWorld } from "../env/task-set.ts";
import type { Task } from "../types/task.ts";
import {
  ATTRIBUTES,
  type Attribute,
  type Entity,
  type EntityType,
  entityById,
  indexWorld,
  readAttribute,
  type WorldIndex,
  worldSeeds,
} from "../world/index.ts";
import {
  AXES,
  type Axis,
  type AxisValues,
  measureAxes,
  type OrchestraGraph,
  type OrchestraNode,
} from "./graph.ts";
import { renderQuestion } from "./question.ts";

/** Smallest and largest value each axis generator accepts. */
export const AXIS_RANGE: Record<Axis, { min: number; max: number }> = {
  depth: { min: 1, max: 12 },
  horizon: { min: 2, max: 12 },
  breadth: { min: 2, max: 12 },
  parallel: { min: 1, max: 12 },
  robustness: { min: 1, max: 12 },
};

export interface OrchestraTaskMetadata {
  axis: Axis;
  value: number;
  graph: OrchestraGraph;
  axes: AxisValues;
}

export interface OrchestraTaskOptions {
  axis: Axis;
  value: number;
  count: number;
  seed: number;
  split?: "train" | "test";
  /** Tasks drawn from each world (default 4). */
  perWorld?: number;
}

export function validateAxisValue(axis: string, value: number): asserts axis is Axis {
  if (!(AXES as readonly string[]).includes(axis)) {
    throw new Error(`orchestra: unknown axis "${axis}"; valid: ${AXES.join(", ")}`);
  }
  const range = AXIS_RANGE[axis as Axis];
  if (!Number.isInteger(value) || value < range.min || value > range.max) {
    throw new Error(`orchestra: ${axis} must be an integer in [${range.min}, ${range.max}], got ${value}`);
  }
}

/** `count` tasks with `axis` = `value` exactly (measured on each task's graph). */
export function generateOrchestraTasks(options: OrchestraTaskOptions): Task[] {
  validateAxisValue(options.axis, options.value);
  const split = options.split ?? "train";
  const perWorld = Math.max(1, options.perWorld ?? 4);
  const start =
    mixSeeds(mixSeeds(options.seed, options.value), AXES.indexOf(options.axis) + 0x0c) % 1_000_000;
  const seeds = worldSeeds(split, Math.ceil(options.count / perWorld), start);
  const tasks: Task[] = [];
  for (const worldSeed of seeds) {
    const index = indexWorld(cachedWorld(worldSeed));
    for (let i = 0; i < perWorld && tasks.length < options.count; i++) {
      const rng = createRng(mixSeeds(mixSeeds(options.seed, worldSeed), i));
      const graph = buildGraph(index, options.axis, options.value, rng);
      const axes = measureAxes(graph);
      if (axes[options.axis] !== options.value) {
        throw new Error(`orchestra: built ${options.axis} ${axes[options.axis]} for ${options.value}`);
      }
      const metadata: OrchestraTaskMetadata = { axis: options.axis, value: options.value, graph, axes };
      tasks.push({
        id: `orch/${split}/${options.axis}${options.value}/w${worldSeed}/${options.seed}.${i}`,
        question: renderQuestion(graph),
        answer: graph.nodes[graph.nodes.length - 1].value,
        family: `orchestra-${options.axis}`,
        template: `${options.axis}-${options.value}`,
        worldSeed,
        split,
        metadata: { orchestra: metadata as unknown as Record<string, unknown> },
      });
    }
  }
  return tasks;
}

/** The orchestra metadata of a task, or null for any other task. */
export function orchestraMetadata(task: Task): OrchestraTaskMetadata | null {
  const meta = task.metadata?.orchestra as OrchestraTaskMetadata | undefined;
  return meta && Array.isArray(meta.graph?.nodes) ? meta : null;
}

// ---- shapes ---------------------------------------------------------------------------------------

function buildGraph(index: WorldIndex, axis: Axis, value: number, rng: Rng): OrchestraGraph {
  const nodes: OrchestraNode[] = [];
  const used = new Set<string>();
  const sumOf = (ends: number[]) => {
    if (ends.length < 2) return;
    const total = ends.reduce((sum, id) => sum + Number(nodes[id].value), 0);
    nodes.push({ id: nodes.length, kind: "calc", op: "+", deps: ends, value: String(total) });
  };
  switch (axis) {
    case "depth":
      chain(index, nodes, value, rng, used);
      break;
    case "horizon":
      sumOf([
        chain(index, nodes, Math.ceil(value / 2), rng, used),
        chain(index, nodes, Math.floor(value / 2), rng, used),
      ]);
      break;
    case "breadth":
      sumOf(Array.from({ length: value }, () => chain(index, nodes, 1, rng, used)));
      break;
    case "parallel":
      sumOf(Array.from({ length: value }, () => chain(index, nodes, 2, rng, used)));
      break;
    case "robustness": {
      const ends = Array.from({ length: value }, () => chain(index, nodes, 1, rng, used));
      for (const id of ends) {
        const node = nodes[id] as Extract<OrchestraNode, { kind: "lookup" }>;
        node.decoy = decoyOf(node.value, rng);
      }
      sumOf(ends);
      break;
    }
  }
  return { nodes };
}

/** Link and number attributes of each entity type. */
const ATTRIBUTES_OF = ((): Record<"link" | "number", Record<EntityType, Attribute[]>> => {
  const out = {
    link: { country: [], city: [], person: [], company: [] } as Record<EntityType, Attribute[]>,
    number: { country: [], city: [], person: [], company: [] } as Record<EntityType, Attribute[]>,
  };
  for (const [name, spec] of Object.entries(ATTRIBUTES)) {
    for (const type of spec.on) out[spec.kind][type].push(name as Attribute);
  }
  return out;
})();

/** Appends a chain of `length` lookups from a fresh start entity ending in a number; returns its last id. */
function chain(
  index: WorldIndex,
  nodes: OrchestraNode[],
  length: number,
  rng: Rng,
  used: Set<string>,
): number {
  const all = index.world.entities;
  // Start entities have no near-duplicate (a vague search must not be the hard part) and are
  // distinct within a task (independent parts stay independent).
  const starts = all.filter((entity) => !index.twins.has(entity.id) && !used.has(entity.id));
  let entity: Entity = rng.pick(starts.length > 0 ? starts : all);
  used.add(entity.id);
  let previous = -1;
  for (let hop = 0; hop < length; hop++) {
    const last = hop === length - 1;
    const attribute = rng.pick(ATTRIBUTES_OF[last ? "number" : "link"][entity.type]);
    const raw = readAttribute(entity, attribute);
    const next = last ? null : entityById(index, String(raw));
    const node: OrchestraNode = {
      id: nodes.length,
      kind: "lookup",
      attribute,
      deps: previous < 0 ? [] : [previous],
      value: next ? next.name : String(raw),
      ...(previous < 0 ? { entity: entity.name } : {}),
    };
    nodes.push(node);
    previous = node.id;
    if (next) entity = next;
  }
  return previous;
}

/** A conflicting number: the true one moved by 1–20% (at least 1), never equal. */
function decoyOf(value: string, rng: Rng): string {
  const n = Number(value);
  const delta = Math.max(1, Math.round(n * (0.01 + 0.19 * rng.next())));
  return String(rng.chance(0.5) || n - delta < 0 ? n + delta : n - delta);
}
