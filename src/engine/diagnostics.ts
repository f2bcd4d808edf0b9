/**
 * Leak detection for tests. jax-js frees an array's wasm buffer when its reference count reaches
 * zero and never shrinks its heap, so there are two observable signals:
 *
 * - `wasmMemoryBytes()` (from preload.ts): heap size. Coarse (it grows in 64 KiB pages), public.
 * - `trackLiveBuffers()`: exact count of live backend buffers allocated since the call. jax-js has
 *   no public counter, so this finds its internal `getBackend` (in the package's backend chunk, by
 *   function name) and wraps the wasm backend's malloc/incRef/decRef. Returns null if a jax-js
 *   release reorganises that internal; tests then fall back to the heap size.
 */
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import "./jax.ts";

export { wasmMemoryBytes } from "./preload.ts";

type Backend = {
  type: string;
  malloc(size: number, initialData?: Uint8Array): number;
  incRef(slot: number): void;
  decRef(slot: number): void;
};

export interface LiveBufferTracker {
  /** Buffers allocated since tracking started and not yet freed. */
  live(): number;
}

let tracker: LiveBufferTracker | null | undefined;

export async function trackLiveBuffers(): Promise<LiveBufferTracker | null> {
  if (tracker !== undefined) return tracker;
  tracker = null;
  try {
    const dist = dirname(fileURLToPath(import.meta.resolve("@jax-js/jax")));
    const chunk = readdirSync(dist).find((file) => /^backend-.*\.js$/.test(file));
    if (!chunk) return null;
    const module = (await import(pathToFileURL(join(dist, chunk)).href)) as Record<string, unknown>;
    const getBackend = Object.values(module).find(
      (value): value is (device?: string) => Backend =>
        typeof value === "function" && value.name === "getBackend",
    );
    const backend = getBackend?.("wasm");
    if (!backend || typeof backend.malloc !== "function" || typeof backend.decRef !== "function") return null;
    const refs = new Map<number, number>();
    const { malloc, incRef, decRef } = backend;
    backend.malloc = function (size, initialData) {
      const slot = malloc.call(this, size, initialData);
      refs.set(slot, 1);
      return slot;
    };
    backend.incRef = function (slot) {
      incRef.call(this, slot);
      const count = refs.get(slot);
      if (count !== undefined) refs.set(slot, count + 1);
    };
    backend.decRef = function (slot) {
      decRef.call(this, slot);
      const count = refs.get(slot);
      if (count === undefined) return;
      if (count <= 1) refs.delete(slot);
      else refs.set(slot, count - 1);
    };
    tracker = { live: () => refs.size };
  } catch {
    tracker = null;
  }
  return tracker;
}
