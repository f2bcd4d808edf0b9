/**
 * Parameter trees: plain nested objects and lists whose leaves are arrays (JAX pytrees). A model's
 * params, gradients and optimizer moments are all trees of the same shape. Helpers here name every
 * leaf by its dotted path (`blocks.0.attn.wqkv`), which is how checkpoints store them.
 */
import { type DTypeName, dtype, type JaxArray, tree as jaxTree, np } from "./jax.ts";

/** A tree of arrays. Use `type` aliases (not interfaces) for concrete trees so they stay assignable. */
export type ParamTree = JaxArray | ParamTree[] | { [key: string]: ParamTree };

export type HostDType = DTypeName;
export type HostData =
  | Float32Array<ArrayBuffer>
  | Float64Array<ArrayBuffer>
  | Int32Array<ArrayBuffer>
  | Uint32Array<ArrayBuffer>;

/** An array copied to JavaScript memory. */
export interface HostTensor {
  dtype: HostDType;
  shape: number[];
  data: HostData;
}

/** A jax value: a concrete array or, inside jit/grad, a tracer standing for one. */
function isArrayLeaf(value: unknown): value is JaxArray {
  return (
    value instanceof np.Array ||
    (typeof value === "object" && value !== null && "aval" in value && "ref" in value)
  );
}

/** A leaf of a device tree (a jax array) or of a host tree (a `HostTensor`). */
function isLeaf(value: unknown): boolean {
  return (
    isArrayLeaf(value) || (typeof value === "object" && value !== null && "dtype" in value && "data" in value)
  );
}

/**
 * Every leaf (jax array or host tensor) with its dotted path, in a deterministic order (object
 * keys in insertion order, list items by index).
 */
export function flattenTree<T = JaxArray>(tree: unknown, prefix = ""): [string, T][] {
  const out: [string, T][] = [];
  const visit = (node: unknown, path: string) => {
    if (isLeaf(node)) {
      out.push([path, node as T]);
    } else if (Array.isArray(node)) {
      for (const [i, child] of node.entries()) visit(child, path ? `${path}.${i}` : String(i));
    } else if (node && typeof node === "object") {
      for (const [key, child] of Object.entries(node)) {
        if (key.includes(".")) throw new Error(`tree key "${key}" must not contain "."`);
        visit(child, path ? `${path}.${key}` : key);
      }
    } else {
      throw new Error(`tree leaf at "${path}" is not an array: ${String(node)}`);
    }
  };
  visit(tree, prefix);
  return out;
}

/**
 * Rebuilds a nested tree from dotted paths. A node whose keys are exactly 0..n-1 becomes a list
 * (so `blocks.0`, `blocks.1` round-trip to `blocks: [..]`).
 */
export function unflattenTree<T>(entries: Iterable<[string, T]>): unknown {
  const root: Record<string, unknown> = {};
  for (const [path, value] of entries) {
    const parts = path.split(".");
    let node = root;
    for (let i = 0; i < parts.length - 1; i++) {
      const next = node[parts[i]];
      if (next === undefined) node[parts[i]] = {};
      else if (typeof next !== "object" || isLeaf(next)) throw new Error(`tree path conflict at "${path}"`);
      node = node[parts[i]] as Record<string, unknown>;
    }
    const last = parts[parts.length - 1];
    if (last in node) throw new Error(`duplicate tree path "${path}"`);
    node[last] = value;
  }
  const toLists = (node: unknown): unknown => {
    if (!node || typeof node !== "object" || isLeaf(node)) return node;
    const record = node as Record<string, unknown>;
    const keys = Object.keys(record);
    const isList = keys.length > 0 && keys.every((key, i) => key === String(i));
    if (isList) return keys.map((key) => toLists(record[key]));
    return Object.fromEntries(keys.map((key) => [key, toLists(record[key])]));
  };
  return toLists(root);
}

/** Total number of scalars in the tree. */
export function countParams(tree: ParamTree): number {
  return flattenTree(tree).reduce((total, [, leaf]) => total + leaf.size, 0);
}

/** Takes one more reference to every leaf (jax-js ownership: pass `refTree(p)` to keep `p`). */
export function refTree<T extends ParamTree>(tree: T): T {
  return jaxTree.ref(tree);
}

/** Releases one reference to every leaf. */
export function disposeTree(tree: ParamTree | null | undefined): void {
  jaxTree.dispose(tree);
}

/** Applies `fn` to every leaf (and the matching leaves of `rest`), keeping the structure. */
export function mapTree<T extends ParamTree>(
  fn: (...leaves: JaxArray[]) => JaxArray,
  tree: T,
  ...rest: T[]
): T {
  return jaxTree.map(fn, tree, ...rest) as T;
}

function toHostDType(dtype: string): HostDType {
  if (dtype === "float32" || dtype === "float64" || dtype === "int32" || dtype === "uint32") return dtype;
  throw new Error(`unsupported dtype for host transfer: ${dtype}`);
}

/** Copies one array to host memory. Consumes `array`. */
export async function arrayToHost(array: JaxArray): Promise<HostTensor> {
  const shape = [...array.shape];
  const dtype = toHostDType(array.dtype);
  const data = (await array.data()) as HostData;
  // Reads of small arrays may alias jax-js memory: copy so the tensor owns its buffer.
  return { dtype, shape, data: data.slice() as HostData };
}

/** Copies every leaf to host memory, keyed by path. Does not consume the tree. */
export async function treeToHost(tree: ParamTree): Promise<Record<string, HostTensor>> {
  const out: Record<string, HostTensor> = {};
  for (const [path, leaf] of flattenTree(tree)) out[path] = await arrayToHost(leaf.ref);
  return out;
}

/** Creates a device array from a host tensor. */
export function arrayFromHost(tensor: HostTensor): JaxArray {
  return np.array(tensor.data, { shape: tensor.shape, dtype: dtype(tensor.dtype) });
}

/** Builds a tree of device arrays from host tensors keyed by path. */
export function treeFromHost<T extends ParamTree>(tensors: Record<string, HostTensor>): T {
  return unflattenTree(Object.entries(tensors).map(([path, t]) => [path, arrayFromHost(t)])) as T;
}
