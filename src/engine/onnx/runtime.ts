/**
 * ONNX Runtime sessions for converted programs, run synchronously on the calling thread through
 * onnxruntime-node's native binding (its public `InferenceSession.run` wraps the same synchronous
 * call in a promise; the engine's programs are called from synchronous jax-js-style code).
 * Inputs are passed zero-copy (ORT wraps the typed arrays' memory); outputs are new arrays.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
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

/** A model's external file handed from memory: `path` is the location its tensors name. */
export interface ExternalData {
  path: string;
  data: HostData;
}

let native: { binding: Native["binding"]; Tensor: TensorClass } | null = null;

/** Loads onnxruntime-node once (a clear error if it is not installed). */
function ort() {
  if (native) return native;
  // onnxruntime-node 1.30's Linux library carries Microsoft's 1DS telemetry: it writes a device id
  // and an event database under ~/.cache/Microsoft/DeveloperTools and a /tmp/mat-debug-<pid>.log
  // per process, and uploads when it finds a CA bundle. The lab sends nothing anywhere: off
  // unless the user set the variable themselves.
  process.env.ORT_DISABLE_TELEMETRY ??= "1";
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
  /** Whether intra-op threads spin during a run (default: AGENTRL_ORT_SPIN, else true). */
  spin?: boolean;
  /** ORT graph optimisation level (default "all"). */
  optimization?: "disabled" | "basic" | "extended" | "all";
  /**
   * Write an ORT profile (enableProfiling) with this file prefix; default: AGENTRL_ORT_PROFILE
   * when set (every session profiles; `endProfiling()` writes the file).
   */
  profilePrefix?: string;
  /**
   * The model's external files, from memory (its constant weights: jit.ts's bound inputs). A
   * program with them skips the optimised-model cache (the cache would store the weights) and
   * keeps them referenced while its session lives.
   */
  externalData?: ExternalData[];
  /**
   * ORT's memory pattern (default: on, unless AGENTRL_ORT_MEM_PATTERN=0): from the second run on a
   * run's buffers are allocated at once, planned from the previous run. Faster for small programs,
   * but a training step's activations then all live at the same time.
   */
  memPattern?: boolean;
  /**
   * ORT's CPU memory arena (default on; off everywhere with AGENTRL_ORT_ARENA=0). Off for programs
   * run now and then over large buffers (a real model's layered LoRA gradient, layered-grad.ts):
   * their memory is returned after each run instead of held while the session stays open.
   */
  arena?: boolean;
}

export function defaultThreads(): number {
  const raw = process.env.AGENTRL_ORT_THREADS;
  if (raw === undefined || raw === "") return 2;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`AGENTRL_ORT_THREADS must be a positive integer, got "${raw}"`);
  return n;
}

export function defaultSpin(): boolean {
  const raw = process.env.AGENTRL_ORT_SPIN;
  if (raw === undefined || raw === "" || raw === "1") return true;
  if (raw === "0") return false;
  throw new Error(`AGENTRL_ORT_SPIN must be 0 or 1, got "${raw}"`);
}

/**
 * The folder of optimised models (ORT's `optimizedModelFilePath`): AGENTRL_ORT_CACHE, else
 * `.agentrl/cache/ort` under the working directory; "off" (or "0") turns the cache off. Building
 * a session spends most of its time in ORT's graph optimisers (a train step: about a second and a
 * half); the recipe's stages are separate processes that build the same programs, so each
 * optimised graph is built once and loaded, already optimised, everywhere else.
 */
export function ortCacheDir(): string | null {
  const raw = process.env.AGENTRL_ORT_CACHE;
  if (raw === "off" || raw === "0") return null;
  return resolve(raw || join(".agentrl", "cache", "ort"));
}

/** Cached models kept; past it the least recently used are removed down to 3/4 of it. */
const CACHE_FILES = 600;

let ortVersion: string | null = null;

/** The cache file of a model: a hash of its bytes and of everything that shapes the optimised graph. */
function cachePath(dir: string, model: Uint8Array, level: string): string {
  ortVersion ??= (require("onnxruntime-node/package.json") as { version: string }).version;
  const hash = createHash("sha256")
    .update(`${ortVersion} ${process.arch} ${level}\n`)
    .update(model)
    .digest("hex")
    .slice(0, 40);
  return join(dir, `${hash}.onnx`);
}

/**
 * True for an error the file system raised (it carries an errno `code`: ENOENT when another process
 * pruned a file, EACCES or EROFS on a read-only cache). The cache is best effort, so these only
 * skip it; anything else (a bug) is rethrown.
 */
function isFileSystemError(error: unknown): boolean {
  return error instanceof Error && typeof (error as NodeJS.ErrnoException).code === "string";
}

/** Removes the least recently used cache files past CACHE_FILES (best effort: other processes share it). */
function pruneCache(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => name.endsWith(".onnx"));
  } catch (error) {
    if (isFileSystemError(error)) return;
    throw error;
  }
  if (names.length <= CACHE_FILES) return;
  const aged = names
    .map((name) => {
      try {
        return { name, used: statSync(join(dir, name)).mtimeMs };
      } catch (error) {
        // Pruned by another process meanwhile: oldest, so the removal below is a no-op.
        if (!isFileSystemError(error)) throw error;
        return { name, used: 0 };
      }
    })
    .sort((a, b) => a.used - b.used);
  for (const { name } of aged.slice(0, names.length - Math.floor((CACHE_FILES * 3) / 4)))
    rmSync(join(dir, name), { force: true });
}

const LEVELS = ["disabled", "basic", "extended", "all"] as const;

/** ORT's graph optimisation level: AGENTRL_ORT_OPT when set (for measurements), else "all". */
function defaultOptimization(): (typeof LEVELS)[number] {
  const raw = process.env.AGENTRL_ORT_OPT;
  if (raw === undefined || raw === "") return "all";
  if (!(LEVELS as readonly string[]).includes(raw))
    throw new Error(`AGENTRL_ORT_OPT must be one of ${LEVELS.join(", ")}, got "${raw}"`);
  return raw as (typeof LEVELS)[number];
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
  /** Whether the session was loaded from the cache's optimised model. */
  fromCache = false;
  /** The external files' memory, held while the session may read it. */
  readonly #external: ExternalData[] | undefined;

  constructor(model: Uint8Array, inputs: IoSpec[], outputs: IoSpec[], options: RuntimeOptions = {}) {
    const { binding } = ort();
    const profilePrefix = options.profilePrefix ?? (process.env.AGENTRL_ORT_PROFILE || undefined);
    const level = options.optimization ?? defaultOptimization();
    const sessionOptions = {
      executionProviders: [{ name: "cpu" }],
      intraOpNumThreads: options.threads ?? defaultThreads(),
      interOpNumThreads: 1,
      executionMode: "sequential",
      graphOptimizationLevel: level,
      enableProfiling: profilePrefix !== undefined,
      profileFilePrefix: profilePrefix,
      logSeverityLevel: 3,
      // Without ORT's CPU arena a run's buffers go back to the allocator when it ends (large ones
      // to the system), where the arena keeps its high-water mark for the session's life.
      ...(options.arena === false || process.env.AGENTRL_ORT_ARENA === "0"
        ? { enableCpuMemArena: false }
        : {}),
      // The memory pattern allocates a run's buffers at once from the previous run's: faster, but
      // a training step's activations then all live together (measured: a 135M model's 256-token
      // LoRA update peaked at 3.05 GB with it, 2.3 GB without: docs/real-checkpoints.md).
      ...((options.memPattern ?? process.env.AGENTRL_ORT_MEM_PATTERN !== "0")
        ? {}
        : { enableMemPattern: false }),
      ...(options.externalData
        ? {
            externalData: options.externalData.map(({ path, data }) => ({
              path,
              data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
            })),
          }
        : {}),
      // Spinning while a run is in progress and stopping when it returns: a program's small nodes
      // then do not each wait for a sleeping worker to wake (the train step: ~5% faster), and no
      // thread spins between runs, when the JavaScript side (sampling, tools) needs the core.
      extra: {
        session: {
          intra_op: { allow_spinning: (options.spin ?? defaultSpin()) ? "1" : "0" },
          inter_op: { allow_spinning: "0" },
          force_spinning_stop: "1",
        },
      },
    };
    const load = (bytes: Uint8Array, extra: object = {}) => {
      const session = new binding.InferenceSession();
      session.loadModel(bytes.buffer, bytes.byteOffset, bytes.byteLength, { ...sessionOptions, ...extra });
      return session;
    };
    this.#external = options.externalData;
    const dir = level === "disabled" || profilePrefix !== undefined || this.#external ? null : ortCacheDir();
    if (dir === null) this.#session = load(model);
    else [this.#session, this.fromCache] = OrtProgram.#loadCached(dir, model, level, load);
    this.#inputs = inputs;
    this.#outputs = outputs;
    this.#fetches = Object.fromEntries(outputs.map((o) => [o.name, null]));
    if (profilePrefix !== undefined) profiling.add(this);
  }

  /**
   * A session from the cache's optimised model when there is one (optimisers off: the graph is
   * already optimised); otherwise a fresh session that writes its optimised model into the cache
   * (a temporary name renamed into place, so concurrent processes never read half a file). A
   * cached file ORT cannot load is removed and the model built afresh.
   */
  static #loadCached(
    dir: string,
    model: Uint8Array,
    level: string,
    load: (bytes: Uint8Array, extra?: object) => NativeSession,
  ): [NativeSession, boolean] {
    const path = cachePath(dir, model, level);
    let cached: Uint8Array | null = null;
    try {
      cached = readFileSync(path);
    } catch (error) {
      // No readable cached file (not built yet, pruned by another process): build the session below.
      if (!isFileSystemError(error)) throw error;
    }
    if (cached) {
      try {
        const session = load(cached, { graphOptimizationLevel: "disabled" });
        const now = new Date();
        utimesSync(path, now, now);
        return [session, true];
      } catch {
        rmSync(path, { force: true });
      }
    }
    mkdirSync(dir, { recursive: true });
    const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    const session = load(model, { optimizedModelFilePath: temporary });
    try {
      renameSync(temporary, path);
      pruneCache(dir);
    } catch (error) {
      rmSync(temporary, { force: true });
      if (!isFileSystemError(error)) throw error;
    }
    return [session, false];
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
    if (profiling.delete(this)) this.#session.endProfiling();
    this.#session.dispose();
  }
}

/**
 * Programs writing a profile: ONNX Runtime writes it only when profiling ends, so those still open
 * when the process exits end theirs then (a session released without it leaves an empty file).
 */
const profiling = new Set<OrtProgram>();
process.once("exit", () => {
  for (const program of profiling) program.endProfiling();
  profiling.clear();
});
