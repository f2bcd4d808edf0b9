/**
 * What the fusion passes share: an index of a converted graph (who produces and reads each value,
 * the constants, the shapes the converter recorded) and the small matchers every pattern uses.
 */
import type { OnnxDType, OnnxGraph, OnnxNode, OnnxTensor } from "./proto.ts";

export type TensorInfo = { shape: number[]; dtype: OnnxDType };

/** What a pass fused, by fused operator. */
export type FusionCounts = Record<string, number>;

/**
 * A rewrite: the nodes it removes, what is emitted in place of some of them (an anchor's nodes
 * take its place in the order), the outputs of removed nodes that stay visible (re-produced by the
 * emitted nodes), and the constants the emitted nodes need.
 */
export type Match = {
  name: string;
  remove: OnnxNode[];
  emit: Map<OnnxNode, OnnxNode[]>;
  keep: string[];
  constants?: OnnxTensor[];
};

/** A one-operator rewrite of the pattern ending in `root`. */
export function single(root: OnnxNode, inside: OnnxNode[], fused: OnnxNode): Match {
  return {
    name: fused.op,
    remove: [root, ...inside],
    emit: new Map([[root, [fused]]]),
    keep: [...root.outputs],
  };
}

export class GraphIndex {
  readonly producer = new Map<string, OnnxNode>();
  readonly consumers = new Map<string, OnnxNode[]>();
  readonly uses = new Map<string, number>();
  readonly constants = new Map<string, OnnxTensor>();
  readonly outputs: Set<string>;
  /** Each node's place in the graph's (topological) order. */
  readonly position = new Map<OnnxNode, number>();
  readonly #info: Map<string, TensorInfo>;

  constructor(graph: OnnxGraph, info: Map<string, TensorInfo>) {
    for (const node of graph.nodes) {
      this.position.set(node, this.position.size);
      for (const output of node.outputs) this.producer.set(output, node);
      for (const input of node.inputs) {
        this.uses.set(input, (this.uses.get(input) ?? 0) + 1);
        const list = this.consumers.get(input) ?? [];
        if (!list.includes(node)) list.push(node);
        this.consumers.set(input, list);
      }
    }
    for (const tensor of graph.initializers) this.constants.set(tensor.name, tensor);
    this.outputs = new Set(graph.outputs.map((o) => o.name));
    this.#info = new Map(info);
  }

  /**
   * Shape and dtype of a tensor: recorded by the converter, or, for a Reshape or Transpose it
   * emitted (materialising a value, lowering a dot), derived from its input's.
   */
  info(name: string): TensorInfo | undefined {
    const known = this.#info.get(name);
    if (known) return known;
    const node = this.producer.get(name);
    const input = node && !node.domain && node.inputs.length > 0 ? this.info(node.inputs[0]) : undefined;
    if (!node || !input) return undefined;
    let shape: number[] | undefined;
    if (node.op === "Reshape") {
      const target = this.ints(node.inputs[1]);
      if (target?.every((d) => d > 0)) shape = target;
    } else if (node.op === "Transpose") {
      const perm = node.attributes?.perm as number[] | undefined;
      if (perm?.length === input.shape.length) shape = perm.map((axis) => input.shape[axis]);
    }
    if (!shape) return undefined;
    const found = { shape, dtype: input.dtype };
    this.#info.set(name, found);
    return found;
  }

  /** The node producing `name` when it is an `op` (in the default domain unless given). */
  def(name: string, op: string, domain?: string): OnnxNode | null {
    const node = this.producer.get(name);
    return node && node.op === op && node.domain === domain ? node : null;
  }

  /** The nodes of type `op` reading `name` and passing `test`. */
  usesOf(name: string, op: string, test: (node: OnnxNode) => boolean = () => true): OnnxNode[] {
    return (this.consumers.get(name) ?? []).filter((node) => node.op === op && !node.domain && test(node));
  }

  /** The one node of type `op` reading `name` (and passing `test`), else null. */
  use(name: string, op: string, test: (node: OnnxNode) => boolean = () => true): OnnxNode | null {
    const found = this.usesOf(name, op, test);
    return found.length === 1 ? found[0] : null;
  }

  #serial = 0;
  #pending: OnnxTensor[] = [];

  /** A generator of tensor names no converted graph uses. */
  freshNames(prefix: string): () => string {
    return () => `${prefix}_${this.#serial++}`;
  }

  /** A new scalar constant for an emitted node (collected by `takeConstants`). */
  constant(dtype: "float32" | "float64", value: number): string {
    const name = `k_${this.#serial++}`;
    const data = dtype === "float32" ? Float32Array.of(value) : Float64Array.of(value);
    this.#pending.push({ name, dtype, shape: [], data });
    return name;
  }

  /** The constants made since the last call. */
  takeConstants(): OnnxTensor[] {
    const taken = this.#pending;
    this.#pending = [];
    return taken;
  }

  /** The value of a constant whose elements are all equal (a scalar literal), else null. */
  scalar(name: string): number | null {
    const tensor = this.constants.get(name);
    if (!tensor || tensor.data.length === 0) return null;
    const first = Number(tensor.data[0]);
    for (let i = 1; i < tensor.data.length; i++) if (Number(tensor.data[i]) !== first) return null;
    return first;
  }

  ints(name: string): number[] | null {
    const tensor = this.constants.get(name);
    return tensor && tensor.dtype === "int64" ? Array.from(tensor.data, Number) : null;
  }
}

export const close = (value: number | null, want: number) =>
  value !== null && Math.abs(value - want) <= 1e-6 * Math.max(1, Math.abs(want));

/** The two operands of a commutative binary node in both orders. */
export function orders(node: OnnxNode): [string, string][] {
  const [a, b] = node.inputs;
  return [
    [a, b],
    [b, a],
  ];
}

/** The input of a binary node that is not `name`. */
export function other(node: OnnxNode, name: string): string {
  return node.inputs[0] === name ? node.inputs[1] : node.inputs[0];
}
