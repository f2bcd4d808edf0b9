/**
 * Token losses for LoRA training on a Hugging Face checkpoint, in the shape `createTrainer` takes
 * (engine/train.ts): the parameters are the adapter alone (its gradient is the only one taken), and
 * the batch carries the frozen base weights beside the token batch, so a jitted step reads them as
 * inputs rather than baking a model into the program. The per-token losses are the lab's own
 * (embedded/losses.ts's `crossEntropy`, rl/loss.ts's `ppoLoss`), weighed the same way.
 */
import type { JaxArray } from "../../engine/jax.ts";
import type { LossFn, LossOutput } from "../../engine/train.ts";
import {
  type PerTokenLoss,
  type TokenBatch,
  type TokenLossOptions,
  weighTokenLoss,
} from "../embedded/losses.ts";
import { logitsTokenStats, type TokenStats } from "../embedded/model.ts";
import type { HfModelConfig } from "./config.ts";
import { type LoraConfig, type LoraParams, loraAdapters } from "./lora.ts";
import { type HfForwardOptions, type HfParams, hfLogits } from "./model.ts";

/** A token batch plus the frozen base weights (and a dropout key in training). */
export type HfLoraBatch = TokenBatch & { base: HfParams; dropoutKey?: JaxArray };

/**
 * log p(ids[t] | ids[<t]) (and entropies) aligned with ids [B,T], 0 at t = 0, from the Hugging Face
 * forward (with `adapters` when given). Differentiable unless `gather`. Consumes params and ids.
 */
export function hfTokenStats(
  params: HfParams,
  ids: JaxArray,
  config: HfModelConfig,
  options: HfForwardOptions & { temperature?: number; entropy?: boolean } = {},
): TokenStats {
  const logits = hfLogits(params, ids.ref, config, options);
  return { ...logitsTokenStats(logits, ids, options), values: null };
}

/** A `LossFn` over (LoraParams, HfLoraBatch): Σ weights · perToken of the adapted model's stats. */
export function hfLoraTokenLoss(
  model: HfModelConfig,
  lora: LoraConfig,
  perToken: PerTokenLoss,
  options: Omit<TokenLossOptions, "values" | "valueGradient"> = {},
): LossFn<LoraParams, HfLoraBatch> {
  return (params, batch): LossOutput => {
    const adapters = loraAdapters(params, lora, { dropoutKey: batch.dropoutKey });
    const stats = hfTokenStats(batch.base, batch.ids, model, { ...options, adapters });
    return weighTokenLoss(perToken, stats, batch.extra, batch.weights);
  };
}
