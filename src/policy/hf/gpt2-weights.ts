/**
 * GPT2LMHeadModel's tensors read into the engine's parameter tree (model.ts), in the layout the
 * Llama-style architectures use ([out, in]: y = x·Wᵀ). GPT-2's `Conv1D` stores [in, out], so each
 * projection is transposed; `c_attn` computes queries, keys and values side by side ([D, 3D], q
 * first), so it is split into q, k and v (and its bias likewise). The position table `wpe` and the
 * LayerNorm biases have parameters of their own.
 */
import type { HfModelConfig } from "./config.ts";
import type { HfParamEntry } from "./weights.ts";

export function gpt2ParamNames(c: HfModelConfig): HfParamEntry[] {
  const D = c.hiddenSize;
  const F = c.intermediateSize;
  const out: HfParamEntry[] = [
    ["embed", "transformer.wte.weight", [c.vocabSize, D]],
    ["positions", "transformer.wpe.weight", [c.maxPositions, D]],
  ];
  for (let i = 0; i < c.layers; i++) {
    const p = `layers.${i}`;
    const n = `transformer.h.${i}`;
    const qkv = `${n}.attn.c_attn`;
    out.push(
      [`${p}.inputNorm`, `${n}.ln_1.weight`, [D]],
      [`${p}.inputNormBias`, `${n}.ln_1.bias`, [D]],
      ...(["q", "k", "v"] as const).flatMap((name, part): HfParamEntry[] => [
        [
          `${p}.${name}`,
          `${qkv}.weight`,
          [D, D],
          { fileShape: [D, 3 * D], transpose: true, part: [part, 3] },
        ],
        [`${p}.${name}Bias`, `${qkv}.bias`, [D], { fileShape: [3 * D], part: [part, 3] }],
      ]),
      [`${p}.o`, `${n}.attn.c_proj.weight`, [D, D], { fileShape: [D, D], transpose: true }],
      [`${p}.oBias`, `${n}.attn.c_proj.bias`, [D]],
      [`${p}.postNorm`, `${n}.ln_2.weight`, [D]],
      [`${p}.postNormBias`, `${n}.ln_2.bias`, [D]],
      [`${p}.up`, `${n}.mlp.c_fc.weight`, [F, D], { fileShape: [D, F], transpose: true }],
      [`${p}.upBias`, `${n}.mlp.c_fc.bias`, [F]],
      [`${p}.down`, `${n}.mlp.c_proj.weight`, [D, F], { fileShape: [F, D], transpose: true }],
      [`${p}.downBias`, `${n}.mlp.c_proj.bias`, [D]],
    );
  }
  out.push(["norm", "transformer.ln_f.weight", [D]], ["normBias", "transformer.ln_f.bias", [D]]);
  if (!c.tieEmbeddings) out.push(["lmHead", "lm_head.weight", [c.vocabSize, D]]);
  return out;
}
