/**
 * LoRA (Hu et al. 2021, arXiv:2106.09685) on the Hugging Face model (model.ts), as PEFT defines it:
 * each targeted projection W [out, in] gets A [r, in] and B [out, r] and computes
 *
 *   y = x·Wᵀ (+ b) + s · dropout(x)·Aᵀ·Bᵀ,   s = alpha / r   (rsLoRA: alpha / √r, arXiv:2312.03732)
 *
 * with dropout on the adapter's input only, in training only (PEFT's `lora_dropout`). Targets use
 * PEFT's module names (q_proj … down_proj). A starts Kaiming-uniform and B at zero, as PEFT's
 * default init, so a fresh adapter leaves the model unchanged. The adapter is a parameter tree apart
 * from the base weights (`LoraParams`), so a gradient is taken with respect to it alone.
 */
import { type JaxArray, np, random } from "../../engine/jax.ts";
import type { HostTensor } from "../../engine/tree.ts";
import type { HfModelConfig } from "./config.ts";
import { HF_PROJECTIONS, type HfLayerAdapter, type HfProjection, linear } from "./model.ts";
import { hfParamNames } from "./weights.ts";

/** PEFT's module names of the projections, with the HfLayerParams key each one is. */
export const LORA_TARGET_PROJECTIONS = {
  q_proj: "q",
  k_proj: "k",
  v_proj: "v",
  o_proj: "o",
  gate_proj: "gate",
  up_proj: "up",
  down_proj: "down",
} as const satisfies Record<string, HfProjection>;
export type LoraTarget = keyof typeof LORA_TARGET_PROJECTIONS;
export const LORA_TARGETS = Object.keys(LORA_TARGET_PROJECTIONS) as LoraTarget[];

/** The attention or feed-forward module holding each target (its place in PEFT's key names). */
export const LORA_TARGET_PARENT: Record<LoraTarget, "self_attn" | "mlp"> = {
  q_proj: "self_attn",
  k_proj: "self_attn",
  v_proj: "self_attn",
  o_proj: "self_attn",
  gate_proj: "mlp",
  up_proj: "mlp",
  down_proj: "mlp",
};

export interface LoraConfig {
  /** r ≥ 1 */
  rank: number;
  alpha: number;
  /** PEFT module names, in LORA_TARGETS order. */
  targets: LoraTarget[];
  /** Probability of zeroing an adapter input in training, in [0, 1). */
  dropout: number;
  /** rsLoRA scaling alpha / √r instead of alpha / r. */
  rslora: boolean;
}

export interface LoraSettings {
  rank?: number;
  alpha?: number;
  targets?: readonly string[];
  dropout?: number;
  rslora?: boolean;
}

/** PEFT's defaults (LoraConfig: r 8, lora_alpha 8, dropout 0; Llama/Qwen targets q_proj, v_proj). */
export const LORA_DEFAULTS = { rank: 8, alpha: 8, targets: ["q_proj", "v_proj"], dropout: 0, rslora: false };

export class LoraConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "LoraConfigError";
  }
}

/** Checks settings against the model; refusals name the field and the valid values. */
export function resolveLoraConfig(settings: LoraSettings, model: HfModelConfig): LoraConfig {
  const rank = settings.rank ?? LORA_DEFAULTS.rank;
  const alpha = settings.alpha ?? LORA_DEFAULTS.alpha;
  const dropout = settings.dropout ?? LORA_DEFAULTS.dropout;
  if (!Number.isInteger(rank) || rank < 1)
    throw new LoraConfigError(`lora rank must be an integer ≥ 1, got ${rank}`);
  if (!(Number.isFinite(alpha) && alpha > 0))
    throw new LoraConfigError(`lora alpha must be a finite number > 0, got ${alpha}`);
  if (!(dropout >= 0 && dropout < 1))
    throw new LoraConfigError(`lora dropout must be in [0, 1), got ${dropout}`);
  const requested = settings.targets ?? LORA_DEFAULTS.targets;
  if (requested.length === 0)
    throw new LoraConfigError(`lora targets must name at least one of ${LORA_TARGETS.join(", ")}`);
  for (const target of requested) {
    // Every supported architecture (Qwen2/3, Llama) has the seven; a name PEFT takes for another
    // (c_attn, qkv_proj, …) or for a non-projection (lm_head, embed_tokens) is not in its layers.
    if (!(target in LORA_TARGET_PROJECTIONS))
      throw new LoraConfigError(
        `lora targets: "${target}" is not a projection of ${model.modelType}'s layers; valid: ${LORA_TARGETS.join(", ")}`,
      );
  }
  const targets = LORA_TARGETS.filter((target) => requested.includes(target));
  return { rank, alpha, targets, dropout, rslora: settings.rslora ?? false };
}

/** s: alpha / r, or alpha / √r with rsLoRA. */
export function loraScale(config: LoraConfig): number {
  return config.rslora ? config.alpha / Math.sqrt(config.rank) : config.alpha / config.rank;
}

export type LoraPair = { a: JaxArray; b: JaxArray };
/** One entry per layer: the targeted projections' A [r, in] and B [out, r]. */
export type LoraParams = { layers: Partial<Record<HfProjection, LoraPair>>[] };

/** [in, out] of each projection of layer 0 (every layer has the same). */
function projectionShapes(model: HfModelConfig): Record<HfProjection, [number, number]> {
  const shapes = Object.fromEntries(hfParamNames(model).map(([path, , shape]) => [path, shape]));
  return Object.fromEntries(
    HF_PROJECTIONS.map((p) => {
      const [out, inWidth] = shapes[`layers.0.${p}`];
      return [p, [inWidth, out]];
    }),
  ) as Record<HfProjection, [number, number]>;
}

/**
 * Each adapter tensor's tree path (`layers.N.q.a`), PEFT target and shape, layer by layer in
 * LORA_TARGETS order, A before B.
 */
export function loraParamShapes(
  config: LoraConfig,
  model: HfModelConfig,
): { path: string; layer: number; target: LoraTarget; part: "a" | "b"; shape: [number, number] }[] {
  const shapes = projectionShapes(model);
  const out: ReturnType<typeof loraParamShapes> = [];
  for (let layer = 0; layer < model.layers; layer++) {
    for (const target of config.targets) {
      const p = LORA_TARGET_PROJECTIONS[target];
      const [inWidth, outWidth] = shapes[p];
      out.push({ path: `layers.${layer}.${p}.a`, layer, target, part: "a", shape: [config.rank, inWidth] });
      out.push({ path: `layers.${layer}.${p}.b`, layer, target, part: "b", shape: [outWidth, config.rank] });
    }
  }
  return out;
}

/**
 * A fresh adapter, as PEFT initialises one: A ~ U(−1/√in, 1/√in) (kaiming_uniform_ with a = √5),
 * B = 0. Consumes `key`.
 */
export function initLora(config: LoraConfig, model: HfModelConfig, key: JaxArray): LoraParams {
  const shapes = loraParamShapes(config, model); // A, B, A, B, …
  const keys = [...random.split(key, shapes.length / 2)];
  const layers: LoraParams["layers"] = Array.from({ length: model.layers }, () => ({}));
  for (let j = 0; j < shapes.length; j += 2) {
    const { layer, target, shape } = shapes[j];
    const bound = 1 / Math.sqrt(shape[1]);
    layers[layer][LORA_TARGET_PROJECTIONS[target]] = {
      a: random.uniform(keys[j / 2], shape, { minval: -bound, maxval: bound }),
      b: np.zeros(shapes[j + 1].shape),
    };
  }
  return { layers };
}

/**
 * Inverted dropout: each element kept with probability 1 − rate and scaled by 1 / (1 − rate), so
 * its expectation is x. Consumes x and key.
 */
export function dropout(x: JaxArray, rate: number, key: JaxArray): JaxArray {
  if (rate === 0) {
    key.dispose();
    return x;
  }
  const keep = random.bernoulli(key, 1 - rate, x.shape).astype(np.float32);
  return x.mul(keep).mul(1 / (1 - rate));
}

/**
 * The per-layer adapters for model.ts's forward (`hfLogits(base, ids, config, { adapters })`).
 * `dropoutKey` turns dropout on (training); without it the adapter is deterministic (inference,
 * parity). Each term consumes its A and B when the forward calls it, and the key is consumed here.
 */
export function loraAdapters(
  params: LoraParams,
  config: LoraConfig,
  options: { dropoutKey?: JaxArray } = {},
): HfLayerAdapter[] {
  const scale = loraScale(config);
  const slots = params.layers.flatMap((layer, i) =>
    Object.keys(layer).map((p) => [i, p as HfProjection] as const),
  );
  const useDropout = options.dropoutKey !== undefined && config.dropout > 0;
  const keys = useDropout ? [...random.split(options.dropoutKey!, slots.length)] : [];
  if (!useDropout) options.dropoutKey?.dispose();
  const adapters: HfLayerAdapter[] = params.layers.map(() => ({}));
  slots.forEach(([i, p], slot) => {
    const { a, b } = params.layers[i][p]!;
    adapters[i][p] = (x) => {
      const input = useDropout ? dropout(x, config.dropout, keys[slot]) : x;
      return linear(linear(input, a), b).mul(scale);
    };
  });
  return adapters;
}

/**
 * Base weights with the adapter folded in: W + s·B·A for every targeted projection (host tensors
 * keyed by model.ts paths, as weights.ts reads them; the others are passed through). Float32.
 */
export function mergeLora(
  base: Record<string, HostTensor>,
  lora: Record<string, HostTensor>,
  config: LoraConfig,
  model: HfModelConfig,
): Record<string, HostTensor> {
  const scale = loraScale(config);
  const merged = { ...base };
  for (const { path, part } of loraParamShapes(config, model)) {
    if (part !== "a") continue;
    const weightPath = path.slice(0, -2);
    const a = lora[path];
    const b = lora[`${weightPath}.b`];
    const w = base[weightPath];
    if (!a || !b) throw new LoraConfigError(`mergeLora: the adapter has no ${weightPath}.a/.b`);
    const [out, inWidth] = w.shape;
    const r = config.rank;
    const data = Float32Array.from(w.data as Float32Array);
    const A = a.data as Float32Array;
    const B = b.data as Float32Array;
    // Row by row with the k loop outside the i loop, so the inner loop walks A and the row
    // contiguously (1.6–1.8x faster than the strided order on a 576×576, r 16 projection); the
    // sums are taken in the same order as Σ_k B[o,k]·A[k,i], so the result is bit for bit the same.
    const sum = new Float64Array(inWidth);
    for (let o = 0; o < out; o++) {
      sum.fill(0);
      for (let k = 0; k < r; k++) {
        const bk = B[o * r + k];
        const row = k * inWidth;
        for (let i = 0; i < inWidth; i++) sum[i] += bk * A[row + i];
      }
      const at = o * inWidth;
      for (let i = 0; i < inWidth; i++) data[at + i] += scale * sum[i];
    }
    merged[weightPath] = { dtype: "float32", shape: [out, inWidth], data };
  }
  return merged;
}
