/**
 * Host copies of arrays that ONNX programs returned (the session's output buffers, which jax-js
 * then copied into its heap). Reading such an array back, or feeding it to the next program,
 * takes the copy instead of reading jax-js's heap. Weak: a copy goes with its array.
 */
import type { JaxArray } from "../jax.ts";

export type HostArray = Float32Array | Float64Array | Int32Array | Uint8Array;

const copies = new WeakMap<object, HostArray>();

export function rememberHostCopy(array: JaxArray, data: HostArray): void {
  copies.set(array, data);
}

/** Arrays whose data lives on the host alone (see `hostOnlyArray`). */
const hostOnly = new WeakSet<object>();

/**
 * An array of `data`'s shape whose values only ONNX programs read: jax-js holds a lazy zeros of
 * that shape (no memory), and the program's input is `data` itself. For frozen weights that only
 * compiled steps read (a LoRA trainer's base: 2.3 GB of a 0.6B model's update not copied into
 * jax-js). A program that would run them on jax-js instead refuses (`isHostOnly`).
 */
export function hostOnlyArray(array: JaxArray, data: HostArray): JaxArray {
  copies.set(array, data);
  hostOnly.add(array);
  return array;
}

export function isHostOnly(array: JaxArray): boolean {
  return hostOnly.has(array);
}

/**
 * The array's data on the host. Consumes the array (as `dataSync` does). `remember`: keep the copy
 * read from jax-js's heap for the array's next read (programs' inputs: a policy's parameters are
 * read by every call, ~3.4 MB each time for the default model, and arrays never change).
 */
export function takeHostData(array: JaxArray, remember = false): HostArray {
  const known = copies.get(array);
  if (known) {
    array.dispose();
    return known;
  }
  const data = array.dataSync() as HostArray;
  if (remember) copies.set(array, data);
  return data;
}
