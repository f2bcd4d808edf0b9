import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { hfParamCount, parseGenerationConfig, parseHfConfig } from "./config.ts";
import { ropeInverseFrequencies } from "./rope.ts";
import { FIXTURES } from "./testing-fixtures.ts";
import { loadHfCheckpoint, selectHfParams } from "./weights.ts";

const qwen3 = () => JSON.parse(readFileSync(join(FIXTURES, "qwen3-tied", "config.json"), "utf8"));

test("a transformers 5 Qwen3 config reads into the engine's shape", () => {
  const c = parseHfConfig(qwen3());
  assert.equal(c.architecture, "Qwen3ForCausalLM");
  assert.deepEqual([c.heads, c.kvHeads, c.headDim, c.hiddenSize], [4, 2, 16, 32]);
  assert.deepEqual([c.qkNorm, c.qkvBias, c.tieEmbeddings, c.ropeTheta], [true, false, true, 10000]);
  assert.deepEqual(c.rope, { type: "default" });
});

test("Hub-style rope_theta + rope_scaling (Llama 3.1) is read as well as rope_parameters", () => {
  const raw = {
    ...qwen3(),
    architectures: ["LlamaForCausalLM"],
    rope_parameters: undefined,
    rope_theta: 500000,
    rope_scaling: {
      rope_type: "llama3",
      factor: 8,
      low_freq_factor: 1,
      high_freq_factor: 4,
      original_max_position_embeddings: 8192,
    },
  };
  const c = parseHfConfig(raw);
  assert.equal(c.ropeTheta, 500000);
  assert.deepEqual(c.rope, {
    type: "llama3",
    factor: 8,
    lowFreqFactor: 1,
    highFreqFactor: 4,
    originalMaxPositions: 8192,
  });
  assert.equal(c.qkNorm, false);
});

test("RoPE frequencies: worked example (d=4, θ=10000: 1 and 1/100; linear ×2 halves them)", () => {
  const base = { headDim: 4, ropeTheta: 10000 };
  assert.deepEqual(
    [...ropeInverseFrequencies({ ...base, rope: { type: "default" } })],
    [1, Math.fround(0.01)],
  );
  assert.deepEqual(
    [...ropeInverseFrequencies({ ...base, rope: { type: "linear", factor: 2 } })],
    [0.5, Math.fround(Math.fround(0.01) / 2)],
  );
});

test("unsupported architectures and settings are refused by name, with the supported list", () => {
  assert.throws(
    () => parseHfConfig({ ...qwen3(), architectures: ["MistralForCausalLM"] }),
    /"MistralForCausalLM" is not supported; supported: Qwen3ForCausalLM, LlamaForCausalLM, Qwen2ForCausalLM/,
  );
  assert.throws(
    () => parseHfConfig({ ...qwen3(), rope_parameters: { rope_type: "yarn", factor: 4, rope_theta: 1e6 } }),
    /rope type "yarn" is not supported; supported: default, linear, llama3/,
  );
  assert.throws(
    () => parseHfConfig({ ...qwen3(), use_sliding_window: true, sliding_window: 4096 }),
    /sliding-window attention/,
  );
  assert.throws(
    () => parseHfConfig({ ...qwen3(), layer_types: ["full_attention", "sliding_attention"] }),
    /sliding-window attention/,
  );
  assert.throws(
    () => parseHfConfig({ ...qwen3(), hidden_act: "gelu" }),
    /hidden_act "gelu" is not supported/,
  );
  assert.throws(
    () => parseHfConfig({ ...qwen3(), num_key_value_heads: 3 }),
    /num_attention_heads \(4\) must be a multiple of num_key_value_heads \(3\)/,
  );
  assert.throws(() => parseHfConfig({ ...qwen3(), vocab_size: 0 }), /vocab_size must be a positive integer/);
});

test("generation_config: eos ids merged with config.json's, greedy unless do_sample", () => {
  const c = parseHfConfig(qwen3());
  const g = parseGenerationConfig(
    { eos_token_id: [7, 2], do_sample: true, temperature: 0.6, top_p: 0.95, top_k: 20 },
    c,
  );
  assert.deepEqual(g, { eosTokenIds: [7, 2], temperature: 0.6, topP: 0.95, topK: 20 });
  assert.deepEqual(parseGenerationConfig(null, c), { eosTokenIds: [2], temperature: 0, topP: 1, topK: null });
});

test("checkpoints: sharded and bf16 folders load, with every parameter the config implies", () => {
  for (const name of ["qwen3-untied-sharded", "llama3-bf16", "qwen2.5", "gpt2"]) {
    const checkpoint = loadHfCheckpoint(join(FIXTURES, name));
    const total = Object.values(checkpoint.tensors).reduce((n, t) => n + t.data.length, 0);
    assert.equal(total, hfParamCount(checkpoint.config), name);
  }
  const sharded = loadHfCheckpoint(join(FIXTURES, "qwen3-untied-sharded"));
  assert.ok(sharded.tensors.lmHead, "untied: lm_head read");
  assert.deepEqual(sharded.generation.eosTokenIds, [2, 3]);
  assert.ok(loadHfCheckpoint(join(FIXTURES, "qwen2.5")).tensors["layers.0.qBias"], "Qwen2: q bias read");
  assert.throws(() => loadHfCheckpoint(FIXTURES), /no config.json/);
});

const gpt2 = () => JSON.parse(readFileSync(join(FIXTURES, "gpt2", "config.json"), "utf8"));

test("a GPT-2 config reads into the engine's shape: LayerNorm, learned positions, gelu_new, 4·n_embd MLP", () => {
  const c = parseHfConfig(gpt2());
  assert.deepEqual(
    [c.block, c.activation, c.heads, c.kvHeads, c.headDim, c.intermediateSize, c.maxPositions, c.normEps],
    ["gpt2", "gelu_new", 4, 4, 8, 128, 128, 1e-5],
  );
  assert.deepEqual(
    [c.tieEmbeddings, c.scaleAttention, c.qkvBias, c.outputBias, c.mlpBias],
    [true, true, true, true, true],
  );
  assert.equal(parseHfConfig({ ...gpt2(), n_inner: 48, scale_attn_weights: false }).intermediateSize, 48);
  assert.equal(parseHfConfig({ ...gpt2(), scale_attn_weights: false }).scaleAttention, false);
  assert.equal(parseHfConfig({ ...gpt2(), activation_function: "gelu_pytorch_tanh" }).activation, "gelu_new");
});

test("GPT-2 settings the engine does not compute are refused by name", () => {
  for (const field of ["scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "add_cross_attention"])
    assert.throws(
      () => parseHfConfig({ ...gpt2(), [field]: true }),
      new RegExp(`${field} .* is not supported`),
    );
  assert.throws(
    () => parseHfConfig({ ...gpt2(), activation_function: "relu" }),
    /activation_function "relu" is not supported; supported: gelu_new, gelu_pytorch_tanh/,
  );
  assert.throws(
    () => parseHfConfig({ ...gpt2(), n_head: 5 }),
    /n_embd \(32\) must be a multiple of n_head \(5\)/,
  );
});

test("GPT-2's Conv1D [in, out] tensors are transposed and c_attn split into q, k, v (worked example)", () => {
  // D = 2: c_attn [2, 6] holds, per input row, q (2 outputs), k (2), v (2).
  const c = parseHfConfig({ ...gpt2(), n_embd: 2, n_head: 1, n_layer: 1, vocab_size: 1, n_positions: 1 });
  const t = (shape: number[], values: number[]) => ({
    dtype: "float32" as const,
    shape,
    data: Float32Array.from(values),
  });
  const zeros = (shape: number[]) => t(shape, new Array(shape.reduce((a, b) => a * b, 1)).fill(0));
  const h = "h.0"; // a Hub-style name without `transformer.` is read too
  const params = selectHfParams(
    c,
    {
      "wte.weight": zeros([1, 2]),
      "wpe.weight": zeros([1, 2]),
      [`${h}.ln_1.weight`]: zeros([2]),
      [`${h}.ln_1.bias`]: zeros([2]),
      [`${h}.attn.c_attn.weight`]: t([2, 6], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]),
      [`${h}.attn.c_attn.bias`]: t([6], [1, 2, 3, 4, 5, 6]),
      [`${h}.attn.c_proj.weight`]: t([2, 2], [1, 2, 3, 4]),
      [`${h}.attn.c_proj.bias`]: zeros([2]),
      [`${h}.ln_2.weight`]: zeros([2]),
      [`${h}.ln_2.bias`]: zeros([2]),
      [`${h}.mlp.c_fc.weight`]: zeros([2, 8]),
      [`${h}.mlp.c_fc.bias`]: zeros([8]),
      [`${h}.mlp.c_proj.weight`]: zeros([8, 2]),
      [`${h}.mlp.c_proj.bias`]: zeros([2]),
      "ln_f.weight": zeros([2]),
      "ln_f.bias": zeros([2]),
    },
    "example",
  );
  // q = x·W_q with W_q [in, out] = [[1, 2], [7, 8]]: as [out, in], [[1, 7], [2, 8]].
  assert.deepEqual([...params["layers.0.q"].data], [1, 7, 2, 8]);
  assert.deepEqual([...params["layers.0.k"].data], [3, 9, 4, 10]);
  assert.deepEqual([...params["layers.0.v"].data], [5, 11, 6, 12]);
  assert.deepEqual([...params["layers.0.vBias"].data], [5, 6]);
  assert.deepEqual([...params["layers.0.o"].data], [1, 3, 2, 4]);
  assert.deepEqual(params["layers.0.up"].shape, [8, 2]);
});
