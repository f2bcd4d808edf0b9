/**
 * The embedded policy's transformer: a decoder-only GPT with pre-LayerNorm blocks, learned
 * position embeddings, GELU (tanh approximation) feed-forward layers and a head tied to the token
 * embedding. Parameters are a plain tree; every function here is pure and follows jax-js
 * ownership (each array argument is consumed once; pass `refTree(params)` to keep yours).
 *
 * Inside differentiated jitted code, gathers are written as one-hot products (the gradient of
 * `take` under `jit` is a scatter jax-js cannot compile; see notes/engine.md).
 *
 * B=batch, T=time, D=width (dModel), H=heads, K=head width (D/H), F=feed-forward width,
 * V=vocabulary, S=key positions (the KV cache length).
 */

import { normalInit, splitKey } from "../../engine/init.ts";
import { type JaxArray, jax, nn, np, dtype as toDType } from "../../engine/jax.ts";
import type { GptConfig } from "./config.ts";

const lax = jax.lax;

import { validateGptConfig } from "./config.ts";

export type LayerNormParams = { scale: JaxArray; bias: JaxArray };

export type BlockParams = {
  ln1: LayerNormParams;
  /** [D, 3D]: query, key and value projections side by side. */
  wqkv: JaxArray;
  bqkv: JaxArray;
  wo: JaxArray;
  bo: JaxArray;
  ln2: LayerNormParams;
  w1: JaxArray;
  b1: JaxArray;
  w2: JaxArray;
  b2: JaxArray;
};

/** The scalar value head (a critic for PPO with GAE): V = h·w + b on the final hidden state h. */
export type ValueHeadParams = {
  /** [D] */
  w: JaxArray;
  /** [1] */
  b: JaxArray;
};

export type GptParams = {
  /** [V, D] token embedding, also the output head (tied). */
  wte: JaxArray;
  /** [maxLen, D] position embedding. */
  wpe: JaxArray;
  blocks: BlockParams[];
  lnf: LayerNormParams;
  /**
   * Optional value head. Absent in pretrained and SFT models; RL with a critic (`gae`) adds it at
   * its start (`initValueHead`), and checkpoints save and load it with the rest.
   */
  value?: ValueHeadParams;
};

export type ParamDType = "float32" | "float64";

/**
 * Initial parameters (GPT-2 recipe): weights ~ N(0, 0.02), the two residual output projections
 * of each block ~ N(0, 0.02/sqrt(2L)), biases 0, LayerNorm scale 1. Consumes `key`.
 */
export function initGpt(config: GptConfig, key: JaxArray, dtype: ParamDType = "float32"): GptParams {
  const { vocabSize: V, dModel: D, nLayers: L, dFF: F, maxLen } = validateGptConfig(config);
  const residualStd = 0.02 / Math.sqrt(2 * L);
  const [kTok, kPos, ...blockKeys] = splitKey(key, 2 + L);
  const zeros = (n: number) => np.zeros([n], { dtype: toDType(dtype) });
  const layerNorm = (): LayerNormParams => ({
    scale: np.ones([D], { dtype: toDType(dtype) }),
    bias: zeros(D),
  });
  const blocks = blockKeys.map((blockKey): BlockParams => {
    const [kQkv, kO, k1, k2] = splitKey(blockKey, 4);
    return {
      ln1: layerNorm(),
      wqkv: normalInit(kQkv, [D, 3 * D], 0.02, dtype),
      bqkv: zeros(3 * D),
      wo: normalInit(kO, [D, D], residualStd, dtype),
      bo: zeros(D),
      ln2: layerNorm(),
      w1: normalInit(k1, [D, F], 0.02, dtype),
      b1: zeros(F),
      w2: normalInit(k2, [F, D], residualStd, dtype),
      b2: zeros(D),
    };
  });
  return {
    wte: normalInit(kTok, [V, D], 0.02, dtype),
    wpe: normalInit(kPos, [maxLen, D], 0.02, dtype),
    blocks,
    lnf: layerNorm(),
  };
}

/**
 * A fresh value head: all zeros, so every value starts at 0 (no prior about returns) and the
 * policy's behaviour is untouched by adding it.
 */
export function initValueHead(config: GptConfig, dtype: ParamDType = "float32"): ValueHeadParams {
  return {
    w: np.zeros([config.dModel], { dtype: toDType(dtype) }),
    b: np.zeros([1], { dtype: toDType(dtype) }),
  };
}

/**
 * The params without the value head: the same arrays (no reference taken), for code that only
 * samples or scores tokens and consumes whatever tree it is given.
 */
export function withoutValueHead(params: GptParams): GptParams {
  if (!params.value) return params;
  const { value: _value, ...policy } = params;
  return policy;
}

/** LayerNorm over the last axis (two-pass variance, eps 1e-5 as in PyTorch). */
export function layerNorm(x: JaxArray, p: LayerNormParams): JaxArray {
  const mean = x.ref.mean(-1, { keepdims: true });
  const centered = x.sub(mean);
  const variance = np.square(centered.ref).mean(-1, { keepdims: true });
  return centered
    .div(np.sqrt(variance.add(1e-5)))
    .mul(p.scale)
    .add(p.bias);
}

/** Dense layer over the last axis: [.., In] @ [In, Out] + [Out]. */
export function dense(x: JaxArray, w: JaxArray, b: JaxArray): JaxArray {
  const shape = x.shape;
  const [inWidth, outWidth] = w.shape;
  // A plain 2-D matmul: [N, In] @ [In, Out].
  const flat = np.matmul(x.reshape([-1, inWidth]), w).add(b);
  return flat.reshape([...shape.slice(0, -1), outWidth]);
}

/** One-hot rows of `ids` ([...] int32 → [..., n]) in `dtype`, built by comparison (no gather). */
export function oneHot(ids: JaxArray, n: number, dtype: ParamDType): JaxArray {
  return np
    .equal(ids.reshape([...ids.shape, 1]), np.arange(n, undefined, undefined, { dtype: np.int32 }))
    .astype(toDType(dtype));
}

/**
 * Queries, keys and values of a block, each [B, T, H, K] (views into one [B, T, 3, H, K] array).
 * Consumes x and the projection weights.
 */
export function projectQkv(
  x: JaxArray,
  wqkv: JaxArray,
  bqkv: JaxArray,
  nHeads: number,
): [JaxArray, JaxArray, JaxArray] {
  const [B, T, D] = x.shape;
  const qkv = dense(x, wqkv, bqkv).reshape([B, T, 3, nHeads, D / nHeads]); // [B,T,3,H,K]
  return [qkv.ref.slice([], [], 0), qkv.ref.slice([], [], 1), qkv.slice([], [], 2)];
}

/**
 * Attention of queries over keys with an additive mask (0 = attend, large negative = blocked).
 * q [B,T,H,K], k and v [B,S,H,K], mask broadcastable to [B,H,T,S] → [B,T,D].
 *
 * Both contractions are written as `vecdot` (jax-js's primitive: broadcast multiply, sum over the
 * last axis) so each result is produced directly in the layout its consumer reads: a transposed
 * view fed into a matmul makes jax-js fall back to a scalar kernel (~6x slower), which is what
 * `matmul` + `transpose` (or `einsum`) did here.
 */
export function attend(q: JaxArray, k: JaxArray, v: JaxArray, mask: JaxArray): JaxArray {
  const [B, T, H, K] = q.shape;
  const qh = np.expandDims(q.mul(1 / Math.sqrt(K)).transpose([0, 2, 1, 3]), 3); // [B,H,T,1,K]
  const kh = np.expandDims(k.transpose([0, 2, 1, 3]), 2); // [B,H,1,S,K]
  const scores = np.vecdot(qh, kh).add(mask); // [B,H,T,S]
  const probs = np.expandDims(nn.softmax(scores, -1).transpose([0, 2, 1, 3]), 3); // [B,T,H,1,S]
  const vh = np.expandDims(v.transpose([0, 2, 3, 1]), 1); // [B,1,H,K,S]
  return np.vecdot(probs, vh).reshape([B, T, H * K]); // [B,T,H,K] → [B,T,D]
}

/**
 * GELU, tanh approximation, written as x·sigmoid(2z) (= x·(1 + tanh z)/2 with
 * z = √(2/π)(x + 0.044715x³)): one exp instead of jax-js's tanh, about 2x faster here. 2z is
 * clipped to ±80 so exp(−2z) stays finite: an infinite exp makes the gradient 0·∞ = NaN for very
 * negative inputs (the clipped values are within 1e-34 of the exact ones).
 */
export function gelu(x: JaxArray): JaxArray {
  const twoZ = x.ref
    .mul(x.ref)
    .mul(0.044715)
    .add(1)
    .mul(x.ref)
    .mul(2 * Math.sqrt(2 / Math.PI));
  return x.div(np.exp(np.clip(twoZ, -80, 80).neg()).add(1));
}

/** Feed-forward half of a block, on the LayerNorm'd stream. */
export function mlp(x: JaxArray, p: BlockParams): JaxArray {
  return dense(gelu(dense(x, p.w1, p.b1)), p.w2, p.b2);
}

/** Additive causal mask [T, T]: 0 on and below the diagonal, -1e9 above. */
export function causalMask(T: number, dtype: ParamDType): JaxArray {
  return np
    .tri(T, T, 0, { dtype: toDType(dtype) })
    .sub(1)
    .mul(1e9);
}

/**
 * Final hidden states [B, T, D] (after the last LayerNorm) of a full causal forward pass over
 * `ids` [B, T] (int32, T ≤ maxLen). `gather`: look embeddings up with `take` instead of a one-hot
 * matmul (faster, but only where no gradient is taken). Consumes params and ids.
 */
export function gptHidden(
  params: GptParams,
  ids: JaxArray,
  config: GptConfig,
  options: { gather?: boolean } = {},
): JaxArray {
  const [, T] = ids.shape;
  const dtype = params.wte.dtype as ParamDType;
  const { nHeads } = config;
  const embedded = options.gather
    ? np.take(params.wte, ids, 0) // [B,T,D]; not differentiable under jit
    : np.matmul(oneHot(ids, config.vocabSize, dtype), params.wte); // [B,T,D]
  let x = embedded.add(params.wpe.slice([0, T]));
  const mask = causalMask(T, dtype);
  for (const p of params.blocks) {
    const [q, k, v] = projectQkv(layerNorm(x.ref, p.ln1), p.wqkv, p.bqkv, nHeads);
    x = x.add(dense(attend(q, k, v, mask.ref), p.wo, p.bo));
    x = x.add(mlp(layerNorm(x.ref, p.ln2), p));
  }
  mask.dispose();
  return layerNorm(x, params.lnf);
}

/** Logits [.., V] of hidden states [.., D] through the tied head. Consumes both. */
export function headLogits(hidden: JaxArray, wte: JaxArray): JaxArray {
  const [V, D] = wte.shape;
  const shape = hidden.shape;
  return np.matmul(hidden.reshape([-1, D]), wte.transpose()).reshape([...shape.slice(0, -1), V]);
}

/** Logits [B, T, V] of a full causal forward pass. Consumes params and ids. */
export function gptLogits(params: GptParams, ids: JaxArray, config: GptConfig): JaxArray {
  const wte = params.wte.ref;
  return headLogits(gptHidden(params, ids, config), wte);
}

/** Per-token statistics of a sequence batch, aligned with the ids (index t is about token t). */
export type TokenStats = {
  /** [B, T]: log p(ids[t] | ids[<t]) at temperature `temperature`; 0 at t = 0. */
  logprobs: JaxArray;
  /** [B, T]: entropy of the distribution that predicted token t; 0 at t = 0. Null unless asked. */
  entropy: JaxArray | null;
  /**
   * [B, T]: the value head's V at the state before token t (read from the hidden state that
   * predicts token t, as verl aligns a critic with the log-probs); 0 at t = 0. Null unless asked.
   */
  values?: JaxArray | null;
};

/**
 * Log-probability of each token given its prefix (and optionally the predicting distribution's
 * entropy and the value head's values), aligned with `ids` [B, T]: column 0 has no prediction and
 * is 0. Logits are divided by `temperature` first. Differentiable and jit-safe (one-hot products,
 * no gather) unless `gather` is set (inference only: `take` lookups, a little faster).
 * `values` needs `params.value`; `valueGradient: false` (default) stops the value loss's gradient
 * at the head, so the critic reads the policy's features without reshaping them. Consumes params
 * and ids.
 */
export function tokenStats(
  params: GptParams,
  ids: JaxArray,
  config: GptConfig,
  options: {
    temperature?: number;
    entropy?: boolean;
    gather?: boolean;
    values?: boolean;
    valueGradient?: boolean;
  } = {},
): TokenStats {
  const dtype = params.wte.dtype as ParamDType;
  const head = params.value;
  if (options.values && !head) throw new Error("tokenStats: values need a value head (params.value)");
  const policy = withoutValueHead(params);
  const wte = policy.wte.ref;
  const hidden = gptHidden(policy, ids.ref, config, { gather: options.gather }); // [B,T,D]
  let values: JaxArray | null = null;
  if (options.values && head) {
    values = valueHeadValues(hidden.ref, head, options.valueGradient);
  } else if (head) {
    head.w.dispose();
    head.b.dispose();
  }
  // Logits at every position (slicing off the last one before the head would feed a strided view
  // into the matmul, which jax-js then runs ~30x slower); position t predicts token t+1.
  const stats = logitsTokenStats(headLogits(hidden, wte), ids, { ...options, dtype });
  return { ...stats, values };
}

/**
 * The value head's values [B,T] of final hidden states [B,T,D], aligned with the ids: index t holds
 * V of the state before token t (read from the hidden state that predicts token t), 0 at t = 0.
 * Without `valueGradient` the gradient stops at the head (the features are constants to it). Any
 * model's hidden states (the Hugging Face forward's too). Consumes hidden and head.
 */
export function valueHeadValues(hidden: JaxArray, head: ValueHeadParams, valueGradient = false): JaxArray {
  return alignToIds(valueHeadScores(hidden, head, valueGradient)); // [B,T]
}

/** The value head at each hidden state [.., D] → [..], where it stands (not aligned with the ids). Consumes hidden and head. */
export function valueHeadScores(hidden: JaxArray, head: ValueHeadParams, valueGradient = false): JaxArray {
  const features = valueGradient ? hidden : lax.stopGradient(hidden);
  return features.mul(head.w).sum(-1).add(head.b);
}

/** Shifts per-position predictions [B,T] right so index t holds the prediction of token t (index 0: none → 0). Consumes x. */
export function alignToIds(x: JaxArray): JaxArray {
  const T = x.shape[1];
  return np.pad(x.slice([], [0, T - 1]), [
    [0, 0],
    [1, 0],
  ]);
}

/**
 * `tokenStats` from logits [B,T,V] (position t predicts token t+1) and the ids [B,T]: each token's
 * log-prob (and the predicting distribution's entropy), aligned with the ids, 0 at t = 0. Any model's
 * logits (the Hugging Face forward's too). One-hot products unless `gather`. Consumes both.
 */
export function logitsTokenStats(
  logits: JaxArray,
  ids: JaxArray,
  options: { temperature?: number; entropy?: boolean; gather?: boolean; dtype?: ParamDType } = {},
): Omit<TokenStats, "values"> {
  const T = ids.shape[1];
  const temperature = options.temperature ?? 1;
  if (temperature !== 1) logits = logits.div(temperature);
  const V = logits.shape.at(-1)!;
  const logp = nn.logSoftmax(logits, -1); // [B,T,V]
  const next = np.pad(ids.slice([], [1, T]), [
    [0, 0],
    [0, 1],
  ]); // [B,T]: token t+1, 0 after the end
  let entropy: JaxArray | null = null;
  if (options.entropy) {
    entropy = alignToIds(np.exp(logp.ref).mul(logp.ref).sum(-1).neg());
  }
  const picked = options.gather
    ? np.takeAlongAxis(logp, next.reshape([-1, T, 1]), -1).reshape([-1, T])
    : logp.mul(oneHot(next, V, options.dtype ?? "float32")).sum(-1); // [B,T]
  return { logprobs: alignToIds(picked), entropy };
}
