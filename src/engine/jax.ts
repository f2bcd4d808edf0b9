/**
 * The one module that imports @jax-js/jax. Everything else imports the library from here, so the
 * worker shim in `preload.ts` is installed before jax-js creates its wasm backend, and a faster
 * backend could replace jax-js behind this file.
 */
import "./preload.ts";
import type * as Jax from "@jax-js/jax";
import { restoreMemoryConstructor } from "./preload.ts";

// A dynamic import, so no import sorting can hoist jax-js above preload.ts: jax-js builds its wasm
// backend (and decides whether to use workers) while its module is evaluated.
const jax: typeof Jax = await import("@jax-js/jax");
restoreMemoryConstructor();

export { jax };
export const np = jax.numpy;
export const nn = jax.nn;
export const random = jax.random;
export const tree = jax.tree;
export type JaxArray = Jax.Array;
export type DType = Jax.DType;
export type Jaxpr = Jax.Jaxpr;

/** Dtype names this project uses, mapped to jax-js's DType values. */
export type DTypeName = "float32" | "float64" | "int32" | "uint32";
const DTYPES: Record<DTypeName, Jax.DType> = {
  float32: np.float32,
  float64: np.float64,
  int32: np.int32,
  uint32: np.uint32,
};

/** The jax-js DType of a dtype name. */
export function dtype(name: DTypeName): Jax.DType {
  const value = DTYPES[name];
  if (value === undefined)
    throw new Error(`unknown dtype "${name}"; valid: ${Object.keys(DTYPES).join(", ")}`);
  return value;
}
export { wasmMemoryBytes, workerPoolEnabled } from "./preload.ts";
