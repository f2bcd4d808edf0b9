/**
 * jax-js's `dot` (sum(x·y) over the last axis, leading axes broadcast NumPy-style) as one (batched)
 * MatMul. Each leading output axis is classified from the operands' physical shapes: batch (both
 * have it), M (only x), N (only y), or unit/virtual (neither: the output is a broadcast there).
 * Operands are read from their source tensors; when the source's layout differs from the one
 * MatMul needs only by the contracted axis's position, Microsoft's FusedMatMul reads it with a
 * transpose flag instead of a Transpose node (the weight-gradient dots xᵀ·g and the attention
 * backward); otherwise one Transpose of the source.
 */
import type { GraphBuilder } from "./graph.ts";
import { expandedValue, isVirtual, product, transposeNonUnit, type Value } from "./values.ts";

type AxisKind = "batch" | "m" | "n" | "unit";

const increasing = (axes: readonly number[]) => axes.every((a, i) => i === 0 || axes[i - 1] < a);

/** Pads a value's shapes with leading unit axes to `rank` (a view; no node). */
function withRank(value: Value, rank: number): Value {
  const pad = rank - value.shape.length;
  if (pad === 0) return value;
  const ones = Array(pad).fill(1);
  return { ...value, shape: [...ones, ...value.shape], phys: [...ones, ...value.phys] };
}

/** The source axis of each non-unit physical axis of a value. */
function sourceAxisOf(value: Value): Map<number, number> {
  const map = new Map<number, number>();
  let k = 0;
  value.phys.forEach((d, axis) => {
    if (d !== 1) map.set(axis, value.srcAxes[k++]);
  });
  return map;
}

/**
 * The operand as a 3-D (or 2-D without batch axes) tensor [Bp, outer, K] or, with `trans`,
 * [Bp, K, outer], reading the source directly when its axis order allows.
 * `first`: x (layout [B, M, K] plain, [B, K, M] transposed); else y ([B, K, N] plain, [B, N, K] transposed).
 */
function operand(
  g: GraphBuilder,
  value: Value,
  batchAxes: number[],
  outerAxes: number[],
  kAxis: number,
  first: boolean,
): { name: string; trans: boolean } {
  const source = sourceAxisOf(value);
  const src = (axes: number[]) => axes.filter((a) => value.phys[a] !== 1).map((a) => source.get(a)!);
  const b = src(batchAxes);
  const o = src(outerAxes);
  const k = src([kAxis]);
  const Bp = product(batchAxes.map((a) => value.phys[a]));
  const Op = product(outerAxes.map((a) => value.phys[a]));
  const K = value.phys[kAxis];
  const shape3 = (middle: number, last: number) =>
    batchAxes.length > 0 ? [Bp, middle, last] : [middle, last];
  // MatMul's own layouts: x [B, M, K], y [B, K, N].
  const plainOrder = first ? [...b, ...o, ...k] : [...b, ...k, ...o];
  const transOrder = first ? [...b, ...k, ...o] : [...b, ...o, ...k];
  const plainShape = first ? shape3(Op, K) : shape3(K, Op);
  const transShape = first ? shape3(K, Op) : shape3(Op, K);
  const reshape = (name: string, shape: number[]) => g.node("Reshape", [name, g.ints(shape)]);
  if (increasing(plainOrder)) return { name: reshape(value.src, plainShape), trans: false };
  if (increasing(transOrder)) return { name: reshape(value.src, transShape), trans: true };
  // Otherwise one Transpose: to whichever layout keeps the source's innermost axis innermost
  // (ORT's Transpose copies contiguous rows then; moving the innermost axis is ~3x slower).
  const innermost = Math.max(...value.srcAxes);
  const trans = transOrder.at(-1) === innermost && plainOrder.at(-1) !== innermost;
  const transposed = transposeNonUnit(g, value.src, value.srcShape, trans ? transOrder : plainOrder);
  return { name: reshape(transposed, trans ? transShape : plainShape), trans };
}

/**
 * Rows at most this many make a product with no batch axes `weightsFirst` (`DotOptions`).
 */
const SMALL_ROWS = 16;

export interface DotOptions {
  /**
   * A product of a few rows by a large matrix (x [M,K] · Wᵀ, M ≤ SMALL_ROWS, no batch axes) is
   * computed as W · xᵀ, the large operand first, and viewed transposed: MLAS then reads the large
   * matrix as it lies where, as the second operand, it would pack a copy of it at every run. Fed
   * weights of Qwen3-0.6B's feed-forward shape (28 × [3072,1024] and [1024,3072]) at 8 rows: 27.7 ms
   * against 50.8 ms (ORT 1.30, 2 threads, quiet cores); at 1 row 22.2 against 24.6 ms. For the hf
   * engine's decode steps (the lab's programs keep their kernels, whose results are committed).
   */
  weightsFirst?: boolean;
}

/** Lowers `dot x y` with output logical shape `outShape`. */
export function lowerDot(
  g: GraphBuilder,
  xIn: Value,
  yIn: Value,
  outShape: number[],
  options: DotOptions = {},
): Value {
  const rank = outShape.length + 1;
  let x = withRank(xIn, rank);
  let y = withRank(yIn, rank);
  const kAxis = rank - 1;
  // A contraction over a broadcast axis is rare (never in the policy's programs): expand it.
  if (isVirtual(x, kAxis)) x = withRank(expandedValue(g, x), rank);
  if (isVirtual(y, kAxis)) y = withRank(expandedValue(g, y), rank);
  const kinds: AxisKind[] = outShape.map((_, i) => {
    const px = x.phys[i] !== 1;
    const py = y.phys[i] !== 1;
    return px && py ? "batch" : px ? "m" : py ? "n" : "unit";
  });
  const axesOf = (kind: AxisKind) => kinds.flatMap((k, i) => (k === kind ? [i] : []));
  // The product's last axis is n's: when the output's innermost axis is an m axis, compute the
  // transposed product yᵀ·xᵀ instead, so that the output's eventual layout keeps it innermost.
  const lastOuter = kinds.findLast((kind) => kind === "m" || kind === "n");
  const extent = (kind: AxisKind) => product(axesOf(kind).map((i) => outShape[i]));
  const weightsFirst =
    options.weightsFirst === true &&
    axesOf("batch").length === 0 &&
    extent("m") <= SMALL_ROWS &&
    extent("n") > SMALL_ROWS;
  const swap = weightsFirst || lastOuter === "m";
  if (swap) [x, y] = [y, x];
  const [batch, m, n] = swap
    ? [axesOf("batch"), axesOf("n"), axesOf("m")]
    : [axesOf("batch"), axesOf("m"), axesOf("n")];
  const a = operand(g, x, batch, m, kAxis, true);
  const b = operand(g, y, batch, n, kAxis, false);
  const flags = { transA: a.trans ? 1 : 0, transB: b.trans ? 1 : 0 };
  const result = !(a.trans || b.trans)
    ? g.node("MatMul", [a.name, b.name])
    : g.node("FusedMatMul", [a.name, b.name], flags, "com.microsoft");
  // The product's axes are [batch…, m…, n…] (grouped); give each its own axis, then view the
  // output in the jaxpr's axis order (a pending transpose: often undone by the consumer).
  const ordered = [...batch, ...m, ...n];
  const size = (axes: number[]) => product(axes.map((i) => outShape[i]));
  const resultShape = batch.length > 0 ? [size(batch), size(m), size(n)] : [size(m), size(n)];
  const split = [batch, m, n].some((axes) => axes.length > 1);
  const orderedShape = ordered.map((i) => outShape[i]);
  const src = split ? g.node("Reshape", [result, g.ints(orderedShape)]) : result;
  const srcShape = split ? orderedShape : resultShape;
  // The source axis holding the k-th entry of `ordered` (every entry has size > 1).
  const sourceAxes = srcShape.flatMap((d, i) => (d !== 1 ? [i] : []));
  const position = new Map(ordered.map((axis, k) => [axis, sourceAxes[k]]));
  const phys = outShape.map((d, i) => (kinds[i] === "unit" ? 1 : d));
  const srcAxes = outShape.flatMap((_, i) => (kinds[i] !== "unit" ? [position.get(i)!] : []));
  return { dtype: xIn.dtype, shape: [...outShape], phys, src, srcShape, srcAxes };
}
