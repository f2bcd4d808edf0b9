/**
 * Token losses for training a Hugging Face checkpoint, in the shape `createTrainer` takes
 * (engine/train.ts), for both ways of training one:
 *
 * - LoRA (`hfLoraTokenLoss`): the parameters are the adapter alone (its gradient is the only one
 *   taken), and the batch carries the frozen base weights beside the token batch, so a jitted step
 *   reads them as inputs rather than baking a model into the program; the frozen embedding and
 *   head let the stats gather (`hfFrozenHeadTokenStats`).
 * - Full fine-tuning (`hfFullTokenLoss`): the parameters are the whole checkpoint (`HfParams`), so
 *   the embedding and the head are differentiated too, through one-hot products (jax-js cannot
 *   compile the gradient of a gather).
 *
 * Both go through `hfTokenLossOf` (one function, the model and its adapters picked per batch),
 * and the per-token losses are the lab's own (embedded/losses.ts's `crossEntropy`, rl/loss.ts's
 * `ppoLoss`), weighed the same way.
 *
 * A critic (`gae`): either trained tree may carry a value head under `value` (`HfValueHead`, the
 * lab's `ValueHeadParams`: V = h·w + b on the final normed hidden state, TRL's `v_head.summary`),
 * and with the loss option `values` the stats carry its values (the lab's `valueHeadValues`:
 * aligned with the ids, the gradient stopped at the head unless `valueGradient`).
 */
import { type JaxArray, nn, np } from "../../engine/jax.ts";
import type { LossFn, LossOutput } from "../../engine/train.ts";
import { disposeTree } from "../../engine/tree.ts";
import {
  type PerTokenLoss,
  type TokenBatch,
  type TokenLossOptions,
  weighTokenLoss,
} from "../embedded/losses.ts";
import {
  alignToIds,
  logitsTokenStats,
  type TokenStats,
  type ValueHeadParams,
  valueHeadValues,
} from "../embedded/model.ts";
import type { HfModelConfig } from "./config.ts";
import { type LoraConfig, type LoraParams, loraAdapters } from "./lora.ts";
import { type HfForwardOptions, type HfParams, hfHeadLogits, hfHidden, splitHead } from "./model.ts";

/** A token batch plus the frozen base weights (and a dropout key in training). */
export type HfLoraBatch = TokenBatch & { base: HfParams; dropoutKey?: JaxArray };

/** A trained tree (an adapter, or the checkpoint's weights) with the critic's value head, when the run has one. */
export type WithValueHead<P> = P & { value?: ValueHeadParams };

/** The value head's options of the stats: the head (consumed) and whether its loss reaches the trunk. */
type ValueOptions = { value?: ValueHeadParams; valueGradient?: boolean };

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
  options: HfForwardOptions & { temperature?: number; entropy?: boolean } & ValueOptions = {},
): TokenStats {
  const T = ids.shape[1];
  const temperature = options.temperature ?? 1;
  const [body, head] = splitHead(params);
  const hidden = hfHidden(body, ids.ref, config, { ...options, gather: true }); // [B,T,D]
  const values = options.value ? valueHeadValues(hidden.ref, options.value, options.valueGradient) : null;
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
  return { logprobs: alignToIds(picked.sub(logZ)), entropy, values };
}

/**
 * Options of the HF token stats: the loss's temperature and entropy, the adapters' terms, and the
 * value head whose values the stats carry (with `valueGradient`).
 */
export type HfStatsOptions = Omit<TokenLossOptions, "values"> &
  Pick<HfForwardOptions, "adapters"> &
  ValueOptions;

/**
 * Token stats of the Hugging Face forward, aligned with ids: `trainHead` false (an adapter's
 * training) takes the frozen-head path (gathers, no gradient to the embedding or the head); true
 * (full fine-tuning) the one-hot forward and the lab's `logitsTokenStats`, differentiable in every
 * weight. With `value` the stats carry its values of the same hidden states. Consumes params, ids
 * and the value head.
 */
export function hfTokenStats(
  params: HfParams,
  ids: JaxArray,
  config: HfModelConfig,
  trainHead: boolean,
  options: HfStatsOptions = {},
): TokenStats {
  if (!trainHead) return hfFrozenHeadTokenStats(params, ids, config, options);
  const [body, head] = splitHead(params);
  const hidden = hfHidden(body, ids.ref, config, { adapters: options.adapters }); // [B,T,D]
  const values = options.value ? valueHeadValues(hidden.ref, options.value, options.valueGradient) : null;
  return { ...logitsTokenStats(hfHeadLogits(hidden, head), ids, options), values };
}

/**
 * The one token loss of both trainings: `model(params, batch)` says which weights the forward
 * reads (and adds), whether its embedding and head are trained, and the value head the params
 * carry; Σ weights · perToken of the stats follows. `options.values` asks for the head's values
 * (`stats.values`, for ppoLoss's value loss) and needs one; without it a head is left unused.
 */
export function hfTokenLossOf<P, B extends TokenBatch>(
  config: HfModelConfig,
  perToken: PerTokenLoss,
  options: TokenLossOptions,
  model: (
    params: P,
    batch: B,
  ) => {
    weights: HfParams;
    trainHead: boolean;
    adapters?: HfForwardOptions["adapters"];
    value?: ValueHeadParams;
  },
): LossFn<P & {}, B> {
  const { values: wantValues, ...statsOptions } = options;
  return (params, batch): LossOutput => {
    const { weights, trainHead, adapters, value } = model(params, batch);
    if (wantValues && !value) throw new Error("hf token loss: values need a value head (params.value)");
    if (!wantValues && value) disposeTree(value);
    const head = wantValues ? value : undefined;
    const stats = hfTokenStats(weights, batch.ids, config, trainHead, {
      ...statsOptions,
      adapters,
      value: head,
    });
    return weighTokenLoss(perToken, stats, batch.extra, batch.weights);
  };
}

/**
 * A `LossFn` over (LoraParams, HfLoraBatch), a value head beside the adapter when the run has a
 * critic: Σ weights · perToken of the adapted model's stats.
 */
export function hfLoraTokenLoss(
  model: HfModelConfig,
  lora: LoraConfig,
  perToken: PerTokenLoss,
  options: TokenLossOptions = {},
): LossFn<WithValueHead<LoraParams>, HfLoraBatch> {
  return hfTokenLossOf<WithValueHead<LoraParams>, HfLoraBatch>(model, perToken, options, (params, batch) => ({
    weights: batch.base,
    trainHead: false,
    adapters: loraAdapters({ layers: params.layers }, lora, { dropoutKey: batch.dropoutKey }),
    value: params.value,
  }));
}

/**
 * A `LossFn` over (HfParams, TokenBatch): full fine-tuning, every weight differentiated (and the
 * value head under `value` when the run has a critic).
 */
export function hfFullTokenLoss(
  model: HfModelConfig,
  perToken: PerTokenLoss,
  options: TokenLossOptions = {},
): LossFn<WithValueHead<HfParams>, TokenBatch> {
  return hfTokenLossOf<WithValueHead<HfParams>, TokenBatch>(model, perToken, options, (params) => {
    const { value, ...weights } = params;
    return { weights, trainHead: true, value };
  });
}
