/**
 * Token-level losses for the embedded GPT, in the shape `createTrainer` takes. A loss is a
 * per-token function of the model's token log-probs (and optionally entropies) plus any extra
 * per-token arrays the batch carries (old log-probs, advantages…); the engine weights it with
 * `batch.weights` and sums:
 *
 *   loss = Σ_{b,t} weights[b,t] · perToken[b,t]
 *
 * `weights` carries both the mask (0 on prompt/observation tokens) and the normalisation (e.g.
 * 1 / total policy tokens of the WHOLE batch for a token mean), computed on the host, so
 * micro-batching is exact and the normalisation convention is the caller's explicit choice.
 * Metrics are weighted and summed the same way.
 */
import type { JaxArray } from "../../engine/jax.ts";
import type { LossFn, LossOutput } from "../../engine/train.ts";
import type { GptConfig } from "./config.ts";
import { type GptParams, type TokenStats, tokenStats } from "./model.ts";

/** A micro-batch of sequences: ids [B,T] int32, weights [B,T] float, extra per-token arrays [B,T]. */
export type TokenBatch = {
  ids: JaxArray;
  weights: JaxArray;
  extra: Record<string, JaxArray>;
};

/** Per-token loss [B,T] and metrics [B,T]. Consumes `stats` and every array in `extra`. */
export type PerTokenLoss = (
  stats: TokenStats,
  extra: Record<string, JaxArray>,
) => { loss: JaxArray; metrics?: Record<string, JaxArray> };

export interface TokenLossOptions {
  /** Divide logits by this before the log-softmax (use the sampling temperature for RL). */
  temperature?: number;
  /** Compute per-token entropies (`stats.entropy`); costs one more [B,T,V] pass. */
  entropy?: boolean;
  /** Compute the value head's per-token values (`stats.values`; needs `params.value`). */
  values?: boolean;
  /** Let the value loss's gradient reach the trunk (default false: it stops at the value head). */
  valueGradient?: boolean;
}

/** Turns a per-token loss into a `LossFn` over (GptParams, TokenBatch) for `createTrainer`. */
export function tokenLoss(
  config: GptConfig,
  perToken: PerTokenLoss,
  options: TokenLossOptions = {},
): LossFn<GptParams, TokenBatch> {
  return (params, batch): LossOutput =>
    weighTokenLoss(perToken, tokenStats(params, batch.ids, config, options), batch.extra, batch.weights);
}

/**
 * Σ weights · perToken(stats, extra) and the metrics weighed the same way: the step shared by every
 * model's token loss (this GPT's, the Hugging Face forward's). Consumes stats, extra and weights.
 */
export function weighTokenLoss(
  perToken: PerTokenLoss,
  stats: TokenStats,
  extra: Record<string, JaxArray>,
  weights: JaxArray,
): LossOutput {
  const out = perToken(stats, extra);
  const metrics: Record<string, JaxArray> = {};
  for (const [name, value] of Object.entries(out.metrics ?? {})) metrics[name] = value.mul(weights.ref).sum();
  return { loss: out.loss.mul(weights).sum(), metrics };
}

/**
 * Masked cross-entropy (negative log-likelihood of each token; the mask is in the weights).
 * With token-mean weights the loss is the mean NLL of the masked tokens, in nats.
 */
export const crossEntropy: PerTokenLoss = (stats, extra) => {
  for (const array of Object.values(extra)) array.dispose();
  stats.entropy?.dispose();
  stats.values?.dispose();
  return { loss: stats.logprobs.neg() };
};
