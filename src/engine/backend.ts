/**
 * Which engine executes the policy's compiled programs (the train step, scoring, prefill and
 * decode): `onnx` (the default) traces them with jax-js and runs them in ONNX Runtime's native CPU
 * kernels (onnx/), `jax` runs them on jax-js's own WebAssembly kernels. Checkpoints, parameters
 * and results are the same on both; only speed differs (and float rounding: see onnx/README).
 *
 * Chosen by `AGENTRL_ENGINE=onnx|jax` when the process starts (it also decides whether jax-js
 * starts its worker pool: only for `jax`), or by `setEngine` before the first program is built
 * (the `engine` field of the command configs).
 */
import { jax } from "./jax.ts";
import { onnxJit } from "./onnx/jit.ts";
import { engineFromEnvironment } from "./preload.ts";

export const ENGINES = ["onnx", "jax"] as const;
export type EngineName = (typeof ENGINES)[number];

let current: EngineName = engineFromEnvironment;

/** The engine new programs are compiled for. */
export function engineName(): EngineName {
  return current;
}

/** Validates an engine name (config fields), naming the valid values. */
export function parseEngine(value: unknown, field = "engine"): EngineName {
  if (typeof value === "string" && (ENGINES as readonly string[]).includes(value)) return value as EngineName;
  throw new Error(`${field} must be one of ${ENGINES.join(", ")}, got ${JSON.stringify(value)}`);
}

/** Selects the engine for programs compiled from now on. */
export function setEngine(name: EngineName): void {
  current = parseEngine(name);
}

/** A compiled program with jax-js's `jit` contract: consumes its arguments, `dispose()` frees it. */
export type Compiled<F> = F & { dispose(): void };

/**
 * Compiles `f` (pure, array trees in and out) for the current engine. `shareKey`: programs with
 * the same key compute the same function (it names all `f` closes over), so on ONNX they share
 * their sessions across the objects that build them (each policy's decode programs).
 * `maxSessions`: input shapes kept compiled on ONNX (default 8), for programs called with many.
 */
export function compileProgram<F extends (...args: never[]) => unknown>(
  f: F,
  name: string,
  options: { shareKey?: string; maxSessions?: number; memPattern?: boolean } = {},
): Compiled<F> {
  const { shareKey, maxSessions, memPattern } = options;
  if (current === "onnx")
    return onnxJit(f, { name, shareKey: shareKey && `${name} ${shareKey}`, maxSessions, memPattern });
  return jax.jit(f as never) as unknown as Compiled<F>;
}
