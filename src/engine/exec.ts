/**
 * Where compiled work runs: on jax-js's wasm worker pool (`pool`: kernels split across one worker
 * per core, results read asynchronously) or on the main thread (`main`: synchronous reads, no
 * messaging). jax-js decides per read: an async read dispatches pending kernels to the pool, a
 * sync read runs them inline. Which is faster depends on the workload and on the machine's load:
 * measured here (2 cores), the pool made big train/score steps 1.5-1.9x faster on an idle
 * machine, but up to 2x slower when other processes kept the cores busy (a split kernel waits for
 * its slowest half), and it never helped small decode steps or tiny models.
 *
 * So each call site (train step, scoring, decode…) owns an `ExecutionSite` that measures both and
 * keeps the faster: after a compile call it times two calls of each mode, then every
 * `probeEvery` calls re-times the other mode once and switches when it is clearly faster.
 * Results are identical either way (the same kernels compute every element); only time differs.
 *
 * `AGENTRL_EXEC=pool|main` pins every site; `AGENTRL_THREADS=1` removes the pool entirely.
 */
import { type JaxArray, jax, workerPoolEnabled } from "./jax.ts";
import { takeHostData } from "./onnx/host-copies.ts";

export type ExecMode = "pool" | "main";

const pinned = (() => {
  const raw = process.env.AGENTRL_EXEC;
  if (raw === undefined || raw === "" || raw === "auto") return null;
  if (raw !== "pool" && raw !== "main")
    throw new Error(`AGENTRL_EXEC must be pool, main or auto, got "${raw}"`);
  return raw as ExecMode;
})();

export class ExecutionSite {
  readonly name: string;
  readonly probeEvery: number;
  #calls = 0;
  #current: ExecMode = "pool";
  #times: Record<ExecMode, number[]> = { pool: [], main: [] };
  #pendingMode: ExecMode | null = null;
  #startedAt = 0;

  constructor(name: string, probeEvery = 40) {
    this.name = name;
    this.probeEvery = probeEvery;
  }

  /** The mode the next call should use. Call `begin()` then `end()` around the timed work. */
  begin(): ExecMode {
    let mode: ExecMode;
    if (!workerPoolEnabled) mode = "main";
    else if (pinned) mode = pinned;
    else {
      const n = this.#calls;
      if (n === 0)
        mode = "main"; // compile call, not timed
      else if (n <= 4) mode = n % 2 === 1 ? "pool" : "main";
      else if (n % this.probeEvery === 0) mode = this.#current === "pool" ? "main" : "pool";
      else mode = this.#current;
    }
    this.#pendingMode = mode;
    this.#startedAt = performance.now();
    return mode;
  }

  /** Records the call's time (measured since `begin()`, or given, for tests). */
  end(elapsedMs?: number): void {
    const mode = this.#pendingMode;
    if (mode === null) throw new Error(`ExecutionSite ${this.name}: end() without begin()`);
    const elapsed = elapsedMs ?? performance.now() - this.#startedAt;
    this.#pendingMode = null;
    const n = this.#calls++;
    if (n === 0 || !workerPoolEnabled || pinned) return;
    const times = this.#times[mode];
    times.push(elapsed);
    if (times.length > 3) times.shift();
    if (n >= 4) {
      const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
      const other: ExecMode = this.#current === "pool" ? "main" : "pool";
      if (n === 4) this.#current = mean(this.#times.pool) <= mean(this.#times.main) ? "pool" : "main";
      else if (mode === other && elapsed < 0.85 * mean(this.#times[this.#current])) this.#current = other;
    }
  }

  /** The mode currently preferred (for reports). */
  get preferred(): ExecMode {
    return !workerPoolEnabled ? "main" : (pinned ?? this.#current);
  }
}

/**
 * Reads arrays in `mode` (consuming them). `settle` lists other outputs of the same call that
 * must be finished before returning in pool mode, so a later main-thread call never meets work
 * still running on the pool (jax-js refuses that).
 */
export async function readArrays(
  arrays: JaxArray[],
  mode: ExecMode,
  settle: unknown = null,
): Promise<ArrayLike<number>[]> {
  if (mode === "main" || !workerPoolEnabled) return arrays.map((array) => takeHostData(array));
  if (settle) await jax.blockUntilReady(settle as never);
  const out: ArrayLike<number>[] = [];
  for (const array of arrays) out.push(await array.data());
  return out;
}

/** Finishes the pending work of `tree` in `mode` without reading it back. */
export async function settle(tree: unknown, mode: ExecMode): Promise<void> {
  if (mode === "pool" && workerPoolEnabled) {
    await jax.blockUntilReady(tree as never);
  }
  // Main mode: nothing to do; the next read runs pending kernels inline, in order.
}

/** Threads jax-js can use: the worker pool's size, or 1 without a pool. */
export function engineThreads(): number {
  return workerPoolEnabled ? navigator.hardwareConcurrency : 1;
}
