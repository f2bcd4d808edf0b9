/**
 * Fused operators from the patterns jax-js's decompositions leave in a converted graph. ONNX
 * Runtime's CPU provider has no general element-wise fusion, and each of these patterns is 9-15
 * passes over the activations that one kernel does in one:
 *
 *   LayerNorm   c = x − Σx·(1/D);  c · 1/√(Σc²·(1/D) + ε) · scale + bias   → LayerNormalization
 *   softmax     e = exp(z − max z);  e · 1/Σe                              → Softmax
 *   log-softmax s = z − max z;  s − log Σ exp s                             → LogSoftmax
 *   GELU (tanh) x / (exp(−clip(2√(2/π)(x + 0.044715x³), ±80)) + 1)        → com.microsoft FastGelu
 *
 * (sums and maxima over the last axis; the GELU is model.ts's x·sigmoid(2z) form, whose ±80 clip
 * only changes values below 1e-34). A pattern is fused only when every value inside it is used
 * inside it alone: in a train step the backward pass reads the forward's intermediates, so there
 * the pattern stays as it is (computing them twice would cost more than it saves). Every check
 * that makes the rewrite exact — the axis is the last one, 1/D is the width's reciprocal, the
 * scale and bias are [D] — reads the shapes the converter recorded; a value whose shape is unknown
 * is not fused.
 */
import type { OnnxDType, OnnxGraph, OnnxNode, OnnxTensor } from "./proto.ts";

export type TensorInfo = { shape: number[]; dtype: OnnxDType };

/** What a pass fused, by fused operator. */
export type FusionCounts = Record<string, number>;

type Match = { root: OnnxNode; inside: OnnxNode[]; fused: OnnxNode };

class GraphIndex {
  readonly producer = new Map<string, OnnxNode>();
  readonly uses = new Map<string, number>();
  readonly constants = new Map<string, OnnxTensor>();
  readonly outputs: Set<string>;
  readonly #info: Map<string, TensorInfo>;

  constructor(graph: OnnxGraph, info: Map<string, TensorInfo>) {
    for (const node of graph.nodes) {
      for (const output of node.outputs) this.producer.set(output, node);
      for (const input of node.inputs) this.uses.set(input, (this.uses.get(input) ?? 0) + 1);
    }
    for (const tensor of graph.initializers) this.constants.set(tensor.name, tensor);
    this.outputs = new Set(graph.outputs.map((o) => o.name));
    this.#info = new Map(info);
  }

  /**
   * Shape and dtype of a tensor: recorded by the converter, or, for a Reshape it emitted while
   * materialising a value, its constant target shape and its input's dtype.
   */
  info(name: string): TensorInfo | undefined {
    const known = this.#info.get(name);
    if (known) return known;
    const reshape = this.def(name, "Reshape");
    const target = reshape && this.ints(reshape.inputs[1]);
    const input = reshape && this.info(reshape.inputs[0]);
    if (!target || !input || target.some((d) => d <= 0)) return undefined;
    const found = { shape: target, dtype: input.dtype };
    this.#info.set(name, found);
    return found;
  }

  /** The node producing `name` when it is an `op` (in the default domain unless given). */
  def(name: string, op: string, domain?: string): OnnxNode | null {
    const node = this.producer.get(name);
    return node && node.op === op && node.domain === domain ? node : null;
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

const close = (value: number | null, want: number) =>
  value !== null && Math.abs(value - want) <= 1e-6 * Math.max(1, Math.abs(want));

/** The two operands of a commutative binary node in both orders. */
function orders(node: OnnxNode): [string, string][] {
  const [a, b] = node.inputs;
  return [
    [a, b],
    [b, a],
  ];
}

/**
 * `Reshape(Reduce<op>(x, [last axis], keepdims=0), keepdims shape of x)`, the converter's form of
 * a reduction over the last axis that keeps it; returns the nodes, or null.
 */
function lastAxisReduce(index: GraphIndex, name: string, op: string, x: string | null): OnnxNode[] | null {
  const reshape = index.def(name, "Reshape");
  if (!reshape) return null;
  const reduce = index.def(reshape.inputs[0], op);
  if (!reduce || (x !== null && reduce.inputs[0] !== x)) return null;
  const shape = index.info(reduce.inputs[0])?.shape;
  if (!shape || shape.length === 0) return null;
  const axes = index.ints(reduce.inputs[1]);
  const target = index.ints(reshape.inputs[1]);
  const keepShape = [...shape.slice(0, -1), 1];
  if (!axes || axes.length !== 1 || (axes[0] !== shape.length - 1 && axes[0] !== -1)) return null;
  if (reduce.attributes?.keepdims !== 0 || !target || target.join() !== keepShape.join()) return null;
  return [reshape, reduce];
}

/** `Neg(Reshape(ReduceMax(z)))` over the last axis: returns [nodes, z]. */
function negatedMax(index: GraphIndex, name: string): [OnnxNode[], string] | null {
  const neg = index.def(name, "Neg");
  if (!neg) return null;
  const max = lastAxisReduce(index, neg.inputs[0], "ReduceMax", null);
  return max ? [[neg, ...max], max[1].inputs[0]] : null;
}

/** `z + (−max z)` over the last axis (the stable shift of softmax): returns [nodes, z]. */
function shifted(index: GraphIndex, name: string): [OnnxNode[], string] | null {
  const add = index.def(name, "Add");
  if (!add) return null;
  for (const [z, negMax] of orders(add)) {
    const found = negatedMax(index, negMax);
    if (found && found[1] === z) return [[add, ...found[0]], z];
  }
  return null;
}

function matchSoftmax(index: GraphIndex, root: OnnxNode): Match | null {
  if (root.op !== "Mul" || root.domain) return null;
  for (const [e, r] of orders(root)) {
    const exp = index.def(e, "Exp");
    const reciprocal = index.def(r, "Reciprocal");
    if (!exp || !reciprocal) continue;
    const sum = lastAxisReduce(index, reciprocal.inputs[0], "ReduceSum", e);
    const shift = shifted(index, exp.inputs[0]);
    if (!sum || !shift) continue;
    const [shiftNodes, z] = shift;
    return {
      root,
      inside: [exp, reciprocal, ...sum, ...shiftNodes],
      fused: { op: "Softmax", inputs: [z], outputs: root.outputs, attributes: { axis: -1 } },
    };
  }
  return null;
}

function matchLogSoftmax(index: GraphIndex, root: OnnxNode): Match | null {
  if (root.op !== "Add" || root.domain) return null;
  for (const [s, negLog] of orders(root)) {
    const neg = index.def(negLog, "Neg");
    const log = neg && index.def(neg.inputs[0], "Log");
    if (!neg || !log) continue;
    const shift = shifted(index, s);
    if (!shift) continue;
    const reshape = index.def(log.inputs[0], "Reshape");
    const reduce = reshape && index.def(reshape.inputs[0], "ReduceSum");
    const exp = reduce && index.def(reduce.inputs[0], "Exp");
    if (!exp || exp.inputs[0] !== s) continue;
    const sum = lastAxisReduce(index, log.inputs[0], "ReduceSum", exp.outputs[0]);
    if (!sum) continue;
    const [shiftNodes, z] = shift;
    return {
      root,
      inside: [neg, log, ...sum, exp, ...shiftNodes],
      fused: { op: "LogSoftmax", inputs: [z], outputs: root.outputs, attributes: { axis: -1 } },
    };
  }
  return null;
}

/** `Mul(Reshape(ReduceSum(v)), 1/D)` over the last axis of width D: the mean. */
function mean(index: GraphIndex, name: string, of: string | null): OnnxNode[] | null {
  const mul = index.def(name, "Mul");
  if (!mul) return null;
  for (const [summed, inverse] of orders(mul)) {
    const sum = lastAxisReduce(index, summed, "ReduceSum", of);
    if (!sum) continue;
    const width = index.info(sum[1].inputs[0])?.shape.at(-1);
    if (width !== undefined && close(index.scalar(inverse), 1 / width)) return [mul, ...sum];
  }
  return null;
}

function matchLayerNorm(index: GraphIndex, root: OnnxNode): Match | null {
  if (root.op !== "Add" || root.domain) return null;
  for (const [scaled, bias] of orders(root)) {
    const scaleMul = index.def(scaled, "Mul");
    if (!scaleMul) continue;
    for (const [normed, scale] of orders(scaleMul)) {
      const normMul = index.def(normed, "Mul");
      if (!normMul) continue;
      for (const [centered, inverse] of orders(normMul)) {
        const reciprocal = index.def(inverse, "Reciprocal");
        const sqrt = reciprocal && index.def(reciprocal.inputs[0], "Sqrt");
        const plusEps = sqrt && index.def(sqrt.inputs[0], "Add");
        if (!plusEps) continue;
        for (const [variance, eps] of orders(plusEps)) {
          const epsilon = index.scalar(eps);
          const squareMean = epsilon === null ? null : mean(index, variance, null);
          const square = squareMean && index.def(squareMean[2].inputs[0], "Mul");
          if (!squareMean || !square || square.inputs[0] !== centered || square.inputs[1] !== centered)
            continue;
          const sub = index.def(centered, "Add");
          if (!sub) continue;
          for (const [x, negMean] of orders(sub)) {
            const neg = index.def(negMean, "Neg");
            const xMean = neg && mean(index, neg.inputs[0], x);
            const info = index.info(x);
            if (!xMean || !info) continue;
            const width = info.shape.at(-1);
            const isVector = (name: string) => index.info(name)?.shape.join() === `${width}`;
            if (!isVector(scale) || !isVector(bias)) continue;
            return {
              root,
              inside: [
                scaleMul,
                normMul,
                reciprocal,
                sqrt,
                plusEps,
                ...squareMean,
                square,
                sub,
                neg,
                ...xMean,
              ],
              fused: {
                op: "LayerNormalization",
                inputs: [x, scale, bias],
                outputs: root.outputs,
                attributes: { axis: -1, epsilon: { float: epsilon as number } },
              },
            };
          }
        }
      }
    }
  }
  return null;
}

const GELU_CUBIC = 0.044715;
const GELU_SCALE = 2 * Math.sqrt(2 / Math.PI);

function matchGelu(index: GraphIndex, root: OnnxNode): Match | null {
  if (root.op !== "Mul" || root.domain) return null;
  for (const [x, r] of orders(root)) {
    if (index.info(x)?.dtype !== "float32") continue;
    const reciprocal = index.def(r, "Reciprocal");
    const plusOne = reciprocal && index.def(reciprocal.inputs[0], "Add");
    if (!plusOne) continue;
    for (const [e, one] of orders(plusOne)) {
      const exp = index.scalar(one) === 1 ? index.def(e, "Exp") : null;
      const neg = exp && index.def(exp.inputs[0], "Neg");
      // clip(t, −80, 80) as Max(Min(t, 80), −80)
      const max = neg && index.def(neg.inputs[0], "Max");
      const min = max && index.def(max.inputs[0], "Min");
      if (!min || index.scalar(max.inputs[1]) !== -80 || index.scalar(min.inputs[1]) !== 80) continue;
      // t = (x²·a + 1)·x·c
      const scaled = index.def(min.inputs[0], "Mul");
      if (!scaled) continue;
      for (const [cubic, c] of orders(scaled)) {
        if (!close(index.scalar(c), GELU_SCALE)) continue;
        const times = index.def(cubic, "Mul");
        if (!times) continue;
        for (const [inner, x2] of orders(times)) {
          if (x2 !== x) continue;
          const plus = index.def(inner, "Add");
          if (!plus) continue;
          for (const [aTerm, one2] of orders(plus)) {
            const aMul = index.scalar(one2) === 1 ? index.def(aTerm, "Mul") : null;
            if (!aMul) continue;
            for (const [sq, a] of orders(aMul)) {
              const square = index.def(sq, "Mul");
              if (!square || !close(index.scalar(a), GELU_CUBIC)) continue;
              if (square.inputs[0] !== x || square.inputs[1] !== x) continue;
              return {
                root,
                inside: [reciprocal, plusOne, exp, neg, max, min, scaled, times, plus, aMul, square],
                fused: { op: "FastGelu", domain: "com.microsoft", inputs: [x], outputs: root.outputs },
              };
            }
          }
        }
      }
    }
  }
  return null;
}

const MATCHERS = [matchLayerNorm, matchSoftmax, matchLogSoftmax, matchGelu];

/** Whether every value the match computes inside is used by the match alone. */
function selfContained(index: GraphIndex, match: Match): boolean {
  const inside = new Set(match.inside);
  const produced = new Set(match.inside.flatMap((node) => node.outputs));
  const usedInside = new Map<string, number>();
  for (const node of [match.root, ...match.inside])
    for (const input of node.inputs)
      if (produced.has(input)) usedInside.set(input, (usedInside.get(input) ?? 0) + 1);
  for (const name of produced) {
    if (index.outputs.has(name)) return false;
    if ((index.uses.get(name) ?? 0) !== (usedInside.get(name) ?? 0)) return false;
  }
  return inside.size === match.inside.length && !inside.has(match.root);
}

/**
 * The graph with every self-contained pattern replaced by its fused operator (in place of the
 * pattern's last node, so the order stays topological), and how many of each it fused.
 */
export function fuseGraph(
  graph: OnnxGraph,
  info: Map<string, TensorInfo>,
): { graph: OnnxGraph; counts: FusionCounts } {
  const index = new GraphIndex(graph, info);
  const removed = new Set<OnnxNode>();
  const replaced = new Map<OnnxNode, OnnxNode>();
  const counts: FusionCounts = {};
  for (const node of graph.nodes) {
    if (removed.has(node)) continue;
    for (const matcher of MATCHERS) {
      const match = matcher(index, node);
      if (!match || match.inside.some((n) => removed.has(n)) || !selfContained(index, match)) continue;
      for (const inner of match.inside) removed.add(inner);
      replaced.set(node, match.fused);
      counts[match.fused.op] = (counts[match.fused.op] ?? 0) + 1;
      break;
    }
  }
  if (replaced.size === 0) return { graph, counts };
  const nodes = graph.nodes.filter((node) => !removed.has(node)).map((node) => replaced.get(node) ?? node);
  return { graph: { ...graph, nodes }, counts };
}
