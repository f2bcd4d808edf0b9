/**
 * Incremental decoding with fixed-size KV caches: every layer keeps keys and values for all
 * `maxLen` positions of every batch row ([B, H, S, K], S = maxLen), so shapes never change and
 * each program compiles once. There is no dynamic slicing: C new tokens per row, starting at that
 * row's own position, are written by a one-hot blend
 *
 *   cache ← cache · (1 − Σ_c W[b,c,s]) + Σ_c W[b,c,s] · new[b,c]      W = onehot(start[b] + c) if c < count[b]
 *
 * and read through an additive mask (a query at position p sees keys at positions ≤ p). Rows with
 * count 0 are left untouched, so one program serves any subset of rows and prompts of different
 * lengths. Positions past a row's length may hold stale values from an earlier occupant of the
 * row: the mask hides them.
 *
 * The blend rewrites the whole cache, which for one token per step costs more than the step's
 * matmuls. So single-token decoding writes into a small "recent" cache of R positions per row
 * instead ([B, H, R, K]; slot r holds position base[b] + r), attends over both caches, and
 * `flushRecent` moves the recent tokens into the main cache once every R steps.
 *
 * B=batch rows, C=chunk, S=cache positions (maxLen), R=recent slots, D=width, H=heads,
 * K=head width, V=vocabulary.
 */
import { type JaxArray, np, dtype as toDType } from "../../engine/jax.ts";
import type { GptConfig } from "./config.ts";
import {
  dense,
  type GptParams,
  headLogits,
  layerNorm,
  mlp,
  oneHot,
  type ParamDType,
  projectQkv,
} from "./model.ts";

export type KvCache = { keys: JaxArray[]; values: JaxArray[] };

/** Large negative additive mask value (exp underflows to exactly 0). */
const BLOCKED = -1e9;

/**
 * Writes `fresh` [B,H,C,K] into `old` [B,H,S,K] where `write` [B,C,S] (one-hot rows, zero rows
 * for padding) says so. Consumes all three.
 */
function writeChunk(old: JaxArray, fresh: JaxArray, write: JaxArray): JaxArray {
  const [B, C, S] = write.shape;
  const keep = write.ref.sum(1).neg().add(1).reshape([B, 1, S, 1]); // [B,1,S,1]
  if (C === 1) {
    // A broadcast product (one fused elementwise kernel): a vecdot over a length-1 axis runs as
    // a slow scalar reduction.
    return old.mul(keep).add(write.reshape([B, 1, S, 1]).mul(fresh)); // [B,1,S,1]·[B,H,1,K]
  }
  const writeT = np.expandDims(write.transpose([0, 2, 1]), [1, 3]); // [B,1,S,1,C]
  return old.mul(keep).add(np.vecdot(writeT, np.expandDims(fresh.transpose([0, 1, 3, 2]), 2))); // [B,H,S,K]
}

/** An empty cache for `rows` sequences. */
export function createKvCache(config: GptConfig, rows: number, dtype: ParamDType = "float32"): KvCache {
  const shape = [rows, config.nHeads, config.maxLen, config.dModel / config.nHeads];
  const zeros = () =>
    Array.from({ length: config.nLayers }, () => np.zeros(shape, { dtype: toDType(dtype) }));
  return { keys: zeros(), values: zeros() };
}

/**
 * Runs C tokens per row through the model against the cache. `ids` [B,C] int32, `start` [B] int32
 * (position of each row's first token), `count` [B] int32 (how many of the C tokens are real;
 * 0 = leave the row alone). Returns the updated cache and, when `withLogits`, the logits [B,C,V]
 * (meaningful only for c < count[b]). Consumes every argument.
 */
export function forwardChunk(
  params: GptParams,
  cache: KvCache,
  ids: JaxArray,
  start: JaxArray,
  count: JaxArray,
  config: GptConfig,
  withLogits: boolean,
): { cache: KvCache; logits: JaxArray | null } {
  const [B, C] = ids.shape;
  const S = config.maxLen;
  const dtype = params.wte.dtype as ParamDType;
  const chunkIndex = np.arange(C, undefined, undefined, { dtype: np.int32 }).reshape([1, C]);
  const positions = start.reshape([B, 1]).add(chunkIndex.ref); // [B,C]
  const valid = chunkIndex.less(count.reshape([B, 1])).astype(toDType(dtype)); // [B,C]
  // W[b,c,s] = 1 where token c of row b goes to cache position s.
  const write = oneHot(positions.ref, S, dtype).mul(valid.reshape([B, C, 1])); // [B,C,S]
  // Query at position p attends to keys s ≤ p.
  const keyIndex = np.arange(S, undefined, undefined, { dtype: np.int32 }).reshape([1, 1, S]);
  const visible = keyIndex.lessEqual(positions.ref.reshape([B, C, 1])); // [B,C,S]
  const mask = np.where(visible, 0, BLOCKED).astype(toDType(dtype)).reshape([B, 1, C, S]);

  const wte = params.wte;
  let x = np
    .matmul(oneHot(ids, config.vocabSize, dtype), wte.ref)
    .add(np.matmul(oneHot(positions, S, dtype), params.wpe)); // [B,C,D]
  const keys: JaxArray[] = [];
  const values: JaxArray[] = [];
  params.blocks.forEach((p, layer) => {
    const [q, k, v] = projectQkv(layerNorm(x.ref, p.ln1), p.wqkv, p.bqkv, config.nHeads); // [B,C,H,K]
    const layerKeys = writeChunk(cache.keys[layer], k.transpose([0, 2, 1, 3]), write.ref);
    const layerValues = writeChunk(cache.values[layer], v.transpose([0, 2, 1, 3]), write.ref);
    keys.push(layerKeys.ref);
    values.push(layerValues.ref);
    const [, , H, K] = q.shape;
    const qh = np.expandDims(q.mul(1 / Math.sqrt(K)).transpose([0, 2, 1, 3]), 3); // [B,H,C,1,K]
    const scores = np.vecdot(qh, np.expandDims(layerKeys, 2)).add(mask.ref); // [B,H,C,S]
    const probs = np.expandDims(
      np.exp(scores.ref.sub(scores.max(-1, { keepdims: true }))).transpose([0, 2, 1, 3]),
      3,
    ); // [B,C,H,1,S]
    const vh = np.expandDims(layerValues.transpose([0, 1, 3, 2]), 1); // [B,1,H,K,S]
    const weighted = np.vecdot(probs.ref, vh); // [B,C,H,K], unnormalised
    const norm = probs.sum(-1); // [B,C,H,1]
    const attended = weighted.div(norm).reshape([B, C, H * K]);
    x = x.add(dense(attended, p.wo, p.bo));
    x = x.add(mlp(layerNorm(x.ref, p.ln2), p));
  });
  write.dispose();
  mask.dispose();
  const logits = withLogits ? headLogits(layerNorm(x, params.lnf), wte) : null;
  if (!withLogits) {
    x.dispose();
    wte.dispose();
    for (const leaf of [params.lnf.scale, params.lnf.bias]) leaf.dispose();
  }
  return { cache: { keys, values }, logits };
}

/** Per-row state of the recent cache: R slots of keys and values per layer ([B,H,R,K]). */
export type RecentKv = { keys: JaxArray[]; values: JaxArray[] };

export function createRecentKv(
  config: GptConfig,
  rows: number,
  slots: number,
  dtype: ParamDType = "float32",
): RecentKv {
  const shape = [rows, config.nHeads, slots, config.dModel / config.nHeads];
  const zeros = () =>
    Array.from({ length: config.nLayers }, () => np.zeros(shape, { dtype: toDType(dtype) }));
  return { keys: zeros(), values: zeros() };
}

/**
 * One decode step: token `ids[b]` at position `position[b]` for rows with `active[b] = 1`. The
 * main cache holds positions < base[b]; the recent cache holds base[b]..position[b]-1 and gets
 * this token's keys and values in slot position[b] − base[b] (< R). Returns the new recent
 * cache and the logits [B,V]. Consumes every argument (pass a reference to `cache`: it is read,
 * not replaced).
 */
export function forwardDecode(
  params: GptParams,
  cache: KvCache,
  recent: RecentKv,
  ids: JaxArray,
  position: JaxArray,
  base: JaxArray,
  active: JaxArray,
  config: GptConfig,
): { recent: RecentKv; logits: JaxArray } {
  const [B] = ids.shape;
  const S = config.maxLen;
  const R = recent.keys[0].shape[2];
  const dtype = params.wte.dtype as ParamDType;
  const f = toDType(dtype);
  const slot = position.ref.sub(base.ref); // [B]
  const write = oneHot(slot.ref, R, dtype)
    .mul(active.astype(f).reshape([B, 1]))
    .reshape([B, 1, R]); // [B,1,R]
  const sIndex = np.arange(S, undefined, undefined, { dtype: np.int32 }).reshape([1, S]);
  const rIndex = np.arange(R, undefined, undefined, { dtype: np.int32 }).reshape([1, R]);
  const maskMain = np
    .where(sIndex.less(base.reshape([B, 1])), 0, BLOCKED)
    .astype(f)
    .reshape([B, 1, 1, S]);
  const maskRecent = np
    .where(rIndex.lessEqual(slot.reshape([B, 1])), 0, BLOCKED)
    .astype(f)
    .reshape([B, 1, 1, R]);

  const wte = params.wte;
  let x = np
    .matmul(oneHot(ids.reshape([B, 1]), config.vocabSize, dtype), wte.ref)
    .add(np.matmul(oneHot(position.reshape([B, 1]), S, dtype), params.wpe)); // [B,1,D]
  const keys: JaxArray[] = [];
  const values: JaxArray[] = [];
  params.blocks.forEach((p, layer) => {
    const [q, k, v] = projectQkv(layerNorm(x.ref, p.ln1), p.wqkv, p.bqkv, config.nHeads); // [B,1,H,K]
    const recentKeys = writeChunk(recent.keys[layer], k.transpose([0, 2, 1, 3]), write.ref); // [B,H,R,K]
    const recentValues = writeChunk(recent.values[layer], v.transpose([0, 2, 1, 3]), write.ref);
    keys.push(recentKeys.ref);
    values.push(recentValues.ref);
    const [, , H, K] = q.shape;
    const qh = np.expandDims(q.mul(1 / Math.sqrt(K)).transpose([0, 2, 1, 3]), 3); // [B,H,1,1,K]
    const scoresMain = np.vecdot(qh.ref, np.expandDims(cache.keys[layer], 2)).add(maskMain.ref); // [B,H,1,S]
    const scoresRecent = np.vecdot(qh, np.expandDims(recentKeys, 2)).add(maskRecent.ref); // [B,H,1,R]
    const top = np.maximum(
      scoresMain.ref.max(-1, { keepdims: true }),
      scoresRecent.ref.max(-1, { keepdims: true }),
    );
    const expMain = np.exp(scoresMain.sub(top.ref)); // [B,H,1,S]
    const expRecent = np.exp(scoresRecent.sub(top)); // [B,H,1,R]
    const total = expMain.ref.sum(-1).add(expRecent.ref.sum(-1)); // [B,H,1]
    const weigh = (e: JaxArray, vs: JaxArray) =>
      np.vecdot(np.expandDims(e.transpose([0, 2, 1, 3]), 3), np.expandDims(vs.transpose([0, 1, 3, 2]), 1)); // [B,1,H,K]
    const attended = weigh(expMain, cache.values[layer])
      .add(weigh(expRecent, recentValues))
      .div(total.transpose([0, 2, 1]).reshape([B, 1, H, 1]))
      .reshape([B, 1, H * K]);
    x = x.add(dense(attended, p.wo, p.bo));
    x = x.add(mlp(layerNorm(x.ref, p.ln2), p));
  });
  write.dispose();
  maskMain.dispose();
  maskRecent.dispose();
  const logits = headLogits(layerNorm(x, params.lnf), wte).reshape([B, config.vocabSize]);
  return { recent: { keys, values }, logits };
}

/**
 * Moves recent slots r < fill[b] into the main cache at positions base[b] + r. Returns the new
 * main cache. Consumes `cache`, `base` and `fill`; pass a reference to `recent` (read only).
 */
export function flushRecent(
  cache: KvCache,
  recent: RecentKv,
  base: JaxArray,
  fill: JaxArray,
  maxLen: number,
): KvCache {
  const [B, , R] = recent.keys[0].shape;
  const dtype = recent.keys[0].dtype as ParamDType;
  const rIndex = np.arange(R, undefined, undefined, { dtype: np.int32 }).reshape([1, R]);
  const valid = rIndex.ref.less(fill.reshape([B, 1])).astype(toDType(dtype)); // [B,R]
  const write = oneHot(base.reshape([B, 1]).add(rIndex), maxLen, dtype).mul(valid.reshape([B, R, 1])); // [B,R,S]
  const out: KvCache = {
    keys: cache.keys.map((old, layer) => writeChunk(old, recent.keys[layer], write.ref)),
    values: cache.values.map((old, layer) => writeChunk(old, recent.values[layer], write.ref)),
  };
  write.dispose();
  return out;
}
