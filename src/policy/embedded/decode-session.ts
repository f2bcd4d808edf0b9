/**
 * Batched decoding with a persistent KV cache. A session has `rows` slots; each slot holds one
 * growing sequence. `feed(slot, ids)` appends tokens (the prompt, then each observation) and
 * `generate(requests)` samples new tokens for several slots in lock-step until each hits a stop
 * token, its token budget or the context length. A slot's prefix is never recomputed: fed tokens
 * are written into the cache in chunks (one compiled prefill program), generated tokens one per
 * step (one compiled decode program), whatever the lengths of the other slots.
 *
 * Bookkeeping: `written` positions of a slot are in the caches (positions < `base` in the main
 * cache, the rest in the recent cache, see kv-cache.ts); the rest of its sequence (at least its
 * last token while it has one) is pending and runs through the model at the next prefill or
 * decode step. A sequence never exceeds `config.maxLen`: feeding past it marks the slot full, and
 * generating on a full slot returns no tokens with finish reason "length".
 */
import type { Rng } from "../../core/random.ts";
import { compileProgram, engineName } from "../../engine/backend.ts";
import { type ExecMode, ExecutionSite, readArrays, settle } from "../../engine/exec.ts";
import { type JaxArray, np } from "../../engine/jax.ts";
import { disposeTree, refTree } from "../../engine/tree.ts";
import type { GptConfig } from "./config.ts";
import { gptKvModel, HostKvCache, type KvModel, type NormalisedStep } from "./host-kv.ts";
import {
  createKvCache,
  createRecentKv,
  flushRecent,
  forwardChunk,
  forwardDecode,
  type KvCache,
  type RecentKv,
} from "./kv-cache.ts";
import { type GptParams, withoutValueHead } from "./model.ts";
import { type SamplingOptions, sampleNormalised, sampleToken, validateSampling } from "./sampler.ts";

export interface GenerateRequest {
  slot: number;
  /** Most tokens to generate. */
  maxNew: number;
  /** Token ids that end the generation (the stop token is included in the output). */
  stop: readonly number[];
  rng: Rng;
  sampling: SamplingOptions;
}

export interface GenerateResult {
  ids: number[];
  /** See sampler.ts: log softmax(logits / T) of each id, before top-p truncation. */
  logprobs: number[];
  /** `stop`: a stop token; `length`: maxNew or the context length ran out. */
  finishReason: "stop" | "length";
}

export interface DecodeSessionOptions {
  /** Slots (batch rows of every compiled step). */
  rows: number;
  /** Tokens per slot per prefill step (default 16). */
  prefillChunk?: number;
  /** Recent-cache slots: decode steps between two flushes into the main cache (default 16). */
  recentSlots?: number;
}

interface Slot {
  sequence: number[];
  /** Positions whose keys and values are cached. */
  written: number;
  /** Positions in the main cache (the rest of `written` is in the recent cache). */
  base: number;
  full: boolean;
}

type PrefillFn = (
  params: GptParams,
  cache: KvCache,
  ids: JaxArray,
  start: JaxArray,
  count: JaxArray,
) => [KvCache];
type DecodeFn = (
  params: GptParams,
  cache: KvCache,
  recent: RecentKv,
  ids: JaxArray,
  position: JaxArray,
  base: JaxArray,
  active: JaxArray,
) => [RecentKv, JaxArray];
type FlushFn = (cache: KvCache, recent: RecentKv, base: JaxArray, fill: JaxArray) => [KvCache];

/** What a session needs to know of its model: the vocabulary (to check fed ids) and the context. */
export type DecodeShape = Pick<GptConfig, "vocabSize" | "maxLen">;

export class DecodeSession {
  readonly rows: number;
  readonly config: DecodeShape;
  readonly prefillChunk: number;
  readonly recentSlots: number;
  /** Null for a `KvModel` (its host arrays are all it needs). */
  #params: GptParams | null;
  /** The ONNX engine's host caches (host-kv.ts); null on jax-js, which uses the programs below. */
  #host: HostKvCache | null = null;
  #cache!: KvCache;
  #recent!: RecentKv;
  #slots: Slot[];
  #prefill!: PrefillFn;
  #decode!: DecodeFn;
  #flushRecent!: FlushFn;
  #disposed = false;
  #chunkGiven: boolean;
  #site = new ExecutionSite("decode");

  /**
   * Keeps its own reference to `params` (does not consume the caller's). A `KvModel` instead of
   * GPT params (another architecture, host-kv.ts) runs on host caches whatever the engine.
   */
  constructor(params: GptParams | KvModel, config: GptConfig | null, options: DecodeSessionOptions) {
    if (!Number.isInteger(options.rows) || options.rows < 1)
      throw new Error(`DecodeSession: rows must be ≥ 1, got ${options.rows}`);
    this.rows = options.rows;
    this.prefillChunk = options.prefillChunk ?? 16;
    this.#chunkGiven = options.prefillChunk !== undefined;
    this.recentSlots = options.recentSlots ?? 16;
    this.#slots = Array.from({ length: this.rows }, () => ({
      sequence: [],
      written: 0,
      base: 0,
      full: false,
    }));
    if ("paramData" in params) {
      this.config = { vocabSize: params.vocabSize, maxLen: params.maxLen };
      this.#params = null;
      this.#host = new HostKvCache(params, this.rows);
      return;
    }
    if (!config) throw new Error("DecodeSession: GPT params need their config");
    this.config = config;
    this.#params = refTree(withoutValueHead(params)); // sampling never reads a value head
    const dtype = params.wte.dtype as "float32" | "float64";
    if (engineName() === "onnx" && dtype === "float32") {
      this.#host = new HostKvCache(gptKvModel(this.#params, config), this.rows);
      return;
    }
    this.#cache = createKvCache(config, this.rows, dtype);
    this.#recent = createRecentKv(config, this.rows, this.recentSlots, dtype);
    this.#prefill = compileProgram(
      (p: GptParams, cache: KvCache, ids: JaxArray, start: JaxArray, count: JaxArray) => [
        forwardChunk(p, cache, ids, start, count, config, false).cache,
      ],
      "prefill",
      { shareKey: JSON.stringify(config) },
    ) as unknown as PrefillFn;
    this.#decode = compileProgram(
      (
        p: GptParams,
        cache: KvCache,
        recent: RecentKv,
        ids: JaxArray,
        position: JaxArray,
        base: JaxArray,
        active: JaxArray,
      ) => {
        const out = forwardDecode(p, cache, recent, ids, position, base, active, config);
        return [out.recent, out.logits];
      },
      "decode",
      { shareKey: JSON.stringify(config) },
    ) as unknown as DecodeFn;
    this.#flushRecent = compileProgram(
      (cache: KvCache, recent: RecentKv, base: JaxArray, fill: JaxArray) => [
        flushRecent(cache, recent, base, fill, config.maxLen),
      ],
      "flush-recent",
      { shareKey: JSON.stringify(config) },
    ) as unknown as FlushFn;
  }

  #slot(slot: number): Slot {
    if (this.#disposed) throw new Error("DecodeSession: used after dispose()");
    const state = this.#slots[slot];
    if (!state) throw new Error(`DecodeSession: slot ${slot} out of range [0, ${this.rows})`);
    return state;
  }

  /** The slot's whole sequence (fed and generated tokens). */
  tokens(slot: number): readonly number[] {
    return this.#slot(slot).sequence;
  }

  /** Whether feeding overflowed the context (generation then returns nothing). */
  isFull(slot: number): boolean {
    return this.#slot(slot).full;
  }

  /** Empties a slot for a new sequence. */
  reset(slot: number): void {
    const state = this.#slot(slot);
    this.#host?.reset(slot);
    state.sequence = [];
    state.written = 0;
    state.base = 0;
    state.full = false;
  }

  /** Appends tokens to a slot; they reach the cache at the next generate (or flush). */
  feed(slot: number, ids: readonly number[]): void {
    const state = this.#slot(slot);
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= this.config.vocabSize) {
        throw new Error(`DecodeSession.feed: token id ${id} out of range [0, ${this.config.vocabSize})`);
      }
    }
    if (state.full) return;
    if (state.sequence.length + ids.length > this.config.maxLen) {
      state.full = true;
      return;
    }
    state.sequence.push(...ids);
  }

  #int32(values: Int32Array<ArrayBuffer>, shape?: number[]): JaxArray {
    return np.array(values, { shape, dtype: np.int32 });
  }

  /** Moves every slot's recent tokens into the main cache. */
  async #flushAll(mode: ExecMode): Promise<void> {
    if (this.#host) {
      // Host caches have no recent cache: every written position is in the cache.
      for (const state of this.#slots) state.base = state.written;
      return;
    }

    const base = new Int32Array(this.rows);
    const fill = new Int32Array(this.rows);
    let any = false;
    this.#slots.forEach((state, row) => {
      base[row] = state.base;
      fill[row] = state.written - state.base;
      if (fill[row] > 0) any = true;
    });
    if (!any) return;
    [this.#cache] = this.#flushRecent(
      this.#cache,
      refTree(this.#recent),
      this.#int32(base),
      this.#int32(fill),
    );
    for (const state of this.#slots) state.base = state.written;
    await settle(this.#cache, mode);
  }

  /**
   * Tokens per row of the next prefill call: the configured chunk, or on host caches (unless one
   * was given) 8 when every row's pending tokens fit in 8 (an observation), else 32 (a prompt).
   */
  #chunkFor(): number {
    if (!this.#host || this.#chunkGiven) return this.prefillChunk;
    const pending = Math.max(...this.#slots.map((state) => state.sequence.length - 1 - state.written));
    return pending <= 8 ? 8 : 32;
  }

  /** Writes every pending token except each slot's last one into the cache. */
  async flush(): Promise<void> {
    // Prefill runs in the decode site's preferred mode (in main mode it is lazy: the next decode
    // read runs it), so it is not timed separately.
    const mode = this.#site.preferred;
    if (this.#slots.some((state) => state.sequence.length - 1 > state.written)) await this.#flushAll(mode);
    this.#host?.reserve(Math.max(...this.#slots.map((state) => state.sequence.length)));
    for (;;) {
      const chunk = this.#chunkFor();
      const ids = new Int32Array(this.rows * chunk);
      const start = new Int32Array(this.rows);
      const count = new Int32Array(this.rows);
      let any = false;
      this.#slots.forEach((state, row) => {
        const n = Math.min(chunk, state.sequence.length - 1 - state.written);
        if (n <= 0) return;
        any = true;
        start[row] = state.written;
        count[row] = n;
        for (let c = 0; c < n; c++) ids[row * chunk + c] = state.sequence[state.written + c];
      });
      if (!any) return;
      if (this.#host) this.#host.step(ids, start, count, false);
      else
        [this.#cache] = this.#prefill(
          refTree(this.#params!),
          this.#cache,
          this.#int32(ids, [this.rows, chunk]),
          this.#int32(start),
          this.#int32(count),
        );
      if (!this.#host) await settle(this.#cache, mode);
      this.#slots.forEach((state, row) => {
        state.written += count[row];
        state.base = state.written;
      });
    }
  }

  /** Samples for several slots in lock-step. Each slot must hold at least one token. */
  async generate(requests: readonly GenerateRequest[]): Promise<GenerateResult[]> {
    const seen = new Set<number>();
    for (const request of requests) {
      const state = this.#slot(request.slot);
      if (seen.has(request.slot))
        throw new Error(`DecodeSession.generate: slot ${request.slot} requested twice`);
      seen.add(request.slot);
      if (state.sequence.length === 0)
        throw new Error(`DecodeSession.generate: slot ${request.slot} is empty; feed a prompt first`);
      validateSampling(request.sampling);
    }
    // Params fresh from a training step may still be computing on the worker pool.
    if (this.#params) await settle(this.#params, "pool");
    await this.flush();
    const results: GenerateResult[] = requests.map(() => ({ ids: [], logprobs: [], finishReason: "length" }));
    const stops = requests.map((request) => new Set(request.stop));
    const maxLen = this.config.maxLen;
    // A slot can sample while its sequence is shorter than maxLen.
    let active = requests
      .map((_, i) => i)
      .filter((i) => !this.#slots[requests[i].slot].full && requests[i].maxNew > 0)
      .filter((i) => this.#slots[requests[i].slot].sequence.length < maxLen);
    const V = this.config.vocabSize;
    while (active.length > 0) {
      const mode = this.#site.begin();
      if (
        active.some(
          (i) =>
            this.#slots[requests[i].slot].written - this.#slots[requests[i].slot].base >= this.recentSlots,
        )
      ) {
        await this.#flushAll(mode);
      }
      const ids = new Int32Array(this.rows);
      const position = new Int32Array(this.rows);
      const base = new Int32Array(this.rows);
      const activeRows = new Int32Array(this.rows);
      this.#slots.forEach((state, row) => {
        base[row] = state.base;
        position[row] = state.written;
      });
      for (const i of active) {
        const row = requests[i].slot;
        const state = this.#slots[row];
        ids[row] = state.sequence[state.written];
        activeRows[row] = 1;
      }
      let logits: Float32Array;
      // Normalised on the engine (KvModel.normalise): each row's log-partition and probabilities.
      let normalised: NormalisedStep | null = null;
      if (this.#host?.model.normalise) {
        const temperatures = new Float32Array(this.rows).fill(1);
        for (const i of active) temperatures[requests[i].slot] = requests[i].sampling.temperature || 1;
        normalised = this.#host.decode(ids, position, activeRows, temperatures);
        logits = normalised.logits;
      } else if (this.#host) logits = this.#host.step(ids, position, activeRows, true)!;
      else {
        const [recent, logitsArray] = this.#decode(
          refTree(this.#params!),
          refTree(this.#cache),
          this.#recent,
          this.#int32(ids),
          this.#int32(position),
          this.#int32(base),
          this.#int32(activeRows),
        );
        this.#recent = recent;
        logits = (await readArrays([logitsArray], mode, recent))[0] as Float32Array;
      }
      this.#site.end();
      const still: number[] = [];
      for (const i of active) {
        const request = requests[i];
        const state = this.#slots[request.slot];
        state.written += 1;
        const row = logits.subarray(request.slot * V, (request.slot + 1) * V);
        const { id, logprob } = normalised
          ? sampleNormalised(
              row,
              normalised.logZ[request.slot],
              normalised.probs.subarray(request.slot * V, (request.slot + 1) * V),
              request.sampling,
              request.rng,
            )
          : sampleToken(row, request.sampling, request.rng);
        state.sequence.push(id);
        results[i].ids.push(id);
        results[i].logprobs.push(logprob);
        if (stops[i].has(id)) results[i].finishReason = "stop";
        else if (results[i].ids.length < request.maxNew && state.sequence.length < maxLen) still.push(i);
      }
      active = still;
    }
    return results;
  }

  /** Releases the cache and the session's reference to the params. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    if (this.#params) disposeTree(this.#params);
    if (this.#host) {
      this.#host.release();
      return;
    }
    disposeTree(this.#cache as never);
    disposeTree(this.#recent as never);
    for (const program of [this.#prefill, this.#decode, this.#flushRecent]) {
      (program as unknown as { dispose(): void }).dispose();
    }
  }
}
