/**
 * KV caching for the ONNX engine: the caches live in host memory ([B, H, S, K] Float32Arrays per
 * layer, read by ONNX Runtime without a copy) and each step's program outputs only the keys and
 * values of its new tokens, which the host writes in place. jax-js cannot update an array in
 * place, which is why kv-cache.ts blends a one-hot write into the whole cache and keeps a recent
 * cache to flush; here a decode step moves a few kilobytes instead of the whole cache
 * (notes/engine-onnx.md: 1.43-1.54x PyTorch for this design, 0.54-0.60x for the blend converted
 * as it is).
 *
 * One program serves prefill chunks (C tokens per row, no logits) and decode steps (C = 1, with
 * logits): tokens at positions start[b] + c attend to the cached positions < start[b] and to the
 * chunk's own tokens up to themselves; rows with count 0 are untouched.
 *
 * B=batch rows, C=chunk, S=cache positions (maxLen), D=width, H=heads, K=head width, V=vocabulary.
 */
import { totalmem } from "node:os";
import { type JaxArray, jax, np } from "../../engine/jax.ts";
import { takeHostData } from "../../engine/onnx/host-copies.ts";
import { abstractInput, buildProgram, type Compiled } from "../../engine/onnx/jit.ts";
import type { HostData } from "../../engine/onnx/runtime.ts";
import type { GptConfig } from "./config.ts";
import { dense, type GptParams, headLogits, layerNorm, mlp, projectQkv } from "./model.ts";

const BLOCKED = -1e9;

/**
 * The chunk program: returns [new keys per layer [B,H,C,K]…, new values per layer…, logits
 * [B,C,V] when `withLogits`]. With `rowIndex` [B] the caches have more rows than the step and
 * row b of the step reads cache row rowIndex[b]. Consumes every argument.
 */
export function forwardHostChunk(
  params: GptParams,
  keys: JaxArray[],
  values: JaxArray[],
  ids: JaxArray,
  start: JaxArray,
  count: JaxArray,
  config: GptConfig,
  withLogits: boolean,
  rowIndex: JaxArray | null = null,
): JaxArray[] {
  const [B, C] = ids.shape;
  if (rowIndex) {
    // Compacted rows: the step's rows are rows `rowIndex` of the caches.
    keys = keys.map((cache) => np.take(cache, rowIndex.ref, 0));
    values = values.map((cache) => np.take(cache, rowIndex.ref, 0));
    rowIndex.dispose();
  }
  const S = keys[0].shape[2]; // the caches' capacity (≤ maxLen)
  const chunkIndex = np.arange(C, undefined, undefined, { dtype: np.int32 }).reshape([1, C]);
  const positions = start.ref.reshape([B, 1]).add(chunkIndex.ref); // [B,C]
  const keyIndex = np.arange(S, undefined, undefined, { dtype: np.int32 }).reshape([1, 1, S]);
  const maskCache = np.where(keyIndex.less(start.reshape([B, 1, 1])), 0, BLOCKED).reshape([B, 1, 1, S]); // [B,1,1,S]: cached positions < start
  const own = chunkIndex.ref.reshape([1, 1, C]);
  const maskChunk = np
    .where(
      np.logicalAnd(own.ref.lessEqual(chunkIndex.reshape([1, C, 1])), own.less(count.reshape([B, 1, 1]))),
      0,
      BLOCKED,
    )
    .reshape([B, 1, C, C]); // [B,1,C,C']: earlier chunk tokens up to this one
  const wte = params.wte;
  // Padding tokens of a row near the end may run past maxLen: clamp their (unused) positions.
  const clamped = np.minimum(positions, config.maxLen - 1);
  let x = np.take(wte.ref, ids, 0).add(np.take(params.wpe, clamped, 0)); // [B,C,D]
  const newKeys: JaxArray[] = [];
  const newValues: JaxArray[] = [];
  params.blocks.forEach((p, layer) => {
    const [q, k, v] = projectQkv(layerNorm(x.ref, p.ln1), p.wqkv, p.bqkv, config.nHeads); // [B,C,H,K]
    const [, , H, K] = q.shape;
    const kh = k.transpose([0, 2, 1, 3]); // [B,H,C,K]
    const vh = v.transpose([0, 2, 1, 3]);
    newKeys.push(kh.ref);
    newValues.push(vh.ref);
    const qh = q.mul(1 / Math.sqrt(K)).transpose([0, 2, 1, 3]); // [B,H,C,K]
    const scoresCache = np.matmul(qh.ref, keys[layer].transpose([0, 1, 3, 2])).add(maskCache.ref); // [B,H,C,S]
    const scoresChunk = np.matmul(qh, kh.transpose([0, 1, 3, 2])).add(maskChunk.ref); // [B,H,C,C']
    const top = np.maximum(
      scoresCache.ref.max(-1, { keepdims: true }),
      scoresChunk.ref.max(-1, { keepdims: true }),
    ); // [B,H,C,1]
    const expCache = np.exp(scoresCache.sub(top.ref));
    const expChunk = np.exp(scoresChunk.sub(top));
    const total = expCache.ref.sum(-1, { keepdims: true }).add(expChunk.ref.sum(-1, { keepdims: true }));
    const attended = np
      .matmul(expCache, values[layer])
      .add(np.matmul(expChunk, vh))
      .div(total) // [B,H,C,K]
      .transpose([0, 2, 1, 3])
      .reshape([B, C, H * K]);
    x = x.add(dense(attended, p.wo, p.bo));
    x = x.add(mlp(layerNorm(x.ref, p.ln2), p));
  });
  maskCache.dispose();
  maskChunk.dispose();
  if (!withLogits) {
    for (const leaf of [x, wte, params.lnf.scale, params.lnf.bias]) leaf.dispose();
    return [...newKeys, ...newValues];
  }
  return [...newKeys, ...newValues, headLogits(layerNorm(x, params.lnf), wte)];
}

/**
 * A model the host caches can serve: its cache shape, its parameters as host arrays (in the leaf
 * order of `abstractParams`) and its chunk program (the contract of `forwardHostChunk`). `key`
 * names everything the program closes over (the config), so models of one shape share programs.
 */
export interface KvModel {
  key: string;
  layers: number;
  /** Key/value heads per layer (the caches' second axis). */
  kvHeads: number;
  headDim: number;
  vocabSize: number;
  maxLen: number;
  /** The parameter tree with abstract leaves (`abstractInput`), for tracing. */
  abstractParams: unknown;
  paramData: HostData[];
  /**
   * Parameters that stay fixed for as long as this model's data does (a frozen base under a LoRA
   * adapter, a checkpoint served as it is): `id` names that data (programs with it baked in are
   * shared by models with the same id), `leaves[i]` says whether leaf i of `paramData` is one of
   * them. Decode programs then hold those leaves as constants, which ONNX Runtime packs once
   * instead of at every step (see constantDecode()).
   */
  fixedParams?: { id: string; leaves: readonly boolean[] };
  /**
   * Decode steps also normalise the logits on the engine (float32): each row's log-partition at
   * its temperature and its probabilities come back beside the logits (`HostKvCache.decode`), so
   * the host's draw runs no exp over the vocabulary (sampler.ts `sampleNormalised`). The hf engine
   * does; the lab's GPT draws from its logits in float64 on the host, which its committed results
   * rely on to the bit.
   */
  normalise?: boolean;
  /**
   * Steps run on as few rows as have work (buckets of 1, 2, 4, … rows); otherwise on at least 8.
   * The hf engine's decode step is bound by reading the weights at 1 row and by arithmetic at 8
   * (Qwen3-0.6B's shape: 91 ms at 1 row, 241 ms at 8), so one live sequence must not pay for
   * eight. The lab's GPT keeps its 8-row floor: its committed results were drawn from those
   * programs, to the bit.
   */
  smallSteps?: boolean;
  /**
   * The caches grow at once to hold a whole prompt about to be written chunk by chunk
   * (`HostKvCache.reserve`) rather than through every capacity on the way: at Qwen3-0.6B's shape
   * 8 rows of 512 positions are 0.94 GB of caches, and the 64-, 128- and 256-position ones left
   * behind were 0.8 GB more until collected. The lab's GPT keeps its growth as it was (its results
   * were computed at those capacities, to the bit).
   */
  reserveCapacity?: boolean;
  forward(
    params: never,
    keys: JaxArray[],
    values: JaxArray[],
    ids: JaxArray,
    start: JaxArray,
    count: JaxArray,
    withLogits: boolean,
    rowIndex: JaxArray | null,
  ): JaxArray[];
}

/** The embedded GPT as a `KvModel`. Reads the params' data once (does not consume them). */
export function gptKvModel(params: GptParams, config: GptConfig): KvModel {
  if (params.wte.dtype !== "float32") throw new Error("HostKvCache: float32 params only");
  return {
    key: JSON.stringify(config),
    layers: config.nLayers,
    kvHeads: config.nHeads,
    headDim: config.dModel / config.nHeads,
    vocabSize: config.vocabSize,
    maxLen: config.maxLen,
    abstractParams: jax.tree.map(
      (leaf: JaxArray) => abstractInput([...leaf.shape], leaf.dtype as string),
      params as never,
    ),
    paramData: (jax.tree.leaves(params as never) as JaxArray[]).map((leaf) => takeHostData(leaf.ref)),
    forward: (p, keys, values, ids, start, count, withLogits, rowIndex) =>
      forwardHostChunk(p as GptParams, keys, values, ids, start, count, config, withLogits, rowIndex),
  };
}

/** Open chunk programs by signature, least recently used first, with the fixed params they bake in. */
const programs = new Map<string, { compiled: Compiled; baked: string | null }>();
const MAX_PROGRAMS = 48;
/**
 * Decode programs with one model's fixed parameters baked in: each holds a packed copy of those
 * weights (about their size), so only the most recently used few stay open (a cache growing
 * through its capacities uses one at a time), and together they take at most a quarter of the
 * machine's memory: a 135M model's (0.54 GB) keeps 3 on 8 GB; a model past MAX_BAKED_BYTES
 * (a 0.6B one's 2.4 GB) none, its decode steps taking the weights as inputs.
 */
const MAX_BAKED_PROGRAMS = 3;
const BAKED_MEMORY_SHARE = 0.25;
/**
 * Weights past this size are never baked in. A baked program holds ORT's packed copy and, for a
 * tied embedding, the table itself beside it: at Qwen3-0.6B's shape (2.4 GB of float32 weights)
 * each one took 4.1 GB more, for no faster decode step (1 row: 91–117 ms fed, 108–122 ms baked;
 * 8 rows: 241 ms fed, 225–247 ms baked, docs/real-checkpoints.md): a step of a model that size
 * is bound by reading its weights, not by ORT's per-run packing, which only pays for small models.
 */
const MAX_BAKED_BYTES = 2 ** 30;

/** Baked programs a model may keep open, by its fixed parameters' size (computed once per model). */
const bakedLimits = new WeakMap<KvModel, number>();

function bakedProgramLimit(model: KvModel, fixed: NonNullable<KvModel["fixedParams"]>): number {
  let limit = bakedLimits.get(model);
  if (limit === undefined) {
    let bytes = 0;
    model.paramData.forEach((data, i) => {
      if (fixed.leaves[i]) bytes += data.byteLength;
    });
    limit =
      bytes > MAX_BAKED_BYTES
        ? 0
        : Math.min(MAX_BAKED_PROGRAMS, Math.floor((totalmem() * BAKED_MEMORY_SHARE) / Math.max(bytes, 1)));
    bakedLimits.set(model, limit);
  }
  return limit;
}

/**
 * Whether decode programs bake in a model's fixed parameters: AGENTRL_ORT_CONSTANT_WEIGHTS=0 turns
 * it off (each decode step then packs the weights again, and no program holds a copy of them).
 */
export function constantDecode(): boolean {
  const raw = process.env.AGENTRL_ORT_CONSTANT_WEIGHTS;
  if (raw === undefined || raw === "" || raw === "1") return true;
  if (raw === "0") return false;
  throw new Error(`AGENTRL_ORT_CONSTANT_WEIGHTS must be 0 or 1, got "${raw}"`);
}

/**
 * The fixed parameters a program bakes in: a decode step's (one token per row: its products are
 * too small to repay packing the weights at each run, where a prefill chunk's are not); none for
 * the rest, whose parameters are all inputs.
 */
function bakedParams(model: KvModel, chunk: number, withLogits: boolean): KvModel["fixedParams"] {
  const fixed = model.fixedParams;
  if (!fixed || !withLogits || chunk !== 1 || !constantDecode()) return undefined;
  return bakedProgramLimit(model, fixed) > 0 ? fixed : undefined;
}

function closeWhere(keep: number, which: (baked: string | null) => boolean): void {
  const matching = [...programs].filter(([, entry]) => which(entry.baked));
  for (const [key, { compiled }] of matching.slice(0, Math.max(0, matching.length - keep))) {
    if (compiled.kind === "onnx") compiled.program.dispose();
    programs.delete(key);
  }
}

/** How many open decode programs have the fixed parameters named `id` baked in. */
export function bakedProgramsOpen(id: string): number {
  return [...programs.values()].filter((entry) => entry.baked === id).length;
}

/** Closes the programs that baked in the fixed parameters named `id` (their owner is done with them). */
export function releaseFixedParams(id: string): void {
  closeWhere(0, (baked) => baked === id);
}

function chunkProgram(
  model: KvModel,
  rows: number,
  chunk: number,
  withLogits: boolean,
  S: number,
  /** Rows of the caches when the step gathers its rows from them (null: the caches are the step's). */
  cacheRows: number | null,
  /** Whether the step normalises its logits (a temperature per row in, logZ and probs out). */
  normalise: boolean,
) {
  const baked = bakedParams(model, chunk, withLogits);
  const key = JSON.stringify([
    model.key,
    rows,
    chunk,
    withLogits,
    S,
    cacheRows,
    baked?.id ?? null,
    normalise,
  ]);
  let entry = programs.get(key);
  programs.delete(key); // (re)inserted below: most recently used last
  if (!entry) {
    const { layers: L, kvHeads: H, headDim: K } = model;
    const cache = () =>
      Array.from({ length: L }, () => abstractInput([cacheRows ?? rows, H, S, K], "float32"));
    const abstract: unknown[] = [
      model.abstractParams,
      cache(),
      cache(),
      abstractInput([rows, chunk], "int32"),
      abstractInput([rows], "int32"),
      abstractInput([rows], "int32"),
    ];
    if (cacheRows !== null) abstract.push(abstractInput([rows], "int32"));
    if (normalise) abstract.push(abstractInput([rows], "float32"));
    const f = (
      p: never,
      k: JaxArray[],
      v: JaxArray[],
      ids: JaxArray,
      start: JaxArray,
      count: JaxArray,
      ...rest: JaxArray[]
    ) => {
      const rowIndex = cacheRows === null ? null : rest[0];
      const outputs = model.forward(p, k, v, ids, start, count, withLogits, rowIndex);
      return normalise ? [...outputs, ...normalised(outputs.at(-1)!.ref, rest.at(-1)!)] : outputs;
    };
    const leaves = jax.tree.leaves(abstract as never).length;
    // The parameters are the program's first inputs, in paramData's order.
    const bound =
      baked && new Map(model.paramData.flatMap((data, i) => (baked.leaves[i] ? [[i, data]] : [])));
    const compiled = buildProgram(
      f as never,
      abstract,
      leaves,
      key,
      {
        name: withLogits ? "decode" : "prefill",
        // Measured on eval: no slower than "all" per step, and sessions open 2-3x faster (a
        // recipe stage opens a dozen of these).
        optimization: "basic",
        // A decode step's products take the weights first (dot.ts): fed weights are not packed
        // again at every step. Models with small steps only (the lab's keep their kernels).
        weightsFirst: model.smallSteps === true && chunk === 1,
      },
      bound as Map<number, HostData> | undefined,
    );
    if (compiled.kind === "fallback") throw new Error(`host KV cache: ${compiled.reason}`);
    entry = { compiled, baked: baked?.id ?? null };
    if (baked) closeWhere(bakedProgramLimit(model, baked) - 1, (id) => id === baked.id);
    closeWhere(MAX_PROGRAMS - 1, () => true);
  }
  programs.set(key, entry);
  return { program: entry.compiled as Extract<Compiled, { kind: "onnx" }>, baked };
}

/**
 * A decode step's logits [B,1,V] at temperatures [B]: log Σ exp(logits / T) per row [B] and the
 * probabilities softmax(logits / T) [B,V].
 */
function normalised(logits: JaxArray, temperatures: JaxArray): [JaxArray, JaxArray] {
  const [B, , V] = logits.shape;
  const scaled = logits.reshape([B, V]).div(temperatures.reshape([B, 1]));
  const top = scaled.ref.max(-1, { keepdims: true });
  const exps = np.exp(scaled.sub(top.ref));
  const total = exps.ref.sum(-1, { keepdims: true });
  return [top.add(np.log(total.ref)).reshape([B]), exps.div(total)];
}

type StepOutputs = { logits: Float32Array | null; logZ: Float32Array | null; probs: Float32Array | null };

/** A normalised decode step's outputs (`HostKvCache.decode`). */
export interface NormalisedStep {
  logits: Float32Array;
  logZ: Float32Array;
  probs: Float32Array;
}

/** Cache capacities: powers of two from 64, then maxLen (one program per capacity in use). */
function capacityFor(needed: number, maxLen: number): number {
  let capacity = Math.min(64, maxLen);
  while (capacity < needed) capacity = Math.min(maxLen, capacity * 2);
  return capacity;
}

/**
 * `target[at..] = source[from..from + length]`. A decode step writes one key and one value row of
 * K floats per row, head and layer (2,048 of them at 64 rows): a loop copies such short runs
 * without the subarray objects `set` needs (the step's own time at 64 rows: ~1.1 → ~0.9 ms).
 */
function copyInto(
  target: Float32Array,
  at: number,
  source: Float32Array,
  from: number,
  length: number,
): void {
  if (length > 256) {
    target.set(source.subarray(from, from + length), at);
    return;
  }
  for (let i = 0; i < length; i++) target[at + i] = source[from + i];
}

/**
 * Cache buffers given back by caches that grew or were released, by length, for the next cache
 * of that size (zeroed first). A dropped buffer is freed only when the collector runs, which at a
 * real model's size is too late: an RL step's new policy allocated 0.94 GB of fresh caches while
 * the last step's still held theirs (Qwen3-0.6B's shape, 8 rows of 512 positions). At most
 * MAX_SPARE_BYTES are kept; past it a buffer is left to the collector.
 */
const spare = new Map<number, Float32Array[]>();
let spareBytes = 0;
const MAX_SPARE_BYTES = 2 ** 30;

function takeBuffer(size: number): Float32Array {
  const buffer = spare.get(size)?.pop();
  if (!buffer) return new Float32Array(size);
  spareBytes -= buffer.byteLength;
  return buffer.fill(0);
}

/**
 * Lets go of the spare cache buffers (the collector frees them when memory is next asked for): for
 * a process done sampling, such as a training run about to merge and write its model.
 */
export function dropSpareCaches(): void {
  spare.clear();
  spareBytes = 0;
}

function giveBack(buffers: readonly Float32Array[]): void {
  for (const buffer of buffers) {
    if (spareBytes + buffer.byteLength > MAX_SPARE_BYTES) return;
    spareBytes += buffer.byteLength;
    const list = spare.get(buffer.length) ?? [];
    list.push(buffer);
    spare.set(buffer.length, list);
  }
}

/**
 * Host caches and the programs that extend them, for `rows` sequences of one model. The caches
 * hold `capacity` positions per row, the smallest bucket that fits the longest live row (attention
 * reads the whole capacity, so short sequences cost less, as PyTorch's growing caches do); they
 * are copied into a larger bucket when a row outgrows it and into a smaller one when every row has
 * become short again (after resets).
 */
export class HostKvCache {
  readonly rows: number;
  readonly model: KvModel;
  readonly #params: HostData[];
  #keys: Float32Array[];
  #values: Float32Array[];
  #capacity: number;
  /** Positions cached per row (what a change of capacity must keep). */
  readonly #lengths: Int32Array;
  /** Positions the last `reserve` asked for (the caches do not shrink below them). */
  #reserved = 0;

  constructor(model: KvModel, rows: number) {
    this.rows = rows;
    this.model = model;
    this.#params = model.paramData;
    this.#lengths = new Int32Array(rows);
    this.#capacity = capacityFor(1, model.maxLen);
    this.#keys = this.#allocate(this.#capacity);
    this.#values = this.#allocate(this.#capacity);
  }

  /**
   * Grows the caches at once to hold `length` positions per row (before a prompt is written chunk
   * by chunk), and keeps them from shrinking below it until the next reservation. Only for models
   * with `reserveCapacity`; a no-op otherwise.
   */
  reserve(length: number): void {
    if (!this.model.reserveCapacity) return;
    this.#reserved = Math.min(length, this.model.maxLen);
    const fits = capacityFor(this.#reserved, this.model.maxLen);
    if (fits > this.#capacity) this.#resize(fits);
  }

  /** Positions each row's cache holds now. */
  get capacity(): number {
    return this.#capacity;
  }

  #allocate(capacity: number): Float32Array[] {
    const size = this.rows * capacity * this.model.kvHeads * this.model.headDim;
    return Array.from({ length: this.model.layers }, () => takeBuffer(size));
  }

  /** Copies every row's cached positions into caches of another capacity. */
  #resize(capacity: number): void {
    const H = this.model.kvHeads;
    const K = this.model.headDim;
    const old = this.#capacity;
    const move = (caches: Float32Array[]) =>
      caches.map((cache) => {
        const next = takeBuffer(this.rows * H * capacity * K);
        for (let b = 0; b < this.rows; b++) {
          const keep = Math.min(this.#lengths[b], capacity) * K;
          for (let h = 0; h < H; h++) {
            const from = (b * H + h) * old * K;
            next.set(cache.subarray(from, from + keep), (b * H + h) * capacity * K);
          }
        }
        return next;
      });
    const before = [...this.#keys, ...this.#values];
    this.#keys = move(this.#keys);
    this.#values = move(this.#values);
    giveBack(before);
    this.#capacity = capacity;
  }

  /** Gives the cache buffers back for the next cache (the cache is unusable after). */
  release(): void {
    giveBack([...this.#keys, ...this.#values]);
    this.#keys = [];
    this.#values = [];
  }

  /** Forgets a row's cached positions (a new sequence starts there). */
  reset(row: number): void {
    this.#lengths[row] = 0;
  }

  /**
   * Runs C = ids.length / rows tokens per row from `start[b]` (`count[b]` of them real) and writes
   * their keys and values into the caches. Returns the logits [B·C·V] when asked for.
   */
  step(ids: Int32Array, start: Int32Array, count: Int32Array, withLogits: boolean): Float32Array | null {
    return this.#step(ids, start, count, withLogits, null).logits;
  }

  /**
   * A decode step (one token per row) of a model that normalises on the engine (`KvModel.normalise`)
   * at each row's temperature: the logits [B·V], log Σ exp(logits / T) per row [B] and the
   * probabilities [B·V]. Rows without work have zero logits and probabilities.
   */
  decode(ids: Int32Array, start: Int32Array, count: Int32Array, temperatures: Float32Array): NormalisedStep {
    if (!this.model.normalise)
      throw new Error("HostKvCache.decode: the model does not normalise on the engine");
    const { logits, logZ, probs } = this.#step(ids, start, count, true, temperatures);
    return { logits: logits!, logZ: logZ!, probs: probs! };
  }

  #step(
    ids: Int32Array,
    start: Int32Array,
    count: Int32Array,
    withLogits: boolean,
    temperatures: Float32Array | null,
  ): StepOutputs {
    const { rows, model } = this;
    const chunk = ids.length / rows;
    const L = model.layers;
    const H = model.kvHeads;
    const K = model.headDim;
    const V = model.vocabSize;
    // The capacity that fits every live row and this step's tokens.
    let needed = Math.max(1, this.#reserved);
    count.forEach((n, b) => {
      if (n > 0) this.#lengths[b] = Math.max(this.#lengths[b], start[b] + n);
    });
    for (const length of this.#lengths) needed = Math.max(needed, length);
    const fits = capacityFor(needed, model.maxLen);
    if (fits > this.#capacity || fits * 2 <= this.#capacity) this.#resize(fits);
    const S = this.#capacity;
    // Run only the rows with work. When they span a narrow window [lo, lo + size), the window's
    // caches are subarrays (no copy); when they are scattered and at most half the window, the
    // step gathers their cache rows (a copy of those rows only) and works on them alone. Sizes
    // are powers of two (one program each), so a few programs serve any set of rows.
    const busy: number[] = [];
    count.forEach((n, b) => {
      if (n > 0) busy.push(b);
    });
    const logits = withLogits ? new Float32Array(rows * chunk * V) : null;
    const normalise = temperatures !== null;
    const logZ = normalise ? new Float32Array(rows) : null;
    const probs = normalise ? new Float32Array(rows * V) : null;
    if (busy.length === 0) return { logits, logZ, probs };
    const bucket = (n: number) => {
      let size = Math.min(rows, model.smallSteps ? 1 : 8);
      while (size < n) size = Math.min(rows, size * 2);
      return size;
    };
    const span = bucket(busy.at(-1)! - busy[0] + 1);
    const gathered = bucket(busy.length);
    const gather = gathered * 2 <= span;
    const size = gather ? gathered : span;
    const lo = gather ? 0 : Math.min(busy[0], rows - span);
    // The step's row r is cache row rowOf[r] (padding rows of a gathered step have count 0).
    const rowOf = Int32Array.from({ length: size }, (_, r) => (gather ? (busy[r] ?? busy[0]) : lo + r));
    const pick = <T extends Int32Array | Float32Array>(data: T, perRow: number): T => {
      if (!gather) return data.subarray(lo * perRow, (lo + size) * perRow) as T;
      const out = new (data.constructor as new (n: number) => T)(size * perRow);
      busy.forEach((b, r) => {
        out.set(data.subarray(b * perRow, (b + 1) * perRow), r * perRow);
      });
      return out;
    };
    const window = (data: Float32Array) =>
      gather ? data : data.subarray(lo * H * S * K, (lo + size) * H * S * K);
    const { program, baked } = chunkProgram(
      model,
      size,
      chunk,
      withLogits,
      S,
      gather ? rows : null,
      normalise,
    );
    const inputs = [
      ...(baked ? this.#params.filter((_, i) => !baked.leaves[i]) : this.#params),
      ...this.#keys.map(window),
      ...this.#values.map(window),
      pick(ids, chunk),
      pick(start, 1),
      pick(count, 1),
    ];
    if (gather) inputs.push(rowOf);
    if (temperatures) inputs.push(pick(temperatures, 1));
    const outputs = program.program.run(inputs);
    for (let layer = 0; layer < L; layer++) {
      const [freshKeys, freshValues] = [outputs[layer], outputs[L + layer]] as Float32Array[];
      for (let r = 0; r < size; r++) {
        const b = rowOf[r];
        const n = gather && r >= busy.length ? 0 : count[b];
        if (n === 0) continue;
        for (let h = 0; h < H; h++) {
          const from = (r * H + h) * chunk * K;
          const to = ((b * H + h) * S + start[b]) * K;
          copyInto(this.#keys[layer], to, freshKeys, from, n * K);
          copyInto(this.#values[layer], to, freshValues, from, n * K);
        }
      }
    }
    // The step's rows back to their cache rows (a gathered step's padding rows are dropped).
    const scatter = (target: Float32Array | null, fresh: HostData, perRow: number) => {
      if (!target) return;
      for (let r = 0; r < size; r++) {
        if (gather && r >= busy.length) break;
        target.set((fresh as Float32Array).subarray(r * perRow, (r + 1) * perRow), rowOf[r] * perRow);
      }
    };
    scatter(logits, outputs[2 * L], chunk * V);
    if (normalise) {
      scatter(logZ, outputs[2 * L + 1], 1);
      scatter(probs, outputs[2 * L + 2], V);
    }
    return { logits, logZ, probs };
  }
}
