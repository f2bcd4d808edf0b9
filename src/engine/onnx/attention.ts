/**
 * Causal self-attention as one operator (com.microsoft Attention): the pattern model.ts's
 * `projectQkv` + `attend` leave in a forward-only program (scoring), from the packed projection
 * to the merged heads:
 *
 *   qkv = x·W + b  → [B,T,3,H,K];  q, k, v = its three slices
 *   scores = (q·s)ᵀ… · kᵀ… + mask  → [B,H,T,T];  p = softmax(scores)
 *   out = (p · v) → [B,H,T,K] → [B,T,H,K] → [B,T,D]
 *
 * is `Attention(x, W, b)` with `num_heads` H, `scale` s and `unidirectional` 1 (the causal mask).
 * ORT's CPU kernel does the projection as one GEMM and each (row, head) in its thread pool, with
 * no transposes, slices or a materialised mask. It runs after the element-wise pass (the softmax
 * is already one Softmax node) and, like every fusion, only where each intermediate is used inside
 * the pattern alone: a train step's backward reads them, so it keeps the unfused form.
 *
 * What makes the rewrite exact is checked, not assumed: the slices are the q, k, v thirds of axis
 * 2 of a [B,T,3,H,K] value; the transposes move heads and keys where `attend` puts them; each
 * MatMul's operands have the same batch dimensions and the contracted ones line up; the mask is a
 * constant the pass evaluates, 0 on and below the diagonal and ≤ −1e4 above it (both give the
 * same softmax: the blocked weights underflow to 0 either way).
 */

import { type GraphIndex, type Match, orders, single } from "./patterns.ts";
import type { OnnxNode } from "./proto.ts";

/** The first producer of `name` that is not a Reshape, and the Reshapes passed on the way. */
function throughReshapes(index: GraphIndex, name: string): { node: OnnxNode | null; reshapes: OnnxNode[] } {
  const reshapes: OnnxNode[] = [];
  let node = index.producer.get(name) ?? null;
  while (node && node.op === "Reshape" && !node.domain) {
    reshapes.push(node);
    node = index.producer.get(node.inputs[0]) ?? null;
  }
  return { node, reshapes };
}

/** The node producing `name` (through Reshapes) when it is an `op`, with the Reshapes passed. */
function producedBy(index: GraphIndex, name: string, op: string): OnnxNode[] | null {
  const { node, reshapes } = throughReshapes(index, name);
  return node && node.op === op && !node.domain ? [node, ...reshapes] : null;
}

const same = (a: readonly number[] | undefined, b: readonly number[]) =>
  a !== undefined && a.join() === b.join();
const product = (dims: readonly number[]) => dims.reduce((a, b) => a * b, 1);

/**
 * `Transpose(perm)` reached from `name` through Reshapes, whose input has `shape`: returns the
 * nodes (transpose first) and the transpose's input.
 */
function transposed(
  index: GraphIndex,
  name: string,
  perm: number[],
  shape: number[],
): { nodes: OnnxNode[]; input: string } | null {
  const nodes = producedBy(index, name, "Transpose");
  const transpose = nodes?.[0];
  if (!transpose || !same(transpose.attributes?.perm as number[] | undefined, perm)) return null;
  if (!same(index.info(transpose.inputs[0])?.shape, shape)) return null;
  return { nodes: nodes!, input: transpose.inputs[0] };
}

/** Slice `part` (0 q, 1 k, 2 v) of axis 2 of a [B,T,3,H,K] value, reached through Reshapes. */
function qkvSlice(index: GraphIndex, name: string, part: number): { nodes: OnnxNode[]; qkv: string } | null {
  const nodes = producedBy(index, name, "Slice");
  const slice = nodes?.[0];
  if (!slice) return null;
  const [data, starts, ends, axes, steps] = slice.inputs;
  const shape = index.info(data)?.shape;
  if (shape?.length !== 5 || shape[2] !== 3) return null;
  if (!same(index.ints(starts) ?? undefined, [part]) || !same(index.ints(ends) ?? undefined, [part + 1]))
    return null;
  const axis = index.ints(axes ?? "");
  if (!axis || (axis[0] !== 2 && axis[0] !== -3) || axis.length !== 1) return null;
  if (steps && !same(index.ints(steps) ?? undefined, [1])) return null;
  return { nodes: nodes!, qkv: data };
}

/**
 * A MatMul (or a FusedMatMul reading its second operand transposed) reached through Reshapes whose
 * operands (also through Reshapes, which only relabel row-major data) are [..batch, m, n] and
 * [..batch, n, p] (with `transB`, [..batch, p, n]) with the given batch size.
 */
function batchedMatMul(
  index: GraphIndex,
  name: string,
  batch: number,
  [m, n, p]: [number, number, number],
): { nodes: OnnxNode[]; a: string; b: string; transB: boolean } | null {
  const { node: matmul, reshapes } = throughReshapes(index, name);
  if (!matmul) return null;
  const plain = matmul.op === "MatMul" && !matmul.domain;
  const fused = matmul.op === "FusedMatMul" && matmul.domain === "com.microsoft";
  const { transB = 0, ...rest } = matmul.attributes ?? {};
  if (
    !plain &&
    !(fused && transB === 1 && Object.keys(rest).every((key) => key === "transA" && rest.transA === 0))
  )
    return null;
  const [a, b] = matmul.inputs;
  const aShape = index.info(a)?.shape;
  const bShape = index.info(b)?.shape;
  if (!aShape || !bShape || aShape.length < 2 || aShape.length !== bShape.length) return null;
  if (!same(aShape.slice(0, -2), bShape.slice(0, -2)) || product(aShape.slice(0, -2)) !== batch) return null;
  if (!same(aShape.slice(-2), [m, n]) || !same(bShape.slice(-2), fused ? [p, n] : [n, p])) return null;
  return { nodes: [matmul, ...reshapes], a, b, transB: fused };
}

/** Small constant subgraphs (the traced causal mask) evaluated with NumPy broadcasting. */
type Constant = { shape: number[]; data: Float64Array };

const MAX_CONSTANT = 1 << 20;

const BINARY: Record<string, (a: number, b: number) => number> = {
  Add: (a, b) => a + b,
  Sub: (a, b) => a - b,
  Mul: (a, b) => a * b,
  Less: (a, b) => Number(a < b),
  LessOrEqual: (a, b) => Number(a <= b),
  Greater: (a, b) => Number(a > b),
  GreaterOrEqual: (a, b) => Number(a >= b),
  Equal: (a, b) => Number(a === b),
};

function broadcast(a: Constant, b: Constant, f: (x: number, y: number) => number): Constant | null {
  const rank = Math.max(a.shape.length, b.shape.length);
  const pad = (s: number[]) => [...Array(rank - s.length).fill(1), ...s];
  const as = pad(a.shape);
  const bs = pad(b.shape);
  const shape = as.map((d, i) => Math.max(d, bs[i]));
  if (as.some((d, i) => d !== 1 && d !== shape[i]) || bs.some((d, i) => d !== 1 && d !== shape[i]))
    return null;
  const size = product(shape);
  if (size > MAX_CONSTANT) return null;
  const strides = (s: number[]) => {
    const out = Array(rank).fill(0);
    let stride = 1;
    for (let i = rank - 1; i >= 0; i--) {
      out[i] = s[i] === 1 ? 0 : stride;
      stride *= s[i];
    }
    return out;
  };
  const sa = strides(as);
  const sb = strides(bs);
  const data = new Float64Array(size);
  const at = Array(rank).fill(0);
  for (let i = 0; i < size; i++) {
    let ia = 0;
    let ib = 0;
    for (let d = 0; d < rank; d++) {
      ia += at[d] * sa[d];
      ib += at[d] * sb[d];
    }
    data[i] = f(a.data[ia], b.data[ib]);
    for (let d = rank - 1; d >= 0; d--) {
      if (++at[d] < shape[d]) break;
      at[d] = 0;
    }
  }
  return { shape, data };
}

/** The value of `name` when it is a constant or computed from constants alone, else null. */
export function evaluateConstant(index: GraphIndex, name: string, depth = 0): Constant | null {
  const tensor = index.constants.get(name);
  if (tensor) {
    if (tensor.data.length > MAX_CONSTANT) return null;
    return { shape: [...tensor.shape], data: Float64Array.from(tensor.data as ArrayLike<number>, Number) };
  }
  const node = index.producer.get(name);
  if (!node || node.domain || depth > 16) return null;
  const input = (i: number) => evaluateConstant(index, node.inputs[i], depth + 1);
  switch (node.op) {
    case "Reshape": {
      const value = input(0);
      const target = index.ints(node.inputs[1]);
      if (!value || !target || target.some((d) => d <= 0) || product(target) !== value.data.length)
        return null;
      return { shape: target, data: value.data };
    }
    case "Cast":
    case "Identity":
      return input(0);
    case "Neg": {
      const value = input(0);
      return value && { shape: value.shape, data: value.data.map((v) => -v) };
    }
    default: {
      if (!Object.hasOwn(BINARY, node.op)) return null;
      const a = input(0);
      const b = a && input(1);
      return b ? broadcast(a, b, BINARY[node.op]) : null;
    }
  }
}

/** Whether `mask` is an additive causal mask over [T, T] (leading dimensions of 1). */
function isCausalMask(index: GraphIndex, mask: string, T: number): boolean {
  const value = evaluateConstant(index, mask);
  if (!value || value.shape.length < 2 || !same(value.shape.slice(-2), [T, T])) return false;
  if (value.shape.slice(0, -2).some((d) => d !== 1)) return false;
  for (let i = 0; i < T; i++)
    for (let j = 0; j < T; j++) {
      const v = value.data[i * T + j];
      if (j <= i ? v !== 0 : !(v <= -1e4)) return false;
    }
  return true;
}

/**
 * The attention ending in `root`, the Reshape of the merged heads to [B,T,D]; see the file's
 * comment for the pattern.
 */
export function matchAttention(index: GraphIndex, root: OnnxNode): Match | null {
  if (root.op !== "Reshape" || root.domain) return null;
  const out = index.info(root.outputs[0]);
  if (out?.shape.length !== 3 || out.dtype !== "float32") return null;
  const [B, T, D] = out.shape;
  // [B,H,T,K] → [B,T,H,K]
  const transpose = index.def(root.inputs[0], "Transpose");
  if (!transpose) return null;
  const heads = index.info(transpose.inputs[0])?.shape;
  if (heads?.length !== 4 || heads[0] !== B || heads[2] !== T) return null;
  const H = heads[1];
  const K = heads[3];
  if (H * K !== D || !same(transpose.attributes?.perm as number[] | undefined, [0, 2, 1, 3])) return null;
  const pv = batchedMatMul(index, transpose.inputs[0], B * H, [T, T, K]);
  const softmax = pv && !pv.transB && producedBy(index, pv.a, "Softmax");
  const v = pv && transposed(index, pv.b, [0, 2, 1, 3], [B, T, H, K]);
  const vSlice = v && qkvSlice(index, v.input, 2);
  if (!softmax || !vSlice || softmax[0].attributes?.axis !== -1) return null;
  const masked = index.def(softmax[0].inputs[0], "Add");
  if (!masked || !same(index.info(masked.outputs[0])?.shape, [B, H, T, T])) return null;
  for (const [scores, mask] of orders(masked)) {
    if (!isCausalMask(index, mask, T)) continue;
    const qk = batchedMatMul(index, scores, B * H, [T, K, T]);
    // kᵀ: [B,T,H,K] → [B,H,K,T], or → [B,H,T,K] read transposed by the product
    const k = qk && transposed(index, qk.b, qk.transB ? [0, 2, 1, 3] : [0, 2, 3, 1], [B, T, H, K]);
    const kSlice = k && qkvSlice(index, k.input, 1);
    // q·s, then heads first: the scale is a scalar constant.
    const q = qk && transposed(index, qk.a, [0, 2, 1, 3], [B, T, H, K]);
    const scaled = q && index.def(q.input, "Mul");
    if (!kSlice || !scaled) continue;
    for (const [sliced, s] of orders(scaled)) {
      const scale = index.scalar(s);
      const qSlice = scale === null ? null : qkvSlice(index, sliced, 0);
      if (!qSlice || qSlice.qkv !== kSlice.qkv || qSlice.qkv !== vSlice.qkv) continue;
      if (!same(index.info(qSlice.qkv)?.shape, [B, T, 3, H, K])) continue;
      // qkv = x·W + b through Reshapes, x [B,T,D] (flattened to rows), W [D, 3D], b [3D]
      const projected = producedBy(index, qSlice.qkv, "Add");
      if (!projected) continue;
      for (const [projection, bias] of orders(projected[0])) {
        const matmul = index.def(projection, "MatMul");
        if (!matmul || !same(index.info(bias)?.shape, [3 * D])) continue;
        const [rows, weights] = matmul.inputs;
        if (!same(index.info(weights)?.shape, [D, 3 * D])) continue;
        const xNodes = throughReshapes(index, rows).reshapes;
        const x = xNodes.length > 0 ? xNodes.at(-1)!.inputs[0] : rows;
        if (!same(index.info(x)?.shape, [B, T, D]) || !same(index.info(rows)?.shape, [B * T, D])) continue;
        const inside = [
          transpose,
          ...pv!.nodes,
          ...softmax,
          masked,
          ...v!.nodes,
          ...vSlice.nodes,
          ...qk!.nodes,
          ...k!.nodes,
          ...kSlice.nodes,
          ...q!.nodes,
          scaled,
          ...qSlice.nodes,
          ...projected,
          matmul,
          ...xNodes,
        ];
        return single(root, inside, {
          op: "Attention",
          domain: "com.microsoft",
          inputs: [x, weights, bias],
          outputs: root.outputs,
          attributes: { num_heads: H, unidirectional: 1, scale: { float: scale as number } },
        });
      }
    }
  }
  return null;
}
