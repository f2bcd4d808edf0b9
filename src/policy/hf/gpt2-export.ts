/**
 * The lab's GPT as a Hugging Face GPT-2 checkpoint. The architectures match exactly, which is why
 * GPT-2 is the target: pre-LayerNorm blocks with eps 1e-5 and biases, learned position
 * embeddings, GELU in its tanh form (transformers' `gelu_new`), attention scaled by 1/√K, a final
 * LayerNorm, and the output head tied to the token embedding. GPT-2's `Conv1D` stores weights as
 * [in, out], the lab's layout, and `c_attn` holds query, key and value side by side as `wqkv` does,
 * so every tensor is copied unchanged, only renamed (f64 lab weights are written as f32).
 *
 * The optional value head (a PPO critic) is not part of a causal LM and is left out.
 */
import type { HostTensor } from "../../engine/tree.ts";
import type { GptConfig } from "../embedded/config.ts";
import { gptParamShapes } from "../embedded/config.ts";
import { textStopTokens } from "../embedded/embedded-policy.ts";
import type { WordTokenizer } from "../embedded/tokenizer.ts";

/** The lab tensor name of each GPT-2 tensor name (lm_head is tied, so not written). */
export function gpt2TensorNames(config: GptConfig): Record<string, string> {
  const names: Record<string, string> = {
    "transformer.wte.weight": "wte",
    "transformer.wpe.weight": "wpe",
    "transformer.ln_f.weight": "lnf.scale",
    "transformer.ln_f.bias": "lnf.bias",
  };
  for (let i = 0; i < config.nLayers; i++) {
    const h = `transformer.h.${i}`;
    const b = `blocks.${i}`;
    Object.assign(names, {
      [`${h}.ln_1.weight`]: `${b}.ln1.scale`,
      [`${h}.ln_1.bias`]: `${b}.ln1.bias`,
      [`${h}.attn.c_attn.weight`]: `${b}.wqkv`,
      [`${h}.attn.c_attn.bias`]: `${b}.bqkv`,
      [`${h}.attn.c_proj.weight`]: `${b}.wo`,
      [`${h}.attn.c_proj.bias`]: `${b}.bo`,
      [`${h}.ln_2.weight`]: `${b}.ln2.scale`,
      [`${h}.ln_2.bias`]: `${b}.ln2.bias`,
      [`${h}.mlp.c_fc.weight`]: `${b}.w1`,
      [`${h}.mlp.c_fc.bias`]: `${b}.b1`,
      [`${h}.mlp.c_proj.weight`]: `${b}.w2`,
      [`${h}.mlp.c_proj.bias`]: `${b}.b2`,
    });
  }
  return names;
}

/** GPT-2 tensors (f32) from the lab's host tensors; throws naming a missing or misshapen tensor. */
export function gpt2Tensors(lab: Record<string, HostTensor>, config: GptConfig): Record<string, HostTensor> {
  const shapes = gptParamShapes(config);
  const out: Record<string, HostTensor> = {};
  for (const [hfName, labName] of Object.entries(gpt2TensorNames(config))) {
    const tensor = lab[labName];
    if (tensor === undefined) throw new Error(`export hf: the checkpoint has no tensor "${labName}"`);
    if (tensor.shape.join(",") !== shapes[labName]!.join(",")) {
      throw new Error(`export hf: "${labName}" has shape [${tensor.shape}], expected [${shapes[labName]}]`);
    }
    const data =
      tensor.data instanceof Float32Array ? tensor.data : Float32Array.from(tensor.data as ArrayLike<number>);
    out[hfName] = { dtype: "float32", shape: [...tensor.shape], data };
  }
  return out;
}

/** config.json of the GPT-2 checkpoint. Dropout 0: the lab trains without it. */
export function gpt2Config(config: GptConfig, tokenizer: WordTokenizer): Record<string, unknown> {
  return {
    architectures: ["GPT2LMHeadModel"],
    model_type: "gpt2",
    vocab_size: config.vocabSize,
    n_positions: config.maxLen,
    n_embd: config.dModel,
    n_layer: config.nLayers,
    n_head: config.nHeads,
    n_inner: config.dFF,
    activation_function: "gelu_new",
    layer_norm_epsilon: 1e-5,
    resid_pdrop: 0,
    embd_pdrop: 0,
    attn_pdrop: 0,
    scale_attn_weights: true,
    scale_attn_by_inverse_layer_idx: false,
    reorder_and_upcast_attn: false,
    tie_word_embeddings: true,
    bos_token_id: tokenizer.bosId,
    eos_token_id: tokenizer.eosId,
    pad_token_id: tokenizer.padId,
    dtype: "float32",
  };
}

/**
 * generation_config.json. The lab's turns end at its closing action tags (`</search>`, `</calc>`,
 * `</answer>`, …: embedded-policy.ts's `textStopTokens`), so they are end-of-sequence ids beside
 * `<eos>`: `generate` and `--policy hf:` stop a turn where the lab's policy does.
 */
export function gpt2GenerationConfig(tokenizer: WordTokenizer): Record<string, unknown> {
  const stops = textStopTokens(tokenizer.tokens).map((token) => tokenizer.requireId(token));
  return {
    bos_token_id: tokenizer.bosId,
    eos_token_id: [tokenizer.eosId, ...stops],
    pad_token_id: tokenizer.padId,
  };
}
