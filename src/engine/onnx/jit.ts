/**
 * `onnxJit(f)`: jax-js's `jit` contract (trace once per input shapes, consume the arguments,
 * return new arrays, `dispose()`) with execution in ONNX Runtime. The program is traced with
 * `makeJaxpr` on abstract inputs, converted (convert.ts) and run by a cached session per input
 * signature (bounded: the least recently used session is closed past `maxSessions`). A program
 * with a primitive the converter does not lower runs on jax-js's own `jit` instead, once per
 * signature, with a warning naming the primitive.
 *
 * Arrays this wrapper returns keep their host copy (the session's output), so feeding them back
 * (parameters and optimizer state, step after step) skips the read from jax-js's heap.
 */

import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type JaxArray, jax, np } from "../jax.ts";
import { unflattenTree } from "../tree.ts";
import { type ConstInput, convertJaxpr, onnxDType, UnsupportedPrimitiveError } from "./convert.ts";
import type { FusionCounts } from "./fuse.ts";
import { isHostOnly, rememberHostCopy, takeHostData } from "./host-copies.ts";
import type { OnnxGraph } from "./proto.ts";
import { encodeModel } from "./proto.ts";
import { type ExternalData, type HostData, type IoSpec, OrtProgram, type RuntimeOptions } from "./runtime.ts";

type AnyFunction = (...args: never[]) => unknown;
export type Compiled =
  | {
      kind: "onnx";
      program: OrtProgram;
      outputs: IoSpec[];
      outTree: unknown;
      nodes: number;
      fused: FusionCounts;
    }
  | { kind: "fallback"; reason: string };

/** An abstract input for tracing: shape and dtype, no data. */
class AbstractInput {
  readonly shape: number[];
  readonly dtype: unknown;
  readonly weakType: boolean;
  constructor(shape: number[], dtype: unknown, weakType = false) {
    this.shape = shape;
    this.dtype = dtype;
    this.weakType = weakType;
  }
}

export interface OnnxJitOptions extends RuntimeOptions {
  /** Sessions kept (one per input signature); default 8. */
  maxSessions?: number;
  /**
   * Programs built with the same key share their sessions (process-wide, the least recently used
   * of 48 closed first): for functions rebuilt per object that compute the same thing, such as
   * each policy's decode programs for one model config. The key must name everything the
   * function closes over.
   */
  shareKey?: string;
  /** For messages and profiles. */
  name?: string;
  /** Products of a few rows by a large matrix take the large one first (dot.ts `DotOptions`). */
  weightsFirst?: boolean;
}

/**
 * Inputs of a program bound to fixed host data (by input index): they become the program's
 * constants, stored outside the model bytes and handed to the session from memory. ONNX Runtime
 * pre-packs a constant weight once per session for its matrix products, where a weight fed as an
 * input is packed again at every run: for a decode step of 8 rows that packing costs about as much
 * as the product itself (docs/real-checkpoints.md). Each session then holds its own packed copy.
 */
export type BoundInputs = ReadonlyMap<number, HostData>;

export interface OnnxProgramInfo {
  signature: string;
  kind: "onnx" | "fallback";
  nodes?: number;
  /** Whether ORT loaded the program's optimised graph from the cache (runtime.ts). */
  cached?: boolean;
  /** Patterns the converter replaced by fused operators (fuse.ts). */
  fused?: FusionCounts;
  reason?: string;
}

export type OnnxJitted<F> = F & { dispose(): void; programs(): OnnxProgramInfo[] };

/** An abstract input for tracing (shape and dtype, no data): what `makeJaxpr` takes. */
export function abstractInput(shape: number[], dtype: string): unknown {
  return new AbstractInput(shape, dtype);
}

/**
 * A tree of abstract inputs from leaves keyed by dotted path (`layers.0.q`: lists where the keys are
 * 0..n-1, as `unflattenTree`), with the paths in the order the traced program takes its leaves.
 */
export function abstractTree(leaves: Record<string, { shape: readonly number[]; dtype: string }>): {
  abstract: unknown;
  paths: string[];
} {
  const pathOf = new Map<unknown, string>();
  const toAbstract = (node: unknown): unknown => {
    if (typeof node === "string") {
      const leaf = abstractInput([...leaves[node].shape], leaves[node].dtype);
      pathOf.set(leaf, node);
      return leaf;
    }
    if (Array.isArray(node)) return node.map(toAbstract);
    return Object.fromEntries(Object.entries(node as object).map(([k, v]) => [k, toAbstract(v)]));
  };
  const abstract = toAbstract(unflattenTree(Object.keys(leaves).map((path) => [path, path])));
  return {
    abstract,
    paths: (jax.tree.leaves(abstract as never) as unknown[]).map((leaf) => pathOf.get(leaf)!),
  };
}

/**
 * Traces `f` on abstract arguments, converts it and opens its session; a program with a primitive
 * the converter does not lower comes back as a fallback (with a warning naming it).
 */
export function buildProgram(
  f: AnyFunction,
  abstract: unknown[],
  leafCount: number,
  signature: string,
  options: OnnxJitOptions = {},
  bound?: BoundInputs,
): Compiled {
  const started = performance.now();
  const trace = jax.makeJaxpr(f as never) as unknown as (...inputs: unknown[]) => unknown;
  const traced = trace(...abstract) as {
    jaxpr: { jaxpr: { flatten(): unknown }; consts: JaxArray[]; dispose(): void };
    treedef: unknown;
  };
  try {
    const jaxpr = (traced.jaxpr.jaxpr.flatten() as { simplify(): unknown }).simplify() as Parameters<
      typeof convertJaxpr
    >[0];
    const consts: ConstInput[] = traced.jaxpr.consts.map((c) => ({
      dtype: onnxDType(c.dtype),
      shape: [...c.shape],
      data: c.ref.dataSync() as ConstInput["data"],
    }));
    const converted = convertJaxpr(jaxpr, consts, { weightsFirst: options.weightsFirst });
    if (converted.inputs.length !== leafCount)
      throw new Error(`onnxJit: traced ${converted.inputs.length} inputs for ${leafCount} leaves`);
    const externalData = bound ? bindInputs(converted, bound) : undefined;
    const model = encodeModel(converted.graph, options.name);
    if (process.env.AGENTRL_ONNX_DUMP)
      dumpModel(process.env.AGENTRL_ONNX_DUMP, options.name, model, converted.graph);
    const convertedAt = performance.now();
    let program: OrtProgram;
    try {
      program = new OrtProgram(model, converted.inputs, converted.outputs, { ...options, externalData });
      if (process.env.AGENTRL_ONNX_LOG)
        process.stderr.write(
          `onnx: ${options.name ?? "program"} ${signature.slice(0, 60)}: ${converted.graph.nodes.length} nodes` +
            `${Object.keys(converted.fused).length ? ` (fused ${JSON.stringify(converted.fused)})` : ""}, ` +
            `traced+converted ${(convertedAt - started).toFixed(0)} ms, session ${(performance.now() - convertedAt).toFixed(0)} ms${program.fromCache ? " (cached)" : ""}\n`,
        );
    } catch (error) {
      // ONNX Runtime refused the graph (a kernel missing for a type, say): jax-js runs it.
      throw new UnsupportedPrimitiveError("session", error instanceof Error ? error.message : String(error));
    }
    return {
      kind: "onnx",
      program,
      outputs: converted.outputs,
      outTree: traced.treedef,
      nodes: converted.graph.nodes.length,
      fused: converted.fused,
    };
  } catch (error) {
    if (!(error instanceof UnsupportedPrimitiveError)) throw error;
    process.emitWarning(`${options.name ?? "program"} (${signature}) runs on jax-js: ${error.message}`);
    return { kind: "fallback", reason: error.message };
  } finally {
    traced.jaxpr.dispose();
  }
}

/**
 * Turns the bound inputs of a converted program into external initializers (in place): they leave
 * the program's inputs, and their data comes back as the session's external files.
 */
function bindInputs(converted: ReturnType<typeof convertJaxpr>, bound: BoundInputs): ExternalData[] {
  const externalData: ExternalData[] = [];
  const names = new Set<string>();
  for (const [index, data] of bound) {
    const input = converted.inputs[index];
    if (!input) throw new Error(`onnxJit: bound input ${index} of ${converted.inputs.length}`);
    const size = input.shape.reduce((a, b) => a * b, 1);
    if (data.length !== size)
      throw new Error(`onnxJit: bound input ${index} has ${data.length} values for shape [${input.shape}]`);
    names.add(input.name);
    converted.graph.initializers.push({ ...input, data, external: true });
    externalData.push({ path: input.name, data });
  }
  converted.inputs.splice(0, converted.inputs.length, ...converted.inputs.filter((i) => !names.has(i.name)));
  converted.graph.inputs = converted.graph.inputs.filter((i) => !names.has(i.name));
  return externalData;
}

/**
 * AGENTRL_ONNX_DUMP=<folder>: each converted program is written there as `<name>-<hash>.onnx` (for
 * Netron or onnx tools) with a one-line-per-node listing beside it (`.txt`).
 */
function dumpModel(dir: string, name: string | undefined, model: Uint8Array, graph: OnnxGraph): void {
  const base = join(
    dir,
    `${name ?? "program"}-${createHash("sha256").update(model).digest("hex").slice(0, 12)}`,
  );
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${base}.onnx`, model);
  const lines = graph.nodes.map(
    (node) =>
      `${node.outputs.join(",")} = ${node.domain ? `${node.domain}.` : ""}${node.op}(${node.inputs.join(", ")})` +
      (node.attributes
        ? ` ${JSON.stringify(node.attributes, (_, v) => (typeof v === "bigint" ? Number(v) : v))}`
        : ""),
  );
  writeFileSync(`${base}.txt`, `${lines.join("\n")}\n`);
}

const shared = new Map<string, Compiled>();
const SHARED_SESSIONS = 48;

/** Wraps `f` (a pure function of array trees returning an array tree) like `jax.jit`. */
export function onnxJit<F extends AnyFunction>(f: F, options: OnnxJitOptions = {}): OnnxJitted<F> {
  const maxSessions = options.shareKey === undefined ? (options.maxSessions ?? 8) : SHARED_SESSIONS;
  const compiled = options.shareKey === undefined ? new Map<string, Compiled>() : shared;
  const prefix = options.shareKey === undefined ? "" : `${options.shareKey} `;
  let fallback: (((...args: unknown[]) => unknown) & { dispose(): void }) | null = null;

  const compile = (args: unknown[], leaves: JaxArray[], signature: string): Compiled => {
    const abstract = jax.tree.map(
      (leaf: JaxArray) => abstractInput([...leaf.shape], leaf.dtype as string),
      args as never,
    ) as unknown[];
    return buildProgram(f, abstract, leaves.length, signature, options);
  };

  const call = (...args: unknown[]) => {
    const [leaves] = jax.tree.flatten(args as never) as unknown as [JaxArray[], unknown];
    const signature =
      prefix +
      leaves.map((leaf) => `${leaf.dtype}[${leaf.shape.join(",")}]`).join(" ") +
      String(jax.tree.structure(args as never));
    let entry = compiled.get(signature);
    if (entry) {
      compiled.delete(signature); // re-insert: most recently used last
      compiled.set(signature, entry);
    } else {
      entry = compile(args, leaves, signature);
      compiled.set(signature, entry);
      while (compiled.size > maxSessions) {
        const [oldest, dropped] = compiled.entries().next().value as [string, Compiled];
        if (dropped.kind === "onnx") dropped.program.dispose();
        compiled.delete(oldest);
      }
    }
    if (entry.kind === "fallback") {
      // jax-js would read the zeros standing for host-only data: a wrong result, never silently.
      if (leaves.some(isHostOnly))
        throw new Error(
          `${options.name ?? "program"} cannot run on ONNX Runtime (${entry.reason}) and its inputs include host-only arrays jax-js cannot read`,
        );
      fallback ??= jax.jit(f as never) as never;
      return fallback!(...args);
    }
    const data = leaves.map((leaf) => takeHostData(leaf, true));
    const outputs = entry.program.run(data);
    const arrays = outputs.map((values, i) => {
      const spec = entry.outputs[i];
      const array = np.array(values as never, { shape: spec.shape, dtype: spec.dtype as never });
      rememberHostCopy(array, values);
      return array;
    });
    return jax.tree.unflatten(entry.outTree as never, arrays);
  };

  return Object.assign(call as unknown as F, {
    dispose() {
      if (options.shareKey === undefined) {
        for (const entry of compiled.values()) if (entry.kind === "onnx") entry.program.dispose();
        compiled.clear();
      }
      fallback?.dispose();
      fallback = null;
    },
    programs(): OnnxProgramInfo[] {
      const own = [...compiled.entries()].filter(([signature]) => signature.startsWith(prefix));
      return own.map(([signature, entry]) =>
        entry.kind === "onnx"
          ? {
              signature,
              kind: "onnx",
              nodes: entry.nodes,
              cached: entry.program.fromCache,
              fused: entry.fused,
            }
          : { signature, kind: "fallback", reason: entry.reason },
      );
    },
  });
}
