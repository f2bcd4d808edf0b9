/**
 * Test-only: a plain float64 GPT-2 forward over a parameter tree (model.ts's paths, [out, in]
 * weights), with the GELU either exact (the tanh form, GPT-2's `gelu_new`) or as ggml's CPU backend
 * computes it: through a table of float16 results indexed by the input rounded to float16
 * (`GGML_GELU_FP16` in ggml-cpu/vec.h, on in every build: y = f16(gelu(f16(x))), 0 below −10 and
 * x above 10). That table is the one place llama.cpp's `gpt2` differs from a float32 forward by
 * more than rounding; this forward with it shows the rest agrees (gguf-export.test.ts).
 *
 * B=1, T=time, D=width, H=heads, K=head size, F=MLP width, V=vocabulary.
 */
import { floatToHalfBits, halfToFloat } from "../../engine/safetensors.ts";
import type { HostTensor } from "../../engine/tree.ts";
import type { HfModelConfig } from "./config.ts";

const f16 = (x: number) => halfToFloat(floatToHalfBits(x));

function geluTanh(x: number): number {
  return 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * x * (1 + 0.044715 * x * x)));
}

/** ggml's float16-table GELU. */
export function ggmlGelu(x: number): number {
  if (x <= -10) return 0;
  if (x >= 10) return x;
  return f16(geluTanh(f16(x)));
}

/** y[T, out] = x[T, in] · Wᵀ + b. */
function linear(x: Float64Array, T: number, w: HostTensor, b?: HostTensor): Float64Array {
  const [out, inWidth] = w.shape as [number, number];
  const W = w.data as Float32Array;
  const y = new Float64Array(T * out);
  for (let t = 0; t < T; t++)
    for (let o = 0; o < out; o++) {
      let sum = b ? (b.data as Float32Array)[o]! : 0;
      for (let i = 0; i < inWidth; i++) sum += x[t * inWidth + i]! * W[o * inWidth + i]!;
      y[t * out + o] = sum;
    }
  return y;
}

function layerNorm(x: Float64Array, T: number, w: HostTensor, b: HostTensor, eps: number): Float64Array {
  const D = w.shape[0]!;
  const y = new Float64Array(x.length);
  for (let t = 0; t < T; t++) {
    const row = x.subarray(t * D, (t + 1) * D);
    const mean = row.reduce((s, v) => s + v, 0) / D;
    const variance = row.reduce((s, v) => s + (v - mean) ** 2, 0) / D;
    const scale = 1 / Math.sqrt(variance + eps);
    for (let i = 0; i < D; i++)
      y[t * D + i] = (row[i]! - mean) * scale * (w.data as Float32Array)[i]! + (b.data as Float32Array)[i]!;
  }
  return y;
}

/** Logits [T·V] of `ids` through a GPT-2 parameter tree. */
export function gpt2ReferenceLogits(
  config: HfModelConfig,
  p: Record<string, HostTensor>,
  ids: readonly number[],
  gelu: (x: number) => number,
): Float64Array {
  const T = ids.length;
  const D = config.hiddenSize;
  const H = config.heads;
  const K = D / H;
  const embed = p.embed!.data as Float32Array;
  const positions = p.positions!.data as Float32Array;
  let h = new Float64Array(T * D);
  for (let t = 0; t < T; t++)
    for (let i = 0; i < D; i++) h[t * D + i] = embed[ids[t]! * D + i]! + positions[t * D + i]!;
  for (let l = 0; l < config.layers; l++) {
    const q = (name: string) => p[`layers.${l}.${name}`]!;
    const x = layerNorm(h, T, q("inputNorm"), q("inputNormBias"), config.normEps);
    const [Q, Km, Vm] = (["q", "k", "v"] as const).map((n) => linear(x, T, q(n), q(`${n}Bias`)));
    const attended = new Float64Array(T * D);
    for (let head = 0; head < H; head++)
      for (let t = 0; t < T; t++) {
        const scores = new Float64Array(t + 1);
        for (let s = 0; s <= t; s++) {
          let dot = 0;
          for (let k = 0; k < K; k++) dot += Q![t * D + head * K + k]! * Km![s * D + head * K + k]!;
          scores[s] = dot / Math.sqrt(K);
        }
        const max = Math.max(...scores);
        const weights = scores.map((v) => Math.exp(v - max));
        const total = weights.reduce((a, b) => a + b, 0);
        for (let s = 0; s <= t; s++)
          for (let k = 0; k < K; k++)
            attended[t * D + head * K + k]! += (weights[s]! / total) * Vm![s * D + head * K + k]!;
      }
    const o = linear(attended, T, q("o"), q("oBias"));
    h = h.map((v, i) => v + o[i]!);
    const y = layerNorm(h, T, q("postNorm"), q("postNormBias"), config.normEps);
    const up = linear(y, T, q("up"), q("upBias")).map(gelu);
    const down = linear(up, T, q("down"), q("downBias"));
    h = h.map((v, i) => v + down[i]!);
  }
  const final = layerNorm(h, T, p.norm!, p.normBias!, config.normEps);
  return linear(final, T, p.lmHead ?? p.embed!);
}
