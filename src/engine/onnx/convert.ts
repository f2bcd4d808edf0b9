/**
 * jax-js jaxpr → ONNX graph. One lowering per primitive; the program's consts become
 * initializers, literals deduplicated scalar initializers; broadcasts stay virtual and transposes
 * pending (values.ts) until an op needs the real tensor; every `dot` becomes one MatMul (dot.ts).
 * A primitive without a lowering throws `UnsupportedPrimitiveError` naming it, and the caller
 * runs that program on jax-js instead.
 */
import type { Jaxpr } from "../jax.ts";
import { type DotOptions, lowerDot } from "./dot.ts";
import { type FusionCounts, fuseGraph, type TensorInfo, withRankedScalars } from "./fuse.ts";
import { GraphBuilder } from "./graph.ts";
import { elementType, type OnnxDType, type OnnxGraph, type OnnxTensor } from "./proto.ts";
import {
  broadcastValue,
  expandedValue,
  expandFull,
  isVirtual,
  materialise,
  product,
  reshapeValue,
  tensorValue,
  transposeValue,
  type Value,
} from "./values.ts";

export class UnsupportedPrimitiveError extends Error {
  readonly primitive: string;
  constructor(primitive: string, detail = "") {
    super(
      primitive === "session"
        ? `ONNX Runtime refused the converted program: ${detail}`
        : `the ONNX backend has no lowering for jax-js primitive "${primitive}"${detail ? ` (${detail})` : ""}`,
    );
    this.name = "UnsupportedPrimitiveError";
    this.primitive = primitive;
  }
}

type Atom = Jaxpr["outs"][number];
type Eqn = Jaxpr["eqns"][number];

export function onnxDType(dtype: string, primitive = "input"): OnnxDType {
  if (dtype === "float32" || dtype === "int32" || dtype === "bool" || dtype === "float64") return dtype;
  throw new UnsupportedPrimitiveError(primitive, `dtype ${dtype}`);
}

export interface ConstInput {
  dtype: OnnxDType;
  shape: number[];
  data: Float32Array | Float64Array | Int32Array | Uint8Array;
}

export interface ConvertedProgram {
  graph: OnnxGraph;
  /** Patterns replaced by fused operators (fuse.ts), by operator. */
  fused: FusionCounts;
  inputs: { name: string; dtype: OnnxDType; shape: number[] }[];
  outputs: { name: string; dtype: OnnxDType; shape: number[] }[];
}

const UNARY: Record<string, string> = {
  neg: "Neg",
  reciprocal: "Reciprocal",
  floor: "Floor",
  ceil: "Ceil",
  sqrt: "Sqrt",
  exp: "Exp",
  log: "Log",
  sin: "Sin",
  cos: "Cos",
  erf: "Erf",
};
const BINARY: Record<string, string> = { add: "Add", mul: "Mul", min: "Min", max: "Max" };
const BOOL_BINARY: Record<string, string> = { add: "Or", mul: "And", max: "Or", min: "And" };
const REDUCE: Record<string, string> = {
  Add: "ReduceSum",
  Max: "ReduceMax",
  Min: "ReduceMin",
  Mul: "ReduceProd",
};

/**
 * The fusions AGENTRL_ONNX_FUSE asks for (fuse.ts): none when it is "0" or "off" (to measure what
 * fusion buys, or to rule it out), else all but those it names with a minus
 * (`-Attention,-FastGelu`, for A/B measurements of one).
 */
function fusionSetting(): { enabled: boolean; skip: Set<string> } {
  const raw = process.env.AGENTRL_ONNX_FUSE ?? "";
  const parts = raw.split(",").map((part) => part.trim());
  return {
    enabled: raw !== "0" && raw !== "off",
    skip: new Set(parts.flatMap((part) => (part.startsWith("-") ? [part.slice(1)] : []))),
  };
}

/** Converts a (flattened) jaxpr whose first `consts.length` inputs are the given constants. */
export function convertJaxpr(
  jaxpr: Jaxpr,
  consts: ConstInput[],
  options: { fuse?: boolean } & DotOptions = {},
): ConvertedProgram {
  const g = new GraphBuilder();
  const values = new Map<unknown, Value>();
  // Shapes and dtypes of the tensors the program's values live in, for the fusion checks.
  const info = new Map<string, TensorInfo>();
  const record = (value: Value) => {
    if (!info.has(value.src)) info.set(value.src, { shape: value.srcShape, dtype: value.dtype });
  };
  const inputs: ConvertedProgram["inputs"] = [];
  jaxpr.inBinders.forEach((binder, index) => {
    const shape = [...binder.aval.shape];
    const dtype = onnxDType(binder.aval.dtype);
    if (index < consts.length) {
      const name = g.fresh("const");
      const c = consts[index];
      g.initializer({ name, dtype, shape, data: c.data } as OnnxTensor);
      values.set(binder, tensorValue(name, shape, dtype));
    } else {
      const name = `in${inputs.length}`;
      inputs.push({ name, dtype, shape });
      g.inputs.push({ name, dtype, shape });
      values.set(binder, tensorValue(name, shape, dtype));
    }
    record(values.get(binder)!);
  });
  const read = (atom: Atom): Value => {
    if ("value" in atom && !values.has(atom)) {
      const dtype = onnxDType(atom.aval.dtype, "literal");
      const shape = [...atom.aval.shape];
      const name = g.constant(dtype, shape, Array(product(shape)).fill(atom.value));
      return { ...tensorValue(name, shape, dtype), literal: atom.value };
    }
    const value = values.get(atom);
    if (!value) throw new Error(`ONNX conversion: ${String(atom)} used before it is defined`);
    return value;
  };
  for (const eqn of jaxpr.eqns) {
    const out = lowerEqn(g, eqn, eqn.inputs.map(read), options);
    eqn.outBinders.forEach((binder, i) => {
      values.set(binder, out[i]);
      record(out[i]);
    });
  }
  const outputs: ConvertedProgram["outputs"] = [];
  const taken = new Set([...inputs.map((input) => input.name), ...g.initializers.map((t) => t.name)]);
  for (const atom of jaxpr.outs) {
    const value = read(atom);
    let name = expandFull(g, value);
    // Graph outputs must be distinct node outputs (not inputs, initializers or a repeat).
    if (taken.has(name)) name = g.node("Identity", [name]);
    taken.add(name);
    outputs.push({ name, dtype: value.dtype, shape: value.shape });
    g.outputs.push({ name, dtype: value.dtype, shape: value.shape });
  }
  const fusion = fusionSetting();
  const { graph, counts } =
    (options.fuse ?? fusion.enabled)
      ? fuseGraph(g.graph(), info, fusion.skip)
      : { graph: g.graph(), counts: {} };
  return { graph: withRankedScalars(graph, info), fused: counts, inputs, outputs };
}

function lowerEqn(g: GraphBuilder, eqn: Eqn, args: Value[], dot: DotOptions): Value[] {
  const primitive = eqn.primitive as string;
  const params = eqn.params;
  const outAval = eqn.outBinders[0].aval;
  const outShape = [...outAval.shape];
  const outDType = (): OnnxDType => onnxDType(outAval.dtype, primitive);
  const physOut = (shapes: number[][]): number[] =>
    outShape.map((_, i) => {
      let d = 1;
      for (const s of shapes) {
        const j = s.length - outShape.length + i;
        if (j >= 0 && s[j] !== 1) d = s[j];
      }
      return d;
    });
  const elementwise = (op: string, operands: Value[], attributes?: Record<string, never>): Value => {
    // Weakly typed literals take the dtype of the arrays they meet (x·2.0 on float64 stays float64).
    // Where's condition is no operand of the value type; with two literal branches they take the output's.
    const typed = op === "Where" ? operands.slice(1) : operands;
    const target =
      typed.find((v) => v.literal === undefined)?.dtype ?? (op === "Where" ? outDType() : undefined);
    const names = operands.map((v, i) =>
      v.literal !== undefined && target && v.dtype !== target && !(op === "Where" && i === 0)
        ? g.constant(target, v.phys, Array(product(v.phys)).fill(v.literal))
        : materialise(g, v),
    );
    const phys = physOut(operands.map((v) => v.phys));
    const name = g.node(op, names, attributes);
    return { ...tensorValue(name, phys, outDType()), shape: outShape };
  };
  switch (primitive) {
    case "add":
    case "mul":
    case "min":
    case "max": {
      const op = args[0].dtype === "bool" ? BOOL_BINARY[primitive] : BINARY[primitive];
      return [elementwise(op, args)];
    }
    case "neg":
    case "reciprocal":
    case "floor":
    case "ceil":
    case "sqrt":
    case "exp":
    case "log":
    case "sin":
    case "cos":
    case "erf":
      return [elementwise(UNARY[primitive], args)];
    case "stop_gradient":
      return [args[0]];
    case "cast": {
      const to = onnxDType(params.dtype, primitive);
      if (to === args[0].dtype) return [{ ...args[0], shape: outShape }];
      const name = g.node("Cast", [materialise(g, args[0])], { to: elementType(to) });
      return [{ ...tensorValue(name, [...args[0].phys], to), shape: outShape }];
    }
    case "compare": {
      const op = params.op as string;
      if (op === "less") return [elementwise("Less", args)];
      if (op === "equal") return [elementwise("Equal", args)];
      if (op === "less_equal") return [elementwise("LessOrEqual", args)];
      if (op === "not_equal") {
        const equal = elementwise("Equal", args);
        return [elementwise("Not", [equal])];
      }
      throw new UnsupportedPrimitiveError(primitive, `op ${op}`);
    }
    case "where":
      return [elementwise("Where", args)];
    case "mod": {
      if (args[0].dtype === "bool") throw new UnsupportedPrimitiveError(primitive, "bool");
      return [elementwise("Mod", args, { fmod: 1 } as never)];
    }
    case "idiv": {
      if (args[0].dtype !== "int32") throw new UnsupportedPrimitiveError(primitive, args[0].dtype);
      return [elementwise("Div", args)];
    }
    case "reduce":
      return [lowerReduce(g, args[0], params.op as string, params.axis as number[], outShape)];
    case "dot":
      return [lowerDot(g, args[0], args[1], outShape, { weightsFirst: dot.weightsFirst })];
    case "transpose":
      return [transposeValue(args[0], params.perm as number[])];
    case "broadcast":
      return [broadcastValue(args[0], params.shape as number[], params.axis as number[])];
    case "reshape":
      return [reshapeValue(g, args[0], outShape)];
    case "shrink":
      return [lowerShrink(g, args[0], params.slice as [number, number][], outShape)];
    case "pad":
      return [lowerPad(g, args[0], params.width as [number, number][], outShape)];
    case "flip": {
      const x = expandedValue(g, args[0]);
      const axes = params.axis as number[];
      const name = g.node("Slice", [
        materialise(g, x),
        g.ints(axes.map(() => -1)),
        g.ints(axes.map((a) => -(x.shape[a] + 1))),
        g.ints(axes),
        g.ints(axes.map(() => -1)),
      ]);
      return [tensorValue(name, outShape, x.dtype)];
    }
    case "concatenate": {
      const names = args.map((v) => expandFull(g, v));
      return [tensorValue(g.node("Concat", names, { axis: params.axis as number }), outShape, outDType())];
    }
    case "split": {
      // concatenate's transpose (its gradient): one Slice per part.
      const axis = params.axis as number;
      let start = 0;
      return (params.sizes as number[]).map((size, i) => {
        const slice = args[0].shape.map((d, j): [number, number] =>
          j === axis ? [start, start + size] : [0, d],
        );
        start += size;
        return lowerShrink(g, args[0], slice, [...eqn.outBinders[i].aval.shape]);
      });
    }
    case "gather":
      return [
        lowerGather(g, args[0], args.slice(1), params.axis as number[], params.outDim as number, outShape),
      ];
    default:
      throw new UnsupportedPrimitiveError(primitive);
  }
}

function lowerReduce(g: GraphBuilder, x: Value, op: string, axes: number[], outShape: number[]): Value {
  const onnxOp = REDUCE[op];
  if (!onnxOp || x.dtype === "bool") throw new UnsupportedPrimitiveError("reduce", `op ${op} on ${x.dtype}`);
  // Reducing a broadcast axis: a sum is scaled by its length, a max/min is unchanged.
  const virtualCount = product(axes.filter((a) => isVirtual(x, a)).map((a) => x.shape[a]));
  const keep = x.phys.filter((_, i) => !axes.includes(i));
  let name =
    leadingSum(g, x, onnxOp, axes, keep) ??
    g.node(onnxOp, [materialise(g, x), g.ints(axes)], { keepdims: 0 });
  if (virtualCount !== 1 && op === "Add") name = g.node("Mul", [name, g.scalar(x.dtype, virtualCount)]);
  if (virtualCount !== 1 && op === "Mul")
    throw new UnsupportedPrimitiveError("reduce", "product over a broadcast axis");
  return { ...tensorValue(name, keep, x.dtype), shape: outShape };
}

/**
 * A float32 sum over leading axes (a bias's gradient: Σ over [B, T] of [B, T, N]) as a product with
 * a row of ones, [1, R]·[R, C]: ONNX Runtime's ReduceSum over leading axes is a strided pass, about
 * 1.7x the GEMV's time at [2048, 512]. Null where it does not apply (other ops or axes, few rows).
 */
function leadingSum(g: GraphBuilder, x: Value, op: string, axes: number[], keep: number[]): string | null {
  const sorted = [...axes].sort((a, b) => a - b);
  const leading = sorted.every((axis, i) => axis === i) && sorted.length < x.phys.length;
  const rows = product(sorted.map((axis) => x.phys[axis]));
  if (op !== "ReduceSum" || x.dtype !== "float32" || !leading || rows < 256) return null;
  const columns = product(keep);
  const matrix = g.node("Reshape", [materialise(g, x), g.ints([rows, columns])]);
  const sum = g.node("MatMul", [g.constant("float32", [1, rows], new Float32Array(rows).fill(1)), matrix]);
  return g.node("Reshape", [sum, g.ints(keep)]);
}

function lowerShrink(g: GraphBuilder, x: Value, slice: [number, number][], outShape: number[]): Value {
  const axes: number[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  slice.forEach(([start, end], axis) => {
    if (x.phys[axis] === 1) return; // unit or broadcast: nothing to cut physically
    if (start === 0 && end === x.shape[axis]) return;
    axes.push(axis);
    starts.push(start);
    ends.push(end);
  });
  const phys = x.phys.map((d, i) => (d === 1 ? 1 : outShape[i]));
  if (axes.length === 0) return { ...x, shape: outShape, phys, materialised: undefined };
  const name = g.node("Slice", [materialise(g, x), g.ints(starts), g.ints(ends), g.ints(axes)]);
  return { ...tensorValue(name, phys, x.dtype), shape: outShape };
}

function lowerPad(g: GraphBuilder, input: Value, width: [number, number][], outShape: number[]): Value {
  const touched = width.some(([lo, hi], axis) => (lo !== 0 || hi !== 0) && input.phys[axis] === 1);
  const x = touched ? expandedValue(g, input) : input;
  let name = materialise(g, x);
  let shape = [...x.phys];
  if (width.some(([lo, hi]) => lo < 0 || hi < 0)) {
    const axes = width.flatMap(([lo, hi], axis) => (lo < 0 || hi < 0 ? [axis] : []));
    const starts = axes.map((a) => Math.max(0, -width[a][0]));
    const ends = axes.map((a) => shape[a] - Math.max(0, -width[a][1]));
    name = g.node("Slice", [name, g.ints(starts), g.ints(ends), g.ints(axes)]);
    shape = shape.map((d, a) => (axes.includes(a) ? ends[axes.indexOf(a)] - starts[axes.indexOf(a)] : d));
  }
  const lo = width.map(([l]) => Math.max(0, l));
  const hi = width.map(([, h]) => Math.max(0, h));
  if (lo.some((p) => p > 0) || hi.some((p) => p > 0)) name = g.node("Pad", [name, g.ints([...lo, ...hi])]);
  const phys = shape.map((d, a) => d + lo[a] + hi[a]);
  return { ...tensorValue(name, phys, x.dtype), shape: outShape };
}

/**
 * jax-js gather: x's axes `axis` are indexed by the (broadcast) index arrays; the output is x's
 * other axes with the index shape inserted at `outDim`. Lowered as: move the gathered axes first,
 * merge them and linearise the indices (one index: as is), Gather on axis 0, move the index axes
 * to `outDim`.
 */
function lowerGather(
  g: GraphBuilder,
  xValue: Value,
  indices: Value[],
  axis: number[],
  outDim: number,
  outShape: number[],
): Value {
  const x = expandedValue(g, xValue);
  const rest = x.shape.map((_, i) => i).filter((i) => !axis.includes(i));
  const perm = [...axis, ...rest];
  let source = materialise(g, x);
  if (perm.some((a, i) => a !== i)) source = g.node("Transpose", [source], { perm });
  const gatheredDims = axis.map((a) => x.shape[a]);
  const restDims = rest.map((a) => x.shape[a]);
  let index: string;
  if (axis.length === 1) index = expandFull(g, indices[0]);
  else {
    source = g.node("Reshape", [source, g.ints([product(gatheredDims), ...restDims])]);
    let linear: string | null = null;
    indices.forEach((idx, k) => {
      const stride = product(gatheredDims.slice(k + 1));
      let term = materialise(g, idx);
      if (stride !== 1) term = g.node("Mul", [term, g.scalar("int32", stride)]);
      linear = linear === null ? term : g.node("Add", [linear, term]);
    });
    // Broadcast to the full index shape (the indices may be broadcast against each other).
    const indexShape = outShape.slice(outDim, outDim + outShape.length - rest.length);
    index = g.node("Expand", [linear!, g.ints(indexShape)]);
  }
  const gathered = g.node("Gather", [source, index], { axis: 0 });
  const indexRank = outShape.length - rest.length;
  if (outDim === 0) return tensorValue(gathered, outShape, x.dtype);
  // gathered is [I…, rest…]; the output wants rest[:outDim], I…, rest[outDim:].
  const order = [
    ...rest.slice(0, outDim).map((_, k) => indexRank + k),
    ...Array.from({ length: indexRank }, (_, k) => k),
    ...rest.slice(outDim).map((_, k) => indexRank + outDim + k),
  ];
  return tensorValue(g.node("Transpose", [gathered], { perm: order }), outShape, x.dtype);
}
