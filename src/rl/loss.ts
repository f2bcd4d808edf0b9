/**
 * The RL policy loss: PPO-clip with an asymmetric range (clip-higher), an optional KL penalty to a
 * frozen reference and an optional entropy bonus, per token, in the shape `tokenLoss` takes
 * (src/policy/embedded/losses.ts). Per policy token t (a token with loss mask 1):
 *
 *   r_t   = exp(logp_t − old_t)                       old_t: the log-prob recorded at sampling time
 *   pg_t  = −min(r_t·A_t, clip(r_t, 1 − ε_low, 1 + ε_high)·A_t)     (Schulman et al. 2017; DAPO's
 *                                                      clip-higher ε_high > ε_low, arXiv:2503.14476)
 *   kl_t  = k1: logp_t − ref_t          k3: exp(ref_t − logp_t) − (ref_t − logp_t) − 1   (≥ 0)
 *   vf_t  = ½ · max((V_t − R_t)², (clip(V_t, Vold_t − c, Vold_t + c) − R_t)²)     (PPO's clipped
 *           value loss, verl's `compute_value_loss`; only with a critic: c_v > 0)
 *   loss_t = (pg_t + β·kl_t − η·H_t + c_v·vf_t) · s_t
 *
 * and the batch loss is Σ_t mask_t · loss_t. The per-token scale s_t carries the aggregation mode
 * (`aggregationScales`), so micro-batching never changes the loss or the gradient. logp and H are
 * at the sampling temperature (`tokenLoss(config, ppoLoss(…), { temperature, entropy: true })`):
 * a ratio at another temperature than the sampler's is not an importance ratio.
 *
 * Guards as in verl: log r and ref − logp are clipped to [−20, 20] before exp, and k3 to [−10, 10],
 * so an extreme token cannot produce inf (inf · weight 0 would be NaN and poison the batch).
 *
 * Extras (per token, aligned with the ids, 0 off the mask): `oldLogprobs`, `advantages`,
 * `lossScale` (s_t), `metricScale` (1 / policy tokens of the update, so metrics are token means),
 * `refLogprobs` when β > 0, and `oldValues` (the critic's values when the batch was scored) and
 * `returns` (GAE's targets) when c_v > 0, which also needs `stats.values` (tokenLoss option
 * `values: true`). Metrics (token means over the policy tokens):
 *   `policy/clip_fraction`  tokens whose clipped term is the smaller (their gradient is cut)
 *   `policy/kl_old`         k3 estimate of KL(old ‖ new) = (r − 1) − log r
 *   `policy/entropy`        entropy of the predicting distribution
 *   `policy/ratio`          mean r
 *   `policy/kl_ref`         the chosen estimator's KL to the reference (when β > 0)
 *   `loss/policy`           mean pg_t (unscaled: comparable across aggregation modes)
 *   `value/loss`            mean vf_t (unscaled), `value/clip_fraction` tokens whose clipped value
 *                           term is the larger, `value/mean` mean V_t (when c_v > 0)
 */
import { type JaxArray, np } from "../engine/jax.ts";
import type { PerTokenLoss } from "../policy/embedded/losses.ts";

export const KL_ESTIMATORS = ["k1", "k3"] as const;
export type KlEstimator = (typeof KL_ESTIMATORS)[number];

export interface PpoLossOptions {
  /** ε_low: the ratio is clipped below at 1 − ε_low (default 0.2). */
  clipLow?: number;
  /** ε_high: clipped above at 1 + ε_high (default 0.28, DAPO's clip-higher). */
  clipHigh?: number;
  /** β: weight of the KL penalty to the reference (default 0: no reference needed). */
  klCoef?: number;
  klEstimator?: KlEstimator;
  /** η: weight of the entropy bonus (default 0). */
  entropyCoef?: number;
  /** c_v: weight of the value loss (default 0: no critic). */
  valueCoef?: number;
  /** c: the value may move at most this far from its old value before its loss is clipped (default 0.5, verl's). */
  valueClip?: number;
}

export const PPO_DEFAULTS = {
  clipLow: 0.2,
  clipHigh: 0.28,
  klCoef: 0,
  klEstimator: "k3",
  entropyCoef: 0,
  valueCoef: 0,
  valueClip: 0.5,
} as const;

/** Names of the extra per-token arrays `ppoLoss` reads. */
export const PPO_EXTRAS = {
  oldLogprobs: "oldLogprobs",
  advantages: "advantages",
  lossScale: "lossScale",
  metricScale: "metricScale",
  refLogprobs: "refLogprobs",
  oldValues: "oldValues",
  returns: "returns",
} as const;

const LOG_RATIO_LIMIT = 20;
const K3_LIMIT = 10;

/** The KL estimate per token from log-probs under the policy and the reference (jax arrays, consumed). */
export function klPenalty(logprobs: JaxArray, refLogprobs: JaxArray, estimator: KlEstimator): JaxArray {
  if (estimator === "k1") return logprobs.sub(refLogprobs);
  const delta = np.clip(refLogprobs.sub(logprobs), -LOG_RATIO_LIMIT, LOG_RATIO_LIMIT);
  return np.clip(np.exp(delta.ref).sub(delta).sub(1), -K3_LIMIT, K3_LIMIT);
}

export function ppoLoss(options: PpoLossOptions = {}): PerTokenLoss {
  const clipLow = options.clipLow ?? PPO_DEFAULTS.clipLow;
  const clipHigh = options.clipHigh ?? PPO_DEFAULTS.clipHigh;
  const klCoef = options.klCoef ?? PPO_DEFAULTS.klCoef;
  const klEstimator = options.klEstimator ?? PPO_DEFAULTS.klEstimator;
  const entropyCoef = options.entropyCoef ?? PPO_DEFAULTS.entropyCoef;
  const valueCoef = options.valueCoef ?? PPO_DEFAULTS.valueCoef;
  const valueClip = options.valueClip ?? PPO_DEFAULTS.valueClip;
  if (!(clipLow > 0 && clipLow < 1)) throw new Error(`ppoLoss: clipLow must be in (0, 1), got ${clipLow}`);
  if (!(clipHigh > 0)) throw new Error(`ppoLoss: clipHigh must be > 0, got ${clipHigh}`);
  if (!(klCoef >= 0) || !(entropyCoef >= 0)) throw new Error("ppoLoss: klCoef and entropyCoef must be >= 0");
  if (!(valueCoef >= 0)) throw new Error(`ppoLoss: valueCoef must be >= 0, got ${valueCoef}`);
  if (!(valueClip > 0)) throw new Error(`ppoLoss: valueClip must be > 0, got ${valueClip}`);
  return (stats, extra) => {
    const { oldLogprobs, advantages, lossScale, metricScale, refLogprobs, oldValues, returns, ...rest } =
      extra;
    if (!oldLogprobs || !advantages || !lossScale || !metricScale) {
      throw new Error("ppoLoss: the batch needs extra.oldLogprobs, advantages, lossScale and metricScale");
    }
    if (klCoef > 0 && !refLogprobs) throw new Error("ppoLoss: klCoef > 0 needs extra.refLogprobs");
    if (!stats.entropy) throw new Error("ppoLoss: needs token entropies (tokenLoss option entropy: true)");
    if (valueCoef > 0 && (!stats.values || !oldValues || !returns)) {
      throw new Error(
        "ppoLoss: valueCoef > 0 needs stats.values (tokenLoss option values: true) and extra.oldValues, returns",
      );
    }
    for (const array of Object.values(rest)) array.dispose();
    const logprobs = stats.logprobs;
    const entropy = stats.entropy;

    // Policy-gradient term.
    const logRatio = np.clip(logprobs.ref.sub(oldLogprobs), -LOG_RATIO_LIMIT, LOG_RATIO_LIMIT);
    const ratio = np.exp(logRatio.ref);
    const unclipped = ratio.ref.mul(advantages.ref);
    const clipped = np.clip(ratio.ref, 1 - clipLow, 1 + clipHigh).mul(advantages);
    const pg = np.minimum(unclipped.ref, clipped.ref).neg();
    const clipFraction = clipped.less(unclipped).astype(pg.dtype);
    const klOld = ratio.ref.sub(1).sub(logRatio);

    // Total per-token loss.
    let total = pg.ref;
    const metrics: Record<string, JaxArray> = {};
    if (klCoef > 0 && refLogprobs) {
      const kl = klPenalty(logprobs.ref, refLogprobs, klEstimator);
      total = total.add(kl.ref.mul(klCoef));
      metrics["policy/kl_ref"] = kl.mul(metricScale.ref);
    } else {
      refLogprobs?.dispose();
    }
    if (entropyCoef > 0) total = total.sub(entropy.ref.mul(entropyCoef));
    logprobs.dispose();
    if (valueCoef > 0 && stats.values && oldValues && returns) {
      const values = stats.values;
      const clippedValues = np.clip(values.ref.sub(oldValues.ref), -valueClip, valueClip).add(oldValues);
      const plain = np.square(values.ref.sub(returns.ref));
      const limited = np.square(clippedValues.sub(returns));
      const valueLoss = np.maximum(plain.ref, limited.ref).mul(0.5);
      total = total.add(valueLoss.ref.mul(valueCoef));
      metrics["value/loss"] = valueLoss.mul(metricScale.ref);
      metrics["value/clip_fraction"] = limited.greater(plain).astype(pg.dtype).mul(metricScale.ref);
      metrics["value/mean"] = values.mul(metricScale.ref);
    } else {
      for (const array of [stats.values, oldValues, returns]) array?.dispose();
    }

    metrics["policy/clip_fraction"] = clipFraction.mul(metricScale.ref);
    metrics["policy/kl_old"] = klOld.mul(metricScale.ref);
    metrics["policy/entropy"] = entropy.mul(metricScale.ref);
    metrics["policy/ratio"] = ratio.mul(metricScale.ref);
    metrics["loss/policy"] = pg.mul(metricScale);
    return { loss: total.mul(lossScale), metrics };
  };
}
