import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { hfParamCount, parseGenerationConfig, parseHfConfig } from "./config.ts";
import { ropeInverseFrequencies } from "./rope.ts";
import { FIXTURES } from "./testing-fixtures.ts";
import { loadHfCheckpoint } from "./weights.ts";

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
  for (const name of ["qwen3-untied-sharded", "llama3-bf16", "qwen2.5"]) {
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
