/**
 * A checkpoint's parameters (model.ts's tree: `layers.N.q`, `embed`, … in Hugging Face's [out, in]
 * layout, as weights.ts reads them) as the tensors llama.cpp loads, named and laid out as llama.cpp's
 * convert_hf_to_gguf.py writes them:
 *
 * - names: `token_embd`, `position_embd` (GPT-2), `output_norm`, `output` (only when the head is
 *   not tied: llama.cpp then reads `token_embd` twice), and per block `blk.N.attn_norm`,
 *   `attn_q`/`attn_k`/`attn_v` (GPT-2: one `attn_qkv`, q, k and v rows stacked as its `c_attn`
 *   holds them), `attn_output`, `attn_q_norm`/`attn_k_norm` (Qwen3), `ffn_norm`, `ffn_gate`,
 *   `ffn_up`, `ffn_down`, each `.weight` or `.bias`;
 * - Llama's q and k rows permuted per head from Hugging Face's rotate-half order to the interleaved
 *   pairs llama.cpp's `llama` rope rotates (row 2i+j of a head is row j·K/2+i of the file's);
 *   Qwen2 and Qwen3 are rotated in rotate-half form by llama.cpp (NeoX rope) and kept as they are;
 * - Llama 3's rope scaling as the `rope_freqs` tensor: per frequency the divisor llama.cpp applies
 *   (1 above the high-frequency wavelength, `factor` beyond the low one, and between them
 *   1 / ((1 − s)/factor + s), s = (original context / wavelength − low) / (high − low));
 * - the type of each tensor by convert's rule: vectors, norms, biases and the position table in
 *   F32; every other weight in the file type (F32, F16, or Q8_0, F16 where a row is not whole
 *   blocks of 32).
 */
import type { HostTensor } from "../../engine/tree.ts";
import type { HfModelConfig } from "./config.ts";
import type { GgmlType } from "./gguf-quants.ts";
import type { GgufTensor } from "./gguf-writer.ts";

export const GGUF_FILE_TYPES = ["f32", "f16", "q8_0"] as const;
export type GgufFileType = (typeof GGUF_FILE_TYPES)[number];

/** llama.cpp's `general.file_type` of each (gguf-py's LlamaFileType: ALL_F32, MOSTLY_F16, MOSTLY_Q8_0). */
export const LLAMA_FILE_TYPE: Record<GgufFileType, number> = { f32: 0, f16: 1, q8_0: 7 };

/** The llama.cpp architecture of each Hugging Face one. */
export const GGUF_ARCHITECTURES = {
  LlamaForCausalLM: "llama",
  Qwen2ForCausalLM: "qwen2",
  Qwen3ForCausalLM: "qwen3",
  GPT2LMHeadModel: "gpt2",
} as const satisfies Record<HfModelConfig["architecture"], string>;
export type GgufArchitecture = (typeof GGUF_ARCHITECTURES)[keyof typeof GGUF_ARCHITECTURES];

/** The type a tensor is written in (convert_hf_to_gguf.py's rule). */
export function ggufTensorType(name: string, shape: readonly number[], fileType: GgufFileType): GgmlType {
  if (shape.length <= 1 || name.endsWith("_norm.weight")) return "F32";
  if (name === "position_embd.weight" || !name.endsWith(".weight")) return "F32";
  if (fileType === "f32") return "F32";
  if (fileType === "f16") return "F16";
  return shape.at(-1)! % 32 === 0 ? "Q8_0" : "F16";
}

/** Rows of each head reordered from rotate-half to interleaved pairs (Llama's q and k). */
export function permuteRope(data: Float32Array, shape: readonly number[], heads: number): Float32Array {
  const rows = shape[0]!;
  const width = shape.length > 1 ? shape[1]! : 1;
  const headDim = rows / heads;
  const half = headDim / 2;
  const out = new Float32Array(data.length);
  for (let h = 0; h < heads; h++)
    for (let i = 0; i < half; i++)
      for (let j = 0; j < 2; j++) {
        const from = (h * headDim + j * half + i) * width;
        out.set(data.subarray(from, from + width), (h * headDim + 2 * i + j) * width);
      }
  return out;
}

/**
 * Llama 3's per-frequency divisors (the `rope_freqs` tensor), or null for other rope types. In
 * float32 at each step, as convert computes them with PyTorch (f32 below).
 */
export function llama3RopeFactors(config: HfModelConfig): Float32Array | null {
  const rope = config.rope;
  if (rope.type !== "llama3") return null;
  const f32 = Math.fround;
  const half = config.headDim / 2;
  const low = f32(rope.originalMaxPositions / rope.lowFreqFactor);
  const high = f32(rope.originalMaxPositions / rope.highFreqFactor);
  const factors = new Float32Array(half);
  for (let i = 0; i < half; i++) {
    const frequency = f32(1 / f32(config.ropeTheta ** f32((2 * i) / config.headDim)));
    const wavelength = f32(f32(2 * Math.PI) / frequency);
    if (wavelength < high) factors[i] = 1;
    else if (wavelength > low) factors[i] = rope.factor;
    else {
      const smooth = f32(
        f32(f32(rope.originalMaxPositions / wavelength) - rope.lowFreqFactor) /
          f32(rope.highFreqFactor - rope.lowFreqFactor),
      );
      factors[i] = f32(1 / f32(f32(f32(1 - smooth) / rope.factor) + smooth));
    }
  }
  return factors;
}

/** What llama.cpp's loader for each architecture does not read (a file holding it is refused at load). */
function refuseUnread(config: HfModelConfig, arch: GgufArchitecture): void {
  const unread: string[] = [];
  if ((arch === "qwen2" || arch === "qwen3") && config.outputBias) unread.push("an output-projection bias");
  if ((arch === "qwen2" || arch === "qwen3") && config.mlpBias) unread.push("MLP biases (mlp_bias)");
  if (arch === "gpt2" && !config.scaleAttention) unread.push("unscaled attention (scale_attn_weights false)");
  if (arch === "gpt2" && config.activation !== "gelu_new") unread.push(`activation ${config.activation}`);
  if (unread.length > 0)
    throw new Error(`export gguf: llama.cpp's ${arch} does not compute ${unread.join(", ")}`);
}

/** The GGUF name of each parameter path a config may have (absent parameters are skipped). */
function names(config: HfModelConfig): [path: string, name: string][] {
  const out: [string, string][] = [["embed", "token_embd.weight"]];
  if (config.block === "gpt2") out.push(["positions", "position_embd.weight"]);
  for (let i = 0; i < config.layers; i++) {
    const p = `layers.${i}`;
    const b = `blk.${i}`;
    const entries: [string, string][] = [
      [`${p}.inputNorm`, `${b}.attn_norm.weight`],
      [`${p}.inputNormBias`, `${b}.attn_norm.bias`],
      [`${p}.q`, `${b}.attn_q.weight`],
      [`${p}.qBias`, `${b}.attn_q.bias`],
      [`${p}.k`, `${b}.attn_k.weight`],
      [`${p}.kBias`, `${b}.attn_k.bias`],
      [`${p}.v`, `${b}.attn_v.weight`],
      [`${p}.vBias`, `${b}.attn_v.bias`],
      [`${p}.o`, `${b}.attn_output.weight`],
      [`${p}.oBias`, `${b}.attn_output.bias`],
      [`${p}.qNorm`, `${b}.attn_q_norm.weight`],
      [`${p}.kNorm`, `${b}.attn_k_norm.weight`],
      [`${p}.postNorm`, `${b}.ffn_norm.weight`],
      [`${p}.postNormBias`, `${b}.ffn_norm.bias`],
      [`${p}.gate`, `${b}.ffn_gate.weight`],
      [`${p}.gateBias`, `${b}.ffn_gate.bias`],
      [`${p}.up`, `${b}.ffn_up.weight`],
      [`${p}.upBias`, `${b}.ffn_up.bias`],
      [`${p}.down`, `${b}.ffn_down.weight`],
      [`${p}.downBias`, `${b}.ffn_down.bias`],
    ];
    out.push(...entries);
  }
  out.push(["norm", "output_norm.weight"], ["normBias", "output_norm.bias"], ["lmHead", "output.weight"]);
  return out;
}

const f32Of = (tensor: HostTensor): Float32Array =>
  tensor.data instanceof Float32Array ? tensor.data : Float32Array.from(tensor.data as ArrayLike<number>);

/** Rows of tensors stacked along the first axis (GPT-2's q, k and v as `attn_qkv`). */
function stackRows(parts: HostTensor[]): Float32Array {
  const out = new Float32Array(parts.reduce((sum, t) => sum + t.data.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(f32Of(part), at);
    at += part.data.length;
  }
  return out;
}

/**
 * The tensors of a checkpoint's parameters for llama.cpp, in `fileType`. Parameters the config has
 * (weights.ts `hfParamNames`) must all be present; values are computed when the writer asks.
 */
export function ggufTensors(
  config: HfModelConfig,
  params: Record<string, HostTensor>,
  fileType: GgufFileType,
): GgufTensor[] {
  const arch = GGUF_ARCHITECTURES[config.architecture];
  refuseUnread(config, arch);
  const tensor = (name: string, shape: readonly number[], values: () => Float32Array): GgufTensor => ({
    name,
    shape,
    type: ggufTensorType(name, shape, fileType),
    values,
  });
  const out: GgufTensor[] = [];
  const factors = llama3RopeFactors(config);
  if (factors) out.push(tensor("rope_freqs.weight", [factors.length], () => factors));
  for (const [path, name] of names(config)) {
    const param = params[path];
    if (!param) continue;
    const layer = /^layers\.(\d+)\.([a-zA-Z]+)$/.exec(path);
    const field = layer?.[2];
    if (arch === "gpt2" && (field === "q" || field === "qBias")) {
      // c_attn: q, k and v stacked, as llama.cpp's gpt2 reads `attn_qkv`.
      const suffix = field === "q" ? "" : "Bias";
      const parts = ["q", "k", "v"].map((part) => params[`layers.${layer![1]}.${part}${suffix}`]!);
      const rows = parts.reduce((sum, t) => sum + t.shape[0]!, 0);
      const shape = field === "q" ? [rows, param.shape[1]!] : [rows];
      out.push(tensor(name.replace("attn_q.", "attn_qkv."), shape, () => stackRows(parts)));
      continue;
    }
    if (arch === "gpt2" && field !== undefined && /^[kv](Bias)?$/.test(field)) continue;
    const heads = field === "q" || field === "qBias" ? config.heads : config.kvHeads;
    const permuted = arch === "llama" && field !== undefined && /^[qk](Bias)?$/.test(field);
    out.push(
      tensor(name, [...param.shape], () =>
        permuted ? permuteRope(f32Of(param), param.shape, heads) : f32Of(param),
      ),
    );
  }
  return out;
}
