/**
 * Token losses for LoRA training on a Hugging Face checkpoint, in the shape `createTrainer` takes
 * (engine/train.ts): the parameters are the adapter alone (its gradient is the only one taken), and
 * the batch carries the frozen base weights beside the token batch, so a jitted step reads them as
 * inputs rather than baking a model into the program. The per-token losses are the lab's own
 * (embedded/losses.ts's `crossEntropy`, rl/loss.ts's `ppoLoss`), weighed the same way.
 */
import { type JaxArray, nn, np } from "../../engine/jax.ts";
import type { LossFn, LossOutput } from "../../engine/train.ts";
import {
  type PerTokenLoss,
  type TokenBatch,
  type TokenLossOptions,
  weighTokenLoss,
} from "../embedded/losses.ts";
import { alignToIds, type TokenStats } from "../embedded/model.ts";
import type { HfModelConfig } from "./config.ts";
import { type LoraConfig, type LoraParams, loraAdapters } from "./lora.ts";
import { type HfForwardOptions, type HfParams, hfHeadLogits, hfHidden, splitHead } from "./model.ts";

/** A token batch plus the frozen base weights (and a dropout key in training). */
export type HfLoraBatch = TokenBatch & { base: HfParams; dropoutKey?: JaxArray };

/**
 * log p(ids[t] | ids[<t]) (and entropies) aligned with ids [B,T], 0 at t = 0, for a model whose
 * embedding and head are frozen (an adapter's training: LoRA never targets them), without a
 * vocabulary-wide one-hot. The differentiable forward writes its
 * gathers as one-hot products (jax-js cannot compile the gradient of `take`), and a one-hot of
 * [B,T,V] is what a 49,152-word model's update spent a fifth of its time building and multiplying.
 * With the tables frozen no gradient reaches them: the embedding is a `take`, and the token's
 * logit is its hidden state's dot product with the head row of the next id, gathered; the logits
 * give only the log-partition (and the entropy). The same values up to rounding. Consumes params
 * and ids.
 */
export function hfFrozenHeadTokenStats(
  params: HfParams,
  ids: JaxArray,
  config: HfModelConfig,
  options: HfForwardOptions & { temperature?: number; entropy?: boolean } = {},
): TokenStats {
  const T = ids.shape[1];
  const temperature = options.temperature ?? 1;
  const [body, head] = splitHead(params);
  const hidden = hfHidden(body, ids.ref, config, { ...options, gather: true }); // [B,T,D]
  const next = np.pad(ids.slice([], [1, T]), [
    [0, 0],
    [0, 1],
  ]); // [B,T]: token t+1, 0 after the end
  let picked = hidden.ref.mul(np.take(head.ref, next, 0)).sum(-1); // [B,T]
  let logits = hfHeadLogits(hidden, head); // [B,T,V]
  if (temperature !== 1) {
    logits = logits.div(temperature);
    picked = picked.div(temperature);
  }
  const logZ = nn.logsumexp(logits.ref, -1); // [B,T]
  let entropy: JaxArray | null = null;
  if (options.entropy) {
    const logp = logits.sub(np.expandDims(logZ.ref, -1)); // [B,T,V]
    entropy = alignToIds(np.exp(logp.ref).mul(logp).sum(-1).neg());
  } else logits.dispose();
  return { logprobs: alignToIds(picked.sub(logZ)), entropy, values: null };
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
    const stats = hfFrozenHeadTokenStats(batch.base, batch.ids, model, { ...options, adapters });
    return weighTokenLoss(perToken, stats, batch.extra, batch.weights);
  };
}
