/**
 * A Hugging Face causal LM's `config.json`, read into the shape the engine runs, and refused by
 * name when it asks for something the engine does not compute. Supported: Qwen3ForCausalLM,
 * LlamaForCausalLM (Llama 3 with its rope scaling, SmolLM2), Qwen2ForCausalLM (Qwen2.5) and
 * GPT2LMHeadModel (GPT-2, and what `agentrl export hf` writes; gpt2.ts reads its config).
 * Both ways transformers writes RoPE settings are read: `rope_theta` + `rope_scaling` (checkpoints
 * on the Hub) and `rope_parameters` (transformers 5's `save_pretrained`).
 */

export const SUPPORTED_ARCHITECTURES = [
  "Qwen3ForCausalLM",
  "LlamaForCausalLM",
  "Qwen2ForCausalLM",
  "GPT2LMHeadModel",
] as const;
export type HfArchitecture = (typeof SUPPORTED_ARCHITECTURES)[number];

export const SUPPORTED_ROPE_TYPES = ["default", "linear", "llama3"] as const;

export type RopeScaling =
  | { type: "default" }
  | { type: "linear"; factor: number }
  | {
      type: "llama3";
      factor: number;
      lowFreqFactor: number;
      highFreqFactor: number;
      originalMaxPositions: number;
    };

/**
 * The block's form. `llama`: RMSNorm, rotary positions, SwiGLU (Qwen2/3, Llama). `gpt2`:
 * LayerNorm with biases, learned absolute positions, a GELU MLP (`up` then `down`, no gate).
 */
export type HfBlock = "llama" | "gpt2";

/** Feed-forward activations: SiLU gating (llama blocks), GELU's tanh form (GPT-2's `gelu_new`). */
export type HfActivation = "silu" | "gelu_new";

export interface HfModelConfig {
  architecture: HfArchitecture;
  modelType: string;
  block: HfBlock;
  activation: HfActivation;
  /** Scores divided by √headDim (always on llama blocks; GPT-2's `scale_attn_weights`). */
  scaleAttention: boolean;
  vocabSize: number;
  hiddenSize: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  intermediateSize: number;
  /** The checkpoint's trained context (`max_position_embeddings`). */
  maxPositions: number;
  /** ε of the norms (RMSNorm's `rms_norm_eps`, GPT-2 LayerNorm's `layer_norm_epsilon`). */
  normEps: number;
  /** Unused by gpt2 blocks (learned positions). */
  ropeTheta: number;
  rope: RopeScaling;
  tieEmbeddings: boolean;
  /** Qwen3: RMSNorm over each query and key head before RoPE. */
  qkNorm: boolean;
  /** Biases on the q, k and v projections (Qwen2; `attention_bias`). */
  qkvBias: boolean;
  /** Bias on the output projection (`attention_bias` on Llama and Qwen3). */
  outputBias: boolean;
  /** Biases on gate, up and down (`mlp_bias`). */
  mlpBias: boolean;
  bosTokenId: number | null;
  eosTokenIds: number[];
}

/** The float dtypes a trained checkpoint folder can be written in (config.json's `dtype`). */
export const HF_SAVE_DTYPES = ["float32", "bfloat16", "float16"] as const;
export type HfSaveDType = (typeof HF_SAVE_DTYPES)[number];

/**
 * The dtype config.json says the checkpoint's weights are in (`torch_dtype`, or `dtype` as
 * transformers 4.56 and later write it): float32 when it states none, or one not among
 * HF_SAVE_DTYPES.
 */
export function configDType(raw: unknown): HfSaveDType {
  const json = (raw ?? {}) as Record<string, unknown>;
  const stated = json.dtype ?? json.torch_dtype;
  return (HF_SAVE_DTYPES as readonly unknown[]).includes(stated) ? (stated as HfSaveDType) : "float32";
}

/** A config the engine cannot run; the message names the field and what is supported. */
export class HfConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HfConfigError";
  }
}

type Json = Record<string, unknown>;

function positiveInt(raw: Json, field: string, fallback?: number): number {
  const value = raw[field] ?? fallback;
  if (!Number.isInteger(value) || (value as number) < 1)
    throw new HfConfigError(`config.json: ${field} must be a positive integer, got ${JSON.stringify(value)}`);
  return value as number;
}

function positiveNumber(raw: Json, field: string, where: string, fallback?: number): number {
  const value = raw[field] ?? fallback;
  if (typeof value !== "number" || !(value > 0))
    throw new HfConfigError(`${where}: ${field} must be a positive number, got ${JSON.stringify(value)}`);
  return value;
}

/** A token id or a list of them (`eos_token_id` is either); null and absent give []. */
export function tokenIdList(value: unknown, field: string): number[] {
  if (value === null || value === undefined) return [];
  const list = Array.isArray(value) ? value : [value];
  for (const id of list)
    if (!Number.isInteger(id) || id < 0)
      throw new HfConfigError(`${field} must be a token id or a list of them, got ${JSON.stringify(value)}`);
  return list as number[];
}

function readRope(raw: Json): { theta: number; rope: RopeScaling } {
  // transformers 5 folds the theta into rope_parameters; older configs keep rope_theta beside an
  // optional rope_scaling ({"type"} or {"rope_type"}).
  const parameters = (raw.rope_parameters ?? raw.rope_scaling ?? null) as Json | null;
  if (parameters !== null && (typeof parameters !== "object" || Array.isArray(parameters)))
    throw new HfConfigError(`config.json: rope_scaling must be an object, got ${JSON.stringify(parameters)}`);
  const where = raw.rope_parameters ? "config.json rope_parameters" : "config.json rope_scaling";
  const theta = positiveNumber(
    { rope_theta: raw.rope_theta ?? parameters?.rope_theta },
    "rope_theta",
    "config.json",
    10000,
  );
  const type = String(parameters?.rope_type ?? parameters?.type ?? "default");
  if (type === "default") return { theta, rope: { type } };
  if (type === "linear")
    return { theta, rope: { type, factor: positiveNumber(parameters!, "factor", where) } };
  if (type === "llama3") {
    const p = parameters!;
    const rope: RopeScaling = {
      type,
      factor: positiveNumber(p, "factor", where),
      lowFreqFactor: positiveNumber(p, "low_freq_factor", where),
      highFreqFactor: positiveNumber(p, "high_freq_factor", where),
      originalMaxPositions: positiveNumber(p, "original_max_position_embeddings", where),
    };
    if (rope.highFreqFactor <= rope.lowFreqFactor)
      throw new HfConfigError(`${where}: high_freq_factor must exceed low_freq_factor`);
    return { theta, rope };
  }
  throw new HfConfigError(
    `${where}: rope type "${type}" is not supported; supported: ${SUPPORTED_ROPE_TYPES.join(", ")}`,
  );
}

/** Refuses a sliding window that some layer actually uses (Qwen2's `use_sliding_window`, `layer_types`). */
function refuseSlidingWindow(raw: Json): void {
  const types = raw.layer_types;
  const sliding =
    raw.use_sliding_window === true || (Array.isArray(types) && types.some((t) => t !== "full_attention"));
  if (sliding)
    throw new HfConfigError(
      "config.json: sliding-window attention (use_sliding_window / layer_types) is not supported; only full attention",
    );
}

/** GPT-2 settings that change what is computed and that the engine does not compute. */
const GPT2_REFUSED = {
  scale_attn_by_inverse_layer_idx: "attention scaled by 1/(layer index + 1)",
  reorder_and_upcast_attn: "reordered, upcast attention",
  add_cross_attention: "cross-attention",
} as const;

/** GPT-2 activation names, with the one each is (`gelu_pytorch_tanh` is `gelu_new` by another name). */
const GPT2_ACTIVATIONS: Record<string, HfActivation> = {
  gelu_new: "gelu_new",
  gelu_pytorch_tanh: "gelu_new",
};

/**
 * GPT2LMHeadModel's config.json: n_embd, n_layer, n_head, n_positions, n_inner (null: 4·n_embd),
 * layer_norm_epsilon, activation_function, scale_attn_weights, tie_word_embeddings (default true,
 * transformers' default).
 */
function parseGpt2Config(json: Json): HfModelConfig {
  for (const [field, what] of Object.entries(GPT2_REFUSED))
    if (json[field] === true)
      throw new HfConfigError(`config.json: ${field} (${what}) is not supported; set it false or remove it`);
  const name = String(json.activation_function ?? "gelu_new");
  const activation = GPT2_ACTIVATIONS[name];
  if (!activation)
    throw new HfConfigError(
      `config.json: activation_function "${name}" is not supported; supported: ${Object.keys(GPT2_ACTIVATIONS).join(", ")}`,
    );
  const hiddenSize = positiveInt(json, "n_embd");
  const heads = positiveInt(json, "n_head");
  if (hiddenSize % heads !== 0)
    throw new HfConfigError(`config.json: n_embd (${hiddenSize}) must be a multiple of n_head (${heads})`);
  const inner = json.n_inner ?? null;
  return {
    architecture: "GPT2LMHeadModel",
    modelType: String(json.model_type ?? "gpt2"),
    block: "gpt2",
    activation,
    scaleAttention: json.scale_attn_weights !== false,
    vocabSize: positiveInt(json, "vocab_size"),
    hiddenSize,
    layers: positiveInt(json, "n_layer"),
    heads,
    kvHeads: heads,
    headDim: hiddenSize / heads,
    intermediateSize: inner === null ? 4 * hiddenSize : positiveInt(json, "n_inner"),
    maxPositions: positiveInt(json, "n_positions", 1024),
    normEps: positiveNumber(json, "layer_norm_epsilon", "config.json", 1e-5),
    ropeTheta: 10000,
    rope: { type: "default" },
    tieEmbeddings: json.tie_word_embeddings !== false,
    qkNorm: false,
    qkvBias: true,
    outputBias: true,
    mlpBias: true,
    bosTokenId: tokenIdList(json.bos_token_id, "config.json: bos_token_id")[0] ?? null,
    eosTokenIds: tokenIdList(json.eos_token_id, "config.json: eos_token_id"),
  };
}

/** Parses and validates a `config.json` object. */
export function parseHfConfig(raw: unknown): HfModelConfig {
  if (!raw || typeof raw !== "object" || Array.isArray(raw))
    throw new HfConfigError("config.json must hold a JSON object");
  const json = raw as Json;
  const architectures = json.architectures;
  const architecture = Array.isArray(architectures) ? architectures[0] : undefined;
  if (!(SUPPORTED_ARCHITECTURES as readonly unknown[]).includes(architecture))
    throw new HfConfigError(
      `config.json: architecture ${JSON.stringify(architecture ?? null)} is not supported; supported: ${SUPPORTED_ARCHITECTURES.join(", ")}`,
    );
  const arch = architecture as HfArchitecture;
  if (arch === "GPT2LMHeadModel") return parseGpt2Config(json);
  const activation = json.hidden_act ?? "silu";
  if (activation !== "silu")
    throw new HfConfigError(`config.json: hidden_act "${activation}" is not supported; supported: silu`);
  refuseSlidingWindow(json);
  const hiddenSize = positiveInt(json, "hidden_size");
  const heads = positiveInt(json, "num_attention_heads");
  const kvHeads = positiveInt(json, "num_key_value_heads", heads);
  if (heads % kvHeads !== 0)
    throw new HfConfigError(
      `config.json: num_attention_heads (${heads}) must be a multiple of num_key_value_heads (${kvHeads})`,
    );
  const headDim = positiveInt(json, "head_dim", Math.floor(hiddenSize / heads));
  if (headDim % 2 !== 0) throw new HfConfigError(`config.json: head_dim must be even, got ${headDim}`);
  const { theta, rope } = readRope(json);
  const attentionBias = json.attention_bias === true;
  return {
    architecture: arch,
    modelType: String(json.model_type ?? ""),
    block: "llama",
    activation: "silu",
    scaleAttention: true,
    vocabSize: positiveInt(json, "vocab_size"),
    hiddenSize,
    layers: positiveInt(json, "num_hidden_layers"),
    heads,
    kvHeads,
    headDim,
    intermediateSize: positiveInt(json, "intermediate_size"),
    maxPositions: positiveInt(json, "max_position_embeddings", 2048),
    normEps: positiveNumber(json, "rms_norm_eps", "config.json", 1e-6),
    ropeTheta: theta,
    rope,
    tieEmbeddings: json.tie_word_embeddings === true,
    qkNorm: arch === "Qwen3ForCausalLM",
    qkvBias: arch === "Qwen2ForCausalLM" || attentionBias,
    outputBias: arch !== "Qwen2ForCausalLM" && attentionBias,
    mlpBias: json.mlp_bias === true,
    bosTokenId: tokenIdList(json.bos_token_id, "config.json: bos_token_id")[0] ?? null,
    eosTokenIds: tokenIdList(json.eos_token_id, "config.json: eos_token_id"),
  };
}

/** Sampling defaults and stop ids of `generation_config.json`. */
export interface HfGenerationConfig {
  eosTokenIds: number[];
  /** Absent: greedy unless asked (`do_sample` false or unset gives temperature 0). */
  temperature: number;
  topP: number;
  topK: number | null;
}

/** Parses `generation_config.json` (or null when the folder has none). */
export function parseGenerationConfig(raw: unknown, model: HfModelConfig): HfGenerationConfig {
  const json = (raw ?? {}) as Json;
  if (typeof json !== "object" || Array.isArray(json))
    throw new HfConfigError("generation_config.json must hold a JSON object");
  const eos = tokenIdList(json.eos_token_id, "generation_config.json: eos_token_id");
  const sample = json.do_sample === true;
  const temperature = sample ? positiveNumber(json, "temperature", "generation_config.json", 1) : 0;
  const topP = positiveNumber(json, "top_p", "generation_config.json", 1);
  if (topP > 1) throw new HfConfigError(`generation_config.json: top_p must be ≤ 1, got ${topP}`);
  const topK = json.top_k === undefined || json.top_k === null ? null : positiveInt(json, "top_k");
  return {
    eosTokenIds: [...new Set([...eos, ...model.eosTokenIds])],
    temperature,
    topP,
    topK,
  };
}

/** Parameter count of a config (what `loadHfWeights` reads). */
export function hfParamCount(c: HfModelConfig): number {
  const q = c.heads * c.headDim;
  const kv = c.kvHeads * c.headDim;
  const attention =
    c.hiddenSize * (q + 2 * kv) +
    q * c.hiddenSize +
    (c.qkvBias ? q + 2 * kv : 0) +
    (c.outputBias ? c.hiddenSize : 0) +
    (c.qkNorm ? 2 * c.headDim : 0);
  const mlp = 3 * c.hiddenSize * c.intermediateSize + (c.mlpBias ? 2 * c.intermediateSize + c.hiddenSize : 0);
  if (c.block === "gpt2") {
    // No gate; LayerNorms with biases; learned positions.
    const gpt2Mlp = 2 * c.hiddenSize * c.intermediateSize + c.intermediateSize + c.hiddenSize;
    const layer = attention + gpt2Mlp + 4 * c.hiddenSize;
    return (
      c.vocabSize * c.hiddenSize * (c.tieEmbeddings ? 1 : 2) +
      c.maxPositions * c.hiddenSize +
      c.layers * layer +
      2 * c.hiddenSize
    );
  }
  const layer = attention + mlp + 2 * c.hiddenSize;
  return c.vocabSize * c.hiddenSize * (c.tieEmbeddings ? 1 : 2) + c.layers * layer + c.hiddenSize;
}
