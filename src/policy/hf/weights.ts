/**
 * A Hugging Face checkpoint folder as `save_pretrained` writes it: `config.json`, the weights in
 * safetensors (one `model.safetensors`, or shards listed by `model.safetensors.index.json`; f32,
 * f16 or bf16, widened to float32) and an optional `generation_config.json`. The weights become
 * host tensors keyed by the engine's parameter paths (model.ts), in Hugging Face's layout
 * ([out, in] for every projection). GPT-2 is read into the same layout (gpt2-weights.ts): its
 * Conv1D weights ([in, out]) transposed, its fused `c_attn` split into q, k and v.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { readSafetensorsFile } from "../../engine/safetensors.ts";
import type { HostTensor } from "../../engine/tree.ts";
import {
  configDType,
  HfConfigError,
  type HfGenerationConfig,
  type HfModelConfig,
  type HfSaveDType,
  parseGenerationConfig,
  parseHfConfig,
} from "./config.ts";
import { gpt2ParamNames } from "./gpt2-weights.ts";

export interface HfCheckpoint {
  folder: string;
  config: HfModelConfig;
  generation: HfGenerationConfig;
  /** Parameter path (model.ts's tree: `layers.0.q`, `embed`, …) → float32 tensor. */
  tensors: Record<string, HostTensor>;
  /** The dtype config.json states for the weights (config.ts `configDType`): trained folders default to it. */
  dtype: HfSaveDType;
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new HfConfigError(`${path}: ${(error as Error).message}`);
  }
}

/** Every tensor of the folder's safetensors files, by Hugging Face name. */
function readSafetensors(folder: string): Record<string, HostTensor> {
  const index = join(folder, "model.safetensors.index.json");
  let files: string[];
  if (existsSync(index)) {
    const map = (readJson(index) as { weight_map?: Record<string, string> }).weight_map;
    if (!map || typeof map !== "object")
      throw new HfConfigError(`${index}: weight_map must map tensor names to shard files`);
    files = [...new Set(Object.values(map))];
  } else if (existsSync(join(folder, "model.safetensors"))) {
    files = ["model.safetensors"];
  } else {
    throw new HfConfigError(
      `${folder}: no model.safetensors or model.safetensors.index.json (only safetensors weights are read; convert .bin checkpoints with transformers' save_pretrained)`,
    );
  }
  const tensors: Record<string, HostTensor> = {};
  for (const file of files) {
    const path = join(folder, file);
    Object.assign(tensors, readSafetensorsFile(path).tensors);
  }
  return tensors;
}

/**
 * How a parameter is read from a checkpoint tensor of another shape: `transpose` a 2-D [in, out]
 * tensor, then keep `part` i of n equal slices along the first axis (`fileShape` is the tensor's
 * own shape).
 */
export interface HfParamSource {
  fileShape: number[];
  transpose?: boolean;
  part?: [index: number, of: number];
}

export type HfParamEntry = [path: string, name: string, shape: number[], source?: HfParamSource];

/** Hugging Face tensor name of each parameter path, with its expected shape. */
export function hfParamNames(c: HfModelConfig): HfParamEntry[] {
  if (c.block === "gpt2") return gpt2ParamNames(c);
  const D = c.hiddenSize;
  const q = c.heads * c.headDim;
  const kv = c.kvHeads * c.headDim;
  const F = c.intermediateSize;
  const out: [string, string, number[]][] = [["embed", "model.embed_tokens.weight", [c.vocabSize, D]]];
  for (let i = 0; i < c.layers; i++) {
    const p = `layers.${i}`;
    const n = `model.layers.${i}`;
    out.push(
      [`${p}.inputNorm`, `${n}.input_layernorm.weight`, [D]],
      [`${p}.q`, `${n}.self_attn.q_proj.weight`, [q, D]],
      [`${p}.k`, `${n}.self_attn.k_proj.weight`, [kv, D]],
      [`${p}.v`, `${n}.self_attn.v_proj.weight`, [kv, D]],
      [`${p}.o`, `${n}.self_attn.o_proj.weight`, [D, q]],
    );
    if (c.qkvBias)
      out.push(
        [`${p}.qBias`, `${n}.self_attn.q_proj.bias`, [q]],
        [`${p}.kBias`, `${n}.self_attn.k_proj.bias`, [kv]],
        [`${p}.vBias`, `${n}.self_attn.v_proj.bias`, [kv]],
      );
    if (c.outputBias) out.push([`${p}.oBias`, `${n}.self_attn.o_proj.bias`, [D]]);
    if (c.qkNorm)
      out.push(
        [`${p}.qNorm`, `${n}.self_attn.q_norm.weight`, [c.headDim]],
        [`${p}.kNorm`, `${n}.self_attn.k_norm.weight`, [c.headDim]],
      );
    out.push(
      [`${p}.postNorm`, `${n}.post_attention_layernorm.weight`, [D]],
      [`${p}.gate`, `${n}.mlp.gate_proj.weight`, [F, D]],
      [`${p}.up`, `${n}.mlp.up_proj.weight`, [F, D]],
      [`${p}.down`, `${n}.mlp.down_proj.weight`, [D, F]],
    );
    if (c.mlpBias)
      out.push(
        [`${p}.gateBias`, `${n}.mlp.gate_proj.bias`, [F]],
        [`${p}.upBias`, `${n}.mlp.up_proj.bias`, [F]],
        [`${p}.downBias`, `${n}.mlp.down_proj.bias`, [D]],
      );
  }
  out.push(["norm", "model.norm.weight", [D]]);
  if (!c.tieEmbeddings) out.push(["lmHead", "lm_head.weight", [c.vocabSize, D]]);
  return out;
}

/** Picks and checks the parameters of `config` among a checkpoint's tensors. */
export function selectHfParams(
  config: HfModelConfig,
  tensors: Record<string, HostTensor>,
  source: string,
): Record<string, HostTensor> {
  const out: Record<string, HostTensor> = {};
  for (const [path, name, shape, from] of hfParamNames(config)) {
    // GPT-2 checkpoints on the Hub (openai-community/gpt2) name the body without `transformer.`.
    const tensor = tensors[name] ?? tensors[name.replace(/^transformer\./, "")];
    if (!tensor) throw new HfConfigError(`${source}: tensor "${name}" is missing`);
    const expected = from?.fileShape ?? shape;
    if (tensor.shape.join() !== expected.join())
      throw new HfConfigError(
        `${source}: tensor "${name}" has shape [${tensor.shape}], config.json implies [${expected}]`,
      );
    if (tensor.dtype !== "float32")
      throw new HfConfigError(`${source}: tensor "${name}" is ${tensor.dtype}; f32, f16 or bf16 are read`);
    out[path] = from ? reshapeSource(tensor, from, shape) : tensor;
  }
  return out;
}

/** The parameter [shape] a source rule reads out of a float32 tensor. */
function reshapeSource(tensor: HostTensor, from: HfParamSource, shape: number[]): HostTensor {
  const data = tensor.data as Float32Array;
  const size = shape.reduce((a, b) => a * b, 1);
  const [index, of] = from.part ?? [0, 1];
  const out = new Float32Array(size);
  if (from.transpose) {
    // [in, out] → [out, in], keeping rows index·out/of … (index+1)·out/of of the result.
    const [inWidth, outWidth] = tensor.shape;
    const first = (index * outWidth) / of;
    const rows = outWidth / of;
    for (let r = 0; r < rows; r++)
      for (let c = 0; c < inWidth; c++) out[r * inWidth + c] = data[c * outWidth + first + r];
  } else {
    out.set(data.subarray(index * size, (index + 1) * size));
  }
  return { dtype: "float32", shape: [...shape], data: out };
}

/**
 * The checkpoint's tensors (Hugging Face names and layouts) of parameters read by `selectHfParams`:
 * the inverse of its rules (GPT-2's q, k and v fused back into c_attn, projections transposed back
 * to Conv1D's [in, out]). Parameters without a rule are passed as they are.
 */
export function hfTensorsOfParams(
  config: HfModelConfig,
  params: Record<string, HostTensor>,
): Record<string, HostTensor> {
  const out: Record<string, HostTensor> = {};
  for (const [path, name, shape, from] of hfParamNames(config)) {
    const param = params[path];
    if (!param) throw new HfConfigError(`hfTensorsOfParams: no parameter ${path}`);
    if (!from) {
      out[name] = param;
      continue;
    }
    const size = from.fileShape.reduce((a, b) => a * b, 1);
    out[name] ??= { dtype: "float32", shape: [...from.fileShape], data: new Float32Array(size) };
    const target = out[name].data as Float32Array;
    const data = param.data as Float32Array;
    const [index, of] = from.part ?? [0, 1];
    if (from.transpose) {
      const [inWidth, outWidth] = from.fileShape;
      const first = (index * outWidth) / of;
      const rows = outWidth / of;
      for (let r = 0; r < rows; r++)
        for (let c = 0; c < inWidth; c++) target[c * outWidth + first + r] = data[r * inWidth + c];
    } else {
      const partSize = shape.reduce((a, b) => a * b, 1);
      target.set(data, index * partSize);
    }
  }
  return out;
}

/** Reads a checkpoint folder (config, generation config, weights). */
export function loadHfCheckpoint(folder: string): HfCheckpoint {
  const configPath = join(folder, "config.json");
  if (!existsSync(configPath))
    throw new HfConfigError(`${folder}: no config.json (not a Hugging Face checkpoint folder)`);
  const rawConfig = readJson(configPath);
  const config = parseHfConfig(rawConfig);
  const generationPath = join(folder, "generation_config.json");
  const generation = parseGenerationConfig(
    existsSync(generationPath) ? readJson(generationPath) : null,
    config,
  );
  const tensors = selectHfParams(config, readSafetensors(folder), folder);
  return { folder, config, generation, tensors, dtype: configDType(rawConfig) };
}
