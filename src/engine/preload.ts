/**
 * Runs before @jax-js/jax is evaluated (only `jax.ts` imports it, right after this file):
 *
 * 1. A browser-style `globalThis.Worker` on `node:worker_threads`. jax-js starts its wasm worker
 *    pool (one worker per core, kernels split across them) only when `Worker` and
 *    `SharedArrayBuffer` exist; Node has no global `Worker`. Measured here (2 cores): train and
 *    scoring steps 1.5-1.9x faster. Workers are unref'd while idle so a process exits when its work
 *    is done, and ref'd while a request is in flight so an `await` on a kernel keeps it alive.
 *    `AGENTRL_THREADS=1` turns the pool off (single-threaded wasm, synchronous reads allowed).
 * 2. It records the `WebAssembly.Memory` that jax-js creates, so `wasmMemoryBytes()` can report
 *    the heap size (the leak tests watch it: jax-js never shrinks its heap and reuses freed
 *    blocks, so a loop that frees everything keeps it flat).
 */
import { resolveObjectURL } from "node:buffer";
import { Worker as NodeWorker } from "node:worker_threads";

const capturedMemories: WebAssembly.Memory[] = [];
const OriginalMemory = WebAssembly.Memory;

/** Bytes of the wasm heap(s) jax-js allocated so far. */
export function wasmMemoryBytes(): number {
  return capturedMemories.reduce((total, memory) => total + memory.buffer.byteLength, 0);
}

/** Whether jax-js's heap is a SharedArrayBuffer (it is exactly when its worker pool is on). */
export function wasmMemoryShared(): boolean | null {
  const memory = capturedMemories[0];
  return memory ? memory.buffer instanceof SharedArrayBuffer : null;
}

/** Called by jax.ts once jax-js is loaded: later `WebAssembly.Memory` constructions are not ours. */
export function restoreMemoryConstructor(): void {
  WebAssembly.Memory = OriginalMemory;
}

WebAssembly.Memory = new Proxy(OriginalMemory, {
  construct(target, args, newTarget) {
    const memory = Reflect.construct(target, args, newTarget) as WebAssembly.Memory;
    capturedMemories.push(memory);
    return memory;
  },
});

/** Code each worker thread starts with: a browser-like `self` around `parentPort`. */
const WORKER_BOOTSTRAP = `
const { parentPort, workerData } = require("node:worker_threads");
const vm = require("node:vm");
globalThis.self = globalThis;
globalThis.postMessage = (message) => parentPort.postMessage(message);
const early = [];
let loaded = false;
parentPort.on("message", (message) => {
  if (!loaded) early.push(message);
  else globalThis.onmessage({ data: message });
});
workerData.blob.text().then((source) => {
  vm.runInThisContext(source, { filename: "jax-js-wasm-worker.js" });
  loaded = true;
  for (const message of early.splice(0)) globalThis.onmessage({ data: message });
});
`;

type MessageHandler = ((event: { data: unknown }) => void) | null;
type ErrorHandler = ((event: { message: string; error: unknown }) => void) | null;

/** The subset of the browser `Worker` API that jax-js uses, over a Node worker thread. */
class WorkerShim {
  onmessage: MessageHandler = null;
  onerror: ErrorHandler = null;
  #worker: NodeWorker;
  #inFlight = 0;

  constructor(url: string | URL, _options?: unknown) {
    const blob = resolveObjectURL(String(url));
    if (!blob) throw new Error(`Worker shim: only blob: URLs are supported, got ${String(url)}`);
    this.#worker = new NodeWorker(WORKER_BOOTSTRAP, { eval: true, workerData: { blob } });
    this.#worker.unref();
    this.#worker.on("message", (data: unknown) => {
      // Every request jax-js sends gets exactly one reply ("ready" or "done").
      this.#inFlight = Math.max(0, this.#inFlight - 1);
      if (this.#inFlight === 0) this.#worker.unref();
      this.onmessage?.({ data });
    });
    this.#worker.on("error", (error: Error) => {
      this.#inFlight = 0;
      this.#worker.unref();
      this.onerror?.({ message: error.message, error });
    });
  }

  postMessage(message: unknown): void {
    if (this.#inFlight++ === 0) this.#worker.ref();
    this.#worker.postMessage(message);
  }

  terminate(): void {
    void this.#worker.terminate();
  }
}

/**
 * The engine named by AGENTRL_ENGINE (backend.ts; default onnx). Read here because it decides the
 * worker pool: with ONNX Runtime executing the compiled programs, jax-js only builds and traces
 * them, and its pool would compete with ORT's threads for the cores.
 */
export const engineFromEnvironment = (() => {
  const raw = process.env.AGENTRL_ENGINE;
  if (raw === undefined || raw === "") return "onnx";
  if (raw !== "onnx" && raw !== "jax") throw new Error(`AGENTRL_ENGINE must be onnx or jax, got "${raw}"`);
  return raw;
})();

/** Threads jax-js may use: AGENTRL_THREADS (1 = no worker pool), else every core. */
export const requestedThreads = (() => {
  const raw = process.env.AGENTRL_THREADS;
  if (raw === undefined || raw === "") return null;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`AGENTRL_THREADS must be a positive integer, got "${raw}"`);
  return n;
})();

export const workerPoolEnabled =
  engineFromEnvironment === "jax" && requestedThreads !== 1 && typeof SharedArrayBuffer !== "undefined";

if (workerPoolEnabled && !("Worker" in globalThis)) {
  (globalThis as Record<string, unknown>).Worker = WorkerShim;
  if (requestedThreads !== null) {
    // jax-js sizes its pool from navigator.hardwareConcurrency.
    Object.defineProperty(globalThis.navigator, "hardwareConcurrency", {
      value: requestedThreads,
      configurable: true,
    });
  }
}
