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
