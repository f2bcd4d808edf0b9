/**
 * A graph under construction: nodes in topological order, initializers deduplicated by content
 * (the int64 shapes and axes every Reshape/Slice/Reduce needs, scalar literals), fresh names.
 */
import type { AttributeValue, OnnxDType, OnnxGraph, OnnxNode, OnnxTensor, OnnxValueInfo } from "./proto.ts";

export class GraphBuilder {
  readonly nodes: OnnxNode[] = [];
  readonly initializers: OnnxTensor[] = [];
  readonly inputs: OnnxValueInfo[] = [];
  readonly outputs: OnnxValueInfo[] = [];
  #next = 0;
  #constants = new Map<string, string>();

  fresh(prefix = "v"): string {
    return `${prefix}${this.#next++}`;
  }

  /** Adds a node with one output and returns the output's name. */
  node(op: string, inputs: string[], attributes?: Record<string, AttributeValue>, domain?: string): string {
    const output = this.fresh();
    this.nodes.push({ op, inputs, outputs: [output], attributes, domain });
    return output;
  }

  /** A constant tensor (deduplicated by dtype, shape and content). */
  constant(dtype: OnnxDType, shape: number[], values: ArrayLike<number | bigint>): string {
    const key = `${dtype}|${shape.join(",")}|${Array.from(values as ArrayLike<number>).join(",")}`;
    const known = this.#constants.get(key);
    if (known) return known;
    const name = this.fresh("c");
    this.initializers.push({ name, dtype, shape, data: typedArray(dtype, values) });
    this.#constants.set(key, name);
    return name;
  }

  /** An int64 vector (shapes, axes, starts, pads…). */
  ints(values: readonly number[]): string {
    return this.constant("int64", [values.length], values.map(BigInt));
  }

  /** A scalar of `dtype`. */
  scalar(dtype: OnnxDType, value: number): string {
    return this.constant(dtype, [], [dtype === "int64" ? BigInt(value) : value] as never);
  }

  /** A named initializer with given data (consts of the traced program). */
  initializer(tensor: OnnxTensor): void {
    this.initializers.push(tensor);
  }

  graph(): OnnxGraph {
    return { nodes: this.nodes, initializers: this.initializers, inputs: this.inputs, outputs: this.outputs };
  }
}

export function typedArray(
  dtype: OnnxDType,
  values: ArrayLike<number | bigint>,
): Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array {
  switch (dtype) {
    case "float32":
      return Float32Array.from(values as ArrayLike<number>);
    case "float64":
      return Float64Array.from(values as ArrayLike<number>);
    case "int32":
      return Int32Array.from(values as ArrayLike<number>);
    case "int64":
      return BigInt64Array.from(Array.from(values, (v) => BigInt(v)));
    case "bool":
      return Uint8Array.from(values as ArrayLike<number>, (v) => (v ? 1 : 0));
  }
}
