/**
 * Values of the traced program as the converter holds them. A value has a logical shape (the
 * jaxpr's) and a physical one of the same rank whose axes are 1 where the value is only a
 * broadcast ("virtual" axes: jax-js writes matmuls as broadcast + dot, and materialising those
 * broadcasts would write gigabytes per train step). The physical tensor may itself be pending: a
 * transpose of a source tensor, not yet emitted, so that a dot can read the source directly (with
 * a transposed-operand flag) and chains of transposes cost one node or none.
 *
 * Invariant: the non-unit axes of `phys`, in order, are the source's non-unit axes `srcAxes`
 * (indices into `srcShape`), and every non-unit source axis appears exactly once.
 */
import type { GraphBuilder } from "./graph.ts";
import type { OnnxDType } from "./proto.ts";

export interface Value {
  dtype: OnnxDType;
  /** Logical shape (the jaxpr's aval). */
  shape: number[];
  /** Physical shape: same rank, 1 on virtual (broadcast) axes. */
  phys: number[];
  src: string;
  srcShape: number[];
  srcAxes: number[];
  /** Name of the materialised physical tensor, once emitted. */
  materialised?: string;
  /** The scalar, for a literal of the program (weakly typed: it adopts its operands' dtype). */
  literal?: number;
}

const nonUnit = (shape: readonly number[]) => shape.flatMap((d, i) => (d !== 1 ? [i] : []));
const sameShape = (a: readonly number[], b: readonly number[]) =>
  a.length === b.length && a.every((d, i) => d === b[i]);
export const product = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);
const increasing = (axes: readonly number[]) => axes.every((a, i) => i === 0 || axes[i - 1] < a);

/** A value that is exactly the tensor `name`. */
export function tensorValue(name: string, shape: number[], dtype: OnnxDType): Value {
  return { dtype, shape, phys: [...shape], src: name, srcShape: [...shape], srcAxes: nonUnit(shape) };
}

/** Whether axis `i` is virtual (broadcast without data). */
export function isVirtual(value: Value, i: number): boolean {
  return value.phys[i] === 1 && value.shape[i] !== 1;
}

/**
 * Transposes the non-unit axes of `name` (shape `shape`) into the order `axes` (indices of its
 * non-unit axes), dropping the unit axes: Reshape (free) + one Transpose over non-unit axes.
 */
export function transposeNonUnit(
  g: GraphBuilder,
  name: string,
  shape: readonly number[],
  axes: readonly number[],
): string {
  const kept = nonUnit(shape);
  const squeezed =
    kept.length === shape.length ? name : g.node("Reshape", [name, g.ints(kept.map((a) => shape[a]))]);
  const position = new Map(kept.map((axis, k) => [axis, k]));
  return g.node("Transpose", [squeezed], { perm: axes.map((a) => position.get(a)!) });
}

/** Emits (once) the physical tensor of a value and returns its name. */
export function materialise(g: GraphBuilder, value: Value): string {
  if (value.materialised) return value.materialised;
  let name = value.src;
  let shape = value.srcShape;
  if (!increasing(value.srcAxes)) {
    // Squeeze unit axes first: ORT's Transpose is many times slower when its permutation moves
    // size-1 axes (measured: 8 ms instead of ~1 ms for a [64,4,64,32] attention operand).
    name = transposeNonUnit(g, name, shape, value.srcAxes);
    shape = value.srcAxes.map((a) => shape[a]);
  }
  if (!sameShape(shape, value.phys)) name = g.node("Reshape", [name, g.ints(value.phys)]);
  value.materialised = name;
  return name;
}

/** Emits the value at its full logical shape (Expand over virtual axes). */
export function expandFull(g: GraphBuilder, value: Value): string {
  const name = materialise(g, value);
  if (sameShape(value.phys, value.shape)) return name;
  return g.node("Expand", [name, g.ints(value.shape)]);
}

/** A value broadcast to its logical shape in the graph: a real tensor. */
export function expandedValue(g: GraphBuilder, value: Value): Value {
  return tensorValue(expandFull(g, value), value.shape, value.dtype);
}

/** Transpose by `perm` (out axis j = in axis perm[j]): no node, the source order changes. */
export function transposeValue(value: Value, perm: number[]): Value {
  const rankAmongNonUnit = new Map<number, number>();
  nonUnit(value.phys).forEach((axis, k) => {
    rankAmongNonUnit.set(axis, k);
  });
  const phys = perm.map((a) => value.phys[a]);
  const srcAxes = perm.flatMap((a) => (value.phys[a] !== 1 ? [value.srcAxes[rankAmongNonUnit.get(a)!]] : []));
  return { ...value, shape: perm.map((a) => value.shape[a]), phys, srcAxes, materialised: undefined };
}

/** jax-js broadcast: insert axes at `axis` of the output, expand 1-dims to `shape`; no node. */
export function broadcastValue(value: Value, shape: number[], axis: number[]): Value {
  const inserted = new Set(axis);
  const phys: number[] = [];
  let k = 0;
  for (let j = 0; j < shape.length; j++) phys.push(inserted.has(j) ? 1 : value.phys[k++]);
  return { ...value, shape: [...shape], phys, materialised: undefined };
}

/**
 * Groups a reshape old → new into runs of non-unit axes with equal products (unit axes belong to
 * no group). Null when the shapes do not factor that way (they always do for valid reshapes).
 */
function reshapeGroups(oldShape: number[], newShape: number[]): [number[], number[]][] | null {
  const a = nonUnit(oldShape);
  const b = nonUnit(newShape);
  const groups: [number[], number[]][] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const ga = [a[i]];
    const gb = [b[j]];
    let pa = oldShape[a[i++]];
    let pb = newShape[b[j++]];
    while (pa !== pb) {
      if (pa < pb) {
        if (i >= a.length) return null;
        ga.push(a[i]);
        pa *= oldShape[a[i++]];
      } else {
        if (j >= b.length) return null;
        gb.push(b[j]);
        pb *= newShape[b[j++]];
      }
    }
    groups.push([ga, gb]);
  }
  return i === a.length && j === b.length ? groups : null;
}

/** Reshape to `shape`, keeping virtual axes virtual where they form their own groups. */
export function reshapeValue(g: GraphBuilder, value: Value, shape: number[]): Value {
  const groups = reshapeGroups(value.shape, shape);
  const phys = shape.map(() => 1);
  let lazy = true;
  let mixed = groups === null;
  for (const [oldAxes, newAxes] of groups ?? []) {
    const virtual = oldAxes.map((a) => isVirtual(value, a));
    if (virtual.every((v) => v)) continue; // all broadcast: the new axes are broadcast too
    if (virtual.some((v) => v)) {
      mixed = true;
      break;
    }
    for (const a of newAxes) phys[a] = shape[a];
    if (oldAxes.length !== 1 || newAxes.length !== 1) lazy = false;
  }
  if (mixed) {
    const full = expandFull(g, value);
    return tensorValue(g.node("Reshape", [full, g.ints(shape)]), shape, value.dtype);
  }
  if (lazy) return { ...value, shape: [...shape], phys, materialised: undefined };
  const name = g.node("Reshape", [materialise(g, value), g.ints(phys)]);
  const result = tensorValue(name, phys, value.dtype);
  return { ...result, shape: [...shape] };
}
