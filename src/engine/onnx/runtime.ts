/**
 * ONNX Runtime sessions for converted programs, run synchronously on the calling thread through
 * onnxruntime-node's native binding (its public `InferenceSession.run` wraps the same synchronous
 * call in a promise; the engine's programs are called from synchronous jax-js-style code).
 * Inputs are passed zero-copy (ORT wraps the typed arrays' memory); outputs are new arrays.
 */
import { createRequire } from "node:module";
import type { OnnxDType } from "./proto.ts";

const require = createRequire(import.meta.url);

type NativeTensor = { type: string; dims: readonly number[]; data: HostData; cpuData?: HostData };
type NativeSession = {
  loadModel(buffer: ArrayBufferLike, offset: number, length: number, options: object): void;
  run(
    feeds: Record<string, unknown>,
    fetches: Record<string, unknown>,
    options: object,
  ): Record<string, NativeTensor>;
  dispose(): void;
  endProfiling(): string;
};
type Native = {
  binding: { InferenceSession: new () => NativeSession };
  initOrt(): void;
};
type TensorClass = new (type: string, data: HostData, dims: readonly number[]) => unknown;

export type HostData = Float32Array | Float64Array | Int32Array | Uint8Array;

let native: { binding: Native["binding"]; Tensor: TensorClass } | null = null;

/** Loads onnxruntime-node once (a clear error if it is not installed). */
function ort() {
  if (native) return native;
  let loaded: Native;
  let common: { Tensor: TensorClass };
  try {
    loaded = require("onnxruntime-node/dist/binding.js") as Native;
    common = require("onnxruntime-common") as { Tensor: TensorClass };
  } catch (error) {
    throw new Error(
      `the ONNX engine needs onnxruntime-node (npm install): ${error instanceof Error ? error.message : error}`,
    );
  }
  loaded.initOrt();
  native = { binding: loaded.binding, Tensor: common.Tensor };
  return native;
}

export interface RuntimeOptions {
  /** Intra-op threads (default: AGENTRL_ORT_THREADS, else 2). */
  threads?: number;
  /** ORT graph optimisation level (default "all"). */
  optimization?: "disabled" | "basic" | "extended" | "all";
  /**
   * Write an ORT profile (enableProfiling) with this file prefix; default: AGENTRL_ORT_PROFILE
   * when set (every session profiles; `endProfiling()` writes the file).
   */
  profilePrefix?: string;
}

export function defaultThreads(): number {
  const raw = process.env.AGENTRL_ORT_THREADS;
  if (raw === undefined || raw === "") return 2;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`AGENTRL_ORT_THREADS must be a positive integer, got "${raw}"`);
  return n;
}

export interface IoSpec {
  name: string;
  dtype: OnnxDType;
  shape: number[];
}

/** One compiled program: a session over fixed input and output shapes. */
export class OrtProgram {
  readonly #session: NativeSession;
  readonly #inputs: IoSpec[];
  readonly #outputs: IoSpec[];
  readonly #fetches: Record<string, null>;

  constructor(model: Uint8Array, inputs: IoSpec[], outputs: IoSpec[], options: RuntimeOptions = {}) {
    const { binding } = ort();
    const profilePrefix = options.profilePrefix ?? (process.env.AGENTRL_ORT_PROFILE || undefined);
    this.#session = new binding.InferenceSession();
    this.#session.loadModel(model.buffer, model.byteOffset, model.byteLength, {
      executionProviders: [{ name: "cpu" }],
      intraOpNumThreads: options.threads ?? defaultThreads(),
      interOpNumThreads: 1,
      executionMode: "sequential",
      graphOptimizationLevel: options.optimization ?? "all",
      enableProfiling: profilePrefix !== undefined,
      profileFilePrefix: profilePrefix,
      logSeverityLevel: 3,
      extra: { session: { intra_op: { allow_spinning: "0" }, inter_op: { allow_spinning: "0" } } },
    });
    this.#inputs = inputs;
    this.#outputs = outputs;
    this.#fetches = Object.fromEntries(outputs.map((o) => [o.name, null]));
  }

  /** Runs the program on host arrays (one per input, in order); returns one array per output. */
  run(data: readonly HostData[]): HostData[] {
    const { Tensor } = ort();
    if (data.length !== this.#inputs.length)
      throw new Error(`OrtProgram.run: ${data.length} inputs for ${this.#inputs.length}`);
    const feeds: Record<string, unknown> = {};
    this.#inputs.forEach((input, i) => {
      feeds[input.name] = new Tensor(input.dtype === "bool" ? "bool" : input.dtype, data[i], input.shape);
    });
    const results = this.#session.run(feeds, this.#fetches, {});
    return this.#outputs.map((output) => {
      const tensor = results[output.name];
      return (tensor.cpuData ?? tensor.data) as HostData;
    });
  }

  /** Ends profiling (when enabled) and returns the profile file's path. */
  endProfiling(): string {
    return this.#session.endProfiling();
  }

  dispose(): void {
    this.#session.dispose();
  }
}
