/**
 * The Hugging Face decoder-only architectures (Qwen3, Llama 3, SmolLM2, Qwen2.5, GPT-2) as pure
 * jax-js functions, for the ONNX engine to trace. Llama-style blocks: pre-RMSNorm, grouped-query
 * attention with rotary positions (rotate-half form), optional q/k RMSNorm (Qwen3) and q/k/v biases
 * (Qwen2), a SwiGLU feed-forward. GPT-2 blocks (`config.block`): pre-LayerNorm with biases,
 * learned absolute positions added to the embedding, multi-head attention without rotation, a GELU
 * MLP (`up`, `down`, with biases). Either way a head tied to the embedding or not. Weights keep Hugging Face's
 * layout ([out, in]: y = x·Wᵀ). Every function follows jax-js ownership (each array argument is
 * consumed once) and is differentiable unless it says otherwise.
 *
 * B=batch, T=time, D=hidden, H=query heads, G=H/Hkv queries per key/value head, K=head width,
 * S=key positions, V=vocabulary.
 */
import { type JaxArray, nn, np } from "../../engine/jax.ts";
import { gelu } from "../embedded/model.ts";
import type { HfModelConfig } from "./config.ts";
import { ropeInverseFrequencies } from "./rope.ts";

export type HfLayerParams = {
  inputNorm: JaxArray;
  /** GPT-2's LayerNorm biases. */
  inputNormBias?: JaxArray;
  postNormBias?: JaxArray;
  q: JaxArray;
  k: JaxArray;
  v: JaxArray;
  o: JaxArray;
  qBias?: JaxArray;
  kBias?: JaxArray;
  vBias?: JaxArray;
  oBias?: JaxArray;
  qNorm?: JaxArray;
  kNorm?: JaxArray;
  postNorm: JaxArray;
  /** Absent on GPT-2 (an ungated MLP). */
  gate?: JaxArray;
  up: JaxArray;
  down: JaxArray;
  gateBias?: JaxArray;
  upBias?: JaxArray;
  downBias?: JaxArray;
};

export type HfParams = {
  /** [V, D] */
  embed: JaxArray;
  layers: HfLayerParams[];
  /** [D] final norm (RMSNorm, or GPT-2's LayerNorm with `normBias`) */
  norm: JaxArray;
  normBias?: JaxArray;
  /** [P, D] GPT-2's learned position embeddings. */
  positions?: JaxArray;
  /** [V, D] output head; absent when tied to `embed`. */
  lmHead?: JaxArray;
};

const BLOCKED = -1e9;

/** The seven projections of a layer, by their HfLayerParams keys. */
export const HF_PROJECTIONS = ["q", "k", "v", "o", "gate", "up", "down"] as const;
export type HfProjection = (typeof HF_PROJECTIONS)[number];

/**
 * Extra terms added to a layer's projection outputs (LoRA: lora.ts): for a projection named here,
 * y = x·Wᵀ + b + term(x). Each term consumes its input x; a projection not named is untouched.
 */
export type HfLayerAdapter = Partial<Record<HfProjection, (x: JaxArray) => JaxArray>>;

/** Projection `name` of layer `p` on x, plus the adapter's term for it if any. Consumes x and the weights. */
function project(x: JaxArray, p: HfLayerParams, name: HfProjection, adapter?: HfLayerAdapter): JaxArray {
  const term = adapter?.[name];
  const y = linear(term ? x.ref : x, p[name]!, p[`${name}Bias`]);
  return term ? y.add(term(x)) : y;
}

/** RMSNorm over the last axis: x / √(mean(x²) + ε) · w. */
export function rmsNorm(x: JaxArray, w: JaxArray, eps: number): JaxArray {
  const meanSquare = np.square(x.ref).mean(-1, { keepdims: true });
  return x.mul(np.reciprocal(np.sqrt(meanSquare.add(eps)))).mul(w);
}

/** LayerNorm over the last axis (two-pass variance, as PyTorch): (x − μ) / √(σ² + ε) · w + b. */
export function layerNorm(x: JaxArray, w: JaxArray, b: JaxArray, eps: number): JaxArray {
  const mean = x.ref.mean(-1, { keepdims: true });
  const centered = x.sub(mean);
  const variance = np.square(centered.ref).mean(-1, { keepdims: true });
  return centered
    .div(np.sqrt(variance.add(eps)))
    .mul(w)
    .add(b);
}

/** The block's norm: LayerNorm when it has a bias (GPT-2), else RMSNorm. Consumes x, w and b. */
export function blockNorm(x: JaxArray, w: JaxArray, b: JaxArray | undefined, eps: number): JaxArray {
  return b ? layerNorm(x, w, b, eps) : rmsNorm(x, w, eps);
}

/** x [.., In] · w[Out, In]ᵀ (+ b [Out]). */
export function linear(x: JaxArray, w: JaxArray, b?: JaxArray): JaxArray {
  const shape = x.shape;
  const [out, inWidth] = w.shape;
  let y = np.matmul(x.reshape([-1, inWidth]), w.transpose());
  if (b) y = y.add(b);
  return y.reshape([...shape.slice(0, -1), out]);
}

/** SiLU x·sigmoid(x), written x / (1 + e^(−x)) (one exp; −0 for very negative x). */
export function silu(x: JaxArray): JaxArray {
  return x.ref.div(np.exp(x.neg()).add(1));
}

/** Cosines and sines [.., 1, K/2] of the rotary angles at `positions` [..] (int32). */
export function ropeAngles(positions: JaxArray, config: HfModelConfig): [JaxArray, JaxArray] {
  const inv = np.array(ropeInverseFrequencies(config), { dtype: np.float32 });
  const angles = positions
    .astype(np.float32)
    .reshape([...positions.shape, 1, 1])
    .mul(inv); // [..,1,K/2]
  return [np.cos(angles.ref), np.sin(angles)];
}

/** Rotate-half RoPE of x [B,T,Hx,K] with cos, sin [B|1,T,1,K/2]. Consumes all three. */
export function applyRope(x: JaxArray, cos: JaxArray, sin: JaxArray): JaxArray {
  const K = x.shape.at(-1)!;
  const first = x.ref.slice([], [], [], [0, K / 2]);
  const second = x.slice([], [], [], [K / 2, K]);
  const out1 = first.ref.mul(cos.ref).sub(second.ref.mul(sin.ref));
  const out2 = second.mul(cos).add(first.mul(sin));
  return np.concatenate([out1, out2], -1);
}

/**
 * Queries [B,Hkv,G,T,K] (scaled by 1/√K unless the config says not), keys and values [B,Hkv,T,K]
 * of one layer, rotated by the cos/sin pair from `ropeAngles` (null: GPT-2, no rotation). Consumes
 * x, the cos/sin pair and the layer's attention weights.
 */
export function projectAttention(
  x: JaxArray,
  p: HfLayerParams,
  rope: [cos: JaxArray, sin: JaxArray] | null,
  config: HfModelConfig,
  adapter?: HfLayerAdapter,
): [JaxArray, JaxArray, JaxArray] {
  const [B, T] = x.shape;
  const { heads: H, kvHeads: Hkv, headDim: K, normEps: eps } = config;
  let q = project(x.ref, p, "q", adapter).reshape([B, T, H, K]);
  let k = project(x.ref, p, "k", adapter).reshape([B, T, Hkv, K]);
  const v = project(x, p, "v", adapter).reshape([B, T, Hkv, K]);
  if (p.qNorm && p.kNorm) {
    q = rmsNorm(q, p.qNorm, eps);
    k = rmsNorm(k, p.kNorm, eps);
  }
  if (rope) {
    const [cos, sin] = rope;
    q = applyRope(q, cos.ref, sin.ref);
    k = applyRope(k, cos, sin);
  }
  if (config.scaleAttention) q = q.mul(1 / Math.sqrt(K));
  const G = H / Hkv;
  const qg = q.reshape([B, T, Hkv, G, K]).transpose([0, 2, 3, 1, 4]); // [B,Hkv,G,T,K]
  return [qg, k.transpose([0, 2, 1, 3]), v.transpose([0, 2, 1, 3])];
}

/** Attention output [B,Hkv,G,T,K] → [B,T,H·K] (head h = kv·G + g, as transformers' repeat_kv). */
export function mergeHeads(out: JaxArray): JaxArray {
  const [B, Hkv, G, T, K] = out.shape;
  return out.transpose([0, 3, 1, 2, 4]).reshape([B, T, Hkv * G * K]);
}

/** SwiGLU feed-forward: down(silu(gate(x)) · up(x)). */
export function swiglu(x: JaxArray, p: HfLayerParams, adapter?: HfLayerAdapter): JaxArray {
  const hidden = silu(project(x.ref, p, "gate", adapter)).mul(project(x, p, "up", adapter));
  return project(hidden, p, "down", adapter);
}

/** The block's feed-forward: SwiGLU, or GPT-2's down(gelu(up(x))). */
export function feedForward(
  x: JaxArray,
  p: HfLayerParams,
  config: HfModelConfig,
  adapter?: HfLayerAdapter,
): JaxArray {
  if (config.activation === "silu") return swiglu(x, p, adapter);
  return project(gelu(project(x, p, "up", adapter)), p, "down", adapter);
}

/**
 * Token embeddings [B,T,D] of `ids` [B,T] at `positions` [B|1,T] (int32), plus the learned
 * position embeddings when the model has them (GPT-2). `gather`: `take` (inference only), else a
 * one-hot product (differentiable). Consumes the embedding tables, ids and positions.
 */
function embed(
  params: HfParams,
  ids: JaxArray,
  positions: JaxArray,
  config: HfModelConfig,
  gather: boolean,
): JaxArray {
  const lookup = (table: JaxArray, index: JaxArray, size: number) => {
    if (gather) return np.take(table, index, 0);
    const oneHot = np.equal(
      index.reshape([...index.shape, 1]),
      np.arange(size, undefined, undefined, { dtype: np.int32 }),
    );
    return np.matmul(oneHot.astype(np.float32), table);
  };
  const x = lookup(params.embed, ids, config.vocabSize);
  if (!params.positions) {
    positions.dispose();
    return x;
  }
  // A chunk's padding rows may sit past the table's end: clamp them (their outputs are unused).
  const P = config.maxPositions;
  return x.add(lookup(params.positions, np.clip(positions, 0, P - 1), P));
}

/** Cos/sin of the rotary angles at `positions` (consumed), or null for a model without RoPE. */
function ropeFor(positions: JaxArray, config: HfModelConfig): [JaxArray, JaxArray] | null {
  if (config.block === "gpt2") {
    positions.dispose();
    return null;
  }
  return ropeAngles(positions, config);
}

/** Additive causal mask [T, T]: 0 on and below the diagonal, −1e9 above. */
function causalMask(T: number): JaxArray {
  return np.tri(T, T, 0, { dtype: np.float32 }).sub(1).mul(-BLOCKED);
}

export interface HfForwardOptions {
  /** Embed with `take` (inference only) instead of a one-hot product. */
  gather?: boolean;
  /** Per layer: terms added to its projections (lora.ts's `loraAdapters`). */
  adapters?: readonly (HfLayerAdapter | undefined)[];
}

/**
 * Final hidden states [B,T,D] (after the last RMSNorm) of a full causal pass over `ids` [B,T]
 * (int32) at positions 0..T−1. `gather`: embed with `take` (inference only); otherwise with a
 * one-hot product, differentiable under `jit`. `adapters`: one per layer (lora.ts), their
 * terms added to the projections. Consumes params (but `lmHead`) and ids.
 */
export function hfHidden(
  params: HfParams,
  ids: JaxArray,
  config: HfModelConfig,
  options: HfForwardOptions = {},
): JaxArray {
  const T = ids.shape[1];
  const eps = config.normEps;
  const positions = np.arange(T, undefined, undefined, { dtype: np.int32 }).reshape([1, T]);
  let x = embed(params, ids, positions.ref, config, options.gather ?? false);
  const rope = ropeFor(positions, config);
  const mask = causalMask(T);
  params.layers.forEach((p, layer) => {
    x = hfBlock(x, p, rope && [rope[0].ref, rope[1].ref], mask.ref, config, options.adapters?.[layer]);
  });
  for (const leaf of rope ?? []) leaf.dispose();
  mask.dispose();
  return blockNorm(x, params.norm, params.normBias, eps);
}

/**
 * One decoder block over the whole causal sequence: x [B,T,D] → x [B,T,D], with the cos/sin pair
 * of positions 0..T−1 (`blockContext`; null: GPT-2) and the causal mask [T,T]. Consumes all its
 * array arguments.
 */
export function hfBlock(
  x: JaxArray,
  p: HfLayerParams,
  rope: [cos: JaxArray, sin: JaxArray] | null,
  mask: JaxArray,
  config: HfModelConfig,
  adapter?: HfLayerAdapter,
): JaxArray {
  const eps = config.normEps;
  const [q, k, v] = projectAttention(
    blockNorm(x.ref, p.inputNorm, p.inputNormBias, eps),
    p,
    rope,
    config,
    adapter,
  );
  const scores = np.matmul(q, np.expandDims(k.transpose([0, 1, 3, 2]), 2)).add(mask); // [B,Hkv,G,T,T]
  const probs = softmaxLast(scores);
  const attended = mergeHeads(np.matmul(probs, np.expandDims(v, 2))); // [B,T,H·K]
  x = x.add(project(attended, p, "o", adapter));
  return x.add(feedForward(blockNorm(x.ref, p.postNorm, p.postNormBias, eps), p, config, adapter));
}

/** The rotary pair (null for GPT-2) and the causal mask of a whole sequence of T positions (`hfBlock`'s context). */
export function blockContext(T: number, config: HfModelConfig): [[JaxArray, JaxArray] | null, JaxArray] {
  const positions = np.arange(T, undefined, undefined, { dtype: np.int32 }).reshape([1, T]);
  return [ropeFor(positions, config), causalMask(T)];
}

/** Softmax over the last axis (max-shifted). */
function softmaxLast(z: JaxArray): JaxArray {
  const e = np.exp(z.ref.sub(z.max(-1, { keepdims: true })));
  return e.ref.mul(np.reciprocal(e.sum(-1, { keepdims: true })));
}

/** Logits [.., V] of hidden states [.., D] through the head ([V, D]). Consumes both. */
export function hfHeadLogits(hidden: JaxArray, head: JaxArray): JaxArray {
  return linear(hidden, head);
}

/** The head's weight: `lmHead`, or the embedding when tied (a new reference either way). */
export function headWeight(params: HfParams): JaxArray {
  return (params.lmHead ?? params.embed).ref;
}

/** Every parameter but `lmHead` (consumed), and the head's weight (a new reference). */
export function splitHead(params: HfParams): [HfParams, JaxArray] {
  const head = headWeight(params);
  const { lmHead, ...body } = params;
  lmHead?.dispose();
  return [body, head];
}

/** Logits [B,T,V] of a full causal pass. Consumes params and ids. */
export function hfLogits(
  params: HfParams,
  ids: JaxArray,
  config: HfModelConfig,
  options: HfForwardOptions = {},
): JaxArray {
  const [body, head] = splitHead(params);
  return hfHeadLogits(hfHidden(body, ids, config, options), head);
}

/**
 * log p(next[n] | h[n]) of N final-normed hidden states h [N,D] through the head [V,D], under
 * softmax(logits / temperature): [N]. Consumes all three.
 */
export function hfHeadLogprobs(hidden: JaxArray, head: JaxArray, next: JaxArray, temperature = 1): JaxArray {
  const N = hidden.shape[0];
  let logits = hfHeadLogits(hidden, head); // [N,V]
  if (temperature !== 1) logits = logits.div(temperature);
  return np.takeAlongAxis(nn.logSoftmax(logits, -1), next.reshape([N, 1]), -1).reshape([N]);
}

/**
 * log p(ids[t] | ids[<t]) for t = 1..T−1: [B, T−1], from one full causal pass (inference: gathers),
 * under softmax(logits / temperature).
 * Consumes params and ids.
 */
export function hfTokenLogprobs(
  params: HfParams,
  ids: JaxArray,
  config: HfModelConfig,
  adapters?: HfForwardOptions["adapters"],
  temperature = 1,
): JaxArray {
  const [B, T] = ids.shape;
  const next = ids.ref.slice([], [1, T]).reshape([B, T - 1, 1]);
  const [body, head] = splitHead(params);
  // The last position predicts nothing here: drop it before the head, not from the [B,T,V] logits.
  const hidden = hfHidden(body, ids, config, { gather: true, adapters }).slice([], [0, T - 1]); // [B,T−1,D]
  let logits = hfHeadLogits(hidden, head); // [B,T−1,V]
  if (temperature !== 1) logits = logits.div(temperature);
  return np.takeAlongAxis(nn.logSoftmax(logits, -1), next, -1).reshape([B, T - 1]);
}

/**
 * The host-KV chunk program (see policy/embedded/host-kv.ts): C tokens per row at positions
 * start[b] + c attend to the cached positions < start[b] and to the chunk's own tokens up to
 * themselves (the first count[b] are real). Caches are [B,Hkv,S,K]. Returns [new keys per layer
 * [B,Hkv,C,K]…, new values…, logits [B,C,V] when `withLogits`]. `rowIndex` [B]: the caches have
 * more rows and step row b reads cache row rowIndex[b]. `adapters` as in `hfHidden`. Inference
 * only (gathers). Consumes all.
 */
export function hfForwardChunk(
  params: HfParams,
  keys: JaxArray[],
  values: JaxArray[],
  ids: JaxArray,
  start: JaxArray,
  count: JaxArray,
  config: HfModelConfig,
  withLogits: boolean,
  rowIndex: JaxArray | null = null,
  adapters?: HfForwardOptions["adapters"],
): JaxArray[] {
  const [B, C] = ids.shape;
  const eps = config.normEps;
  if (rowIndex) {
    keys = keys.map((cache) => np.take(cache, rowIndex.ref, 0));
    values = values.map((cache) => np.take(cache, rowIndex.ref, 0));
    rowIndex.dispose();
  }
  const S = keys[0].shape[2];
  const chunkIndex = np.arange(C, undefined, undefined, { dtype: np.int32 }).reshape([1, C]);
  const positions = start.ref.reshape([B, 1]).add(chunkIndex.ref); // [B,C]
  const keyIndex = np.arange(S, undefined, undefined, { dtype: np.int32 }).reshape([1, 1, S]);
  const maskCache = np.where(keyIndex.less(start.reshape([B, 1, 1])), 0, BLOCKED).reshape([B, 1, 1, 1, S]); // cached positions < start
  const own = chunkIndex.ref.reshape([1, 1, C]);
  const maskChunk = np
    .where(
      np.logicalAnd(own.ref.lessEqual(chunkIndex.reshape([1, C, 1])), own.less(count.reshape([B, 1, 1]))),
      0,
      BLOCKED,
    )
    .reshape([B, 1, 1, C, C]);
  const head = headWeight(params);
  params.lmHead?.dispose();
  let x = embed(params, ids, positions.ref, config, true); // [B,C,D]
  const rope = ropeFor(positions, config); // [B,C,1,K/2] each
  const newKeys: JaxArray[] = [];
  const newValues: JaxArray[] = [];
  params.layers.forEach((p, layer) => {
    const adapter = adapters?.[layer];
    const [q, k, v] = projectAttention(
      blockNorm(x.ref, p.inputNorm, p.inputNormBias, eps),
      p,
      rope && [rope[0].ref, rope[1].ref],
      config,
      adapter,
    );
    newKeys.push(k.ref);
    newValues.push(v.ref);
    const scoresCache = np
      .matmul(q.ref, np.expandDims(keys[layer].transpose([0, 1, 3, 2]), 2))
      .add(maskCache.ref); // [B,Hkv,G,C,S]
    const scoresChunk = np.matmul(q, np.expandDims(k.transpose([0, 1, 3, 2]), 2)).add(maskChunk.ref); // [B,Hkv,G,C,C']
    const top = np.maximum(
      scoresCache.ref.max(-1, { keepdims: true }),
      scoresChunk.ref.max(-1, { keepdims: true }),
    );
    const expCache = np.exp(scoresCache.sub(top.ref));
    const expChunk = np.exp(scoresChunk.sub(top));
    const total = expCache.ref.sum(-1, { keepdims: true }).add(expChunk.ref.sum(-1, { keepdims: true }));
    const attended = np
      .matmul(expCache, np.expandDims(values[layer], 2))
      .add(np.matmul(expChunk, np.expandDims(v, 2)))
      .div(total); // [B,Hkv,G,C,K]
    x = x.add(project(mergeHeads(attended), p, "o", adapter));
    x = x.add(feedForward(blockNorm(x.ref, p.postNorm, p.postNormBias, eps), p, config, adapter));
  });
  for (const leaf of rope ?? []) leaf.dispose();
  maskCache.dispose();
  maskChunk.dispose();
  if (!withLogits) {
    for (const leaf of [x, head, params.norm, ...(params.normBias ? [params.normBias] : [])]) leaf.dispose();
    return [...newKeys, ...newValues];
  }
  return [...newKeys, ...newValues, hfHeadLogits(blockNorm(x, params.norm, params.normBias, eps), head)];
}
