/**
 * Loss aggregation: how per-token losses of an update's sequences are summed into one number. Each
 * mode is a per-token scale s (the loss is Σ_seq Σ_t mask·s·loss_t), computed on the host over the
 * whole update, so splitting the update into micro-batches never changes it. With N sequences of
 * L_i policy tokens, T = Σ L_i, and a constant L (`normLength`):
 *
 * - `token-mean` (DAPO; GRPO-TCR in arXiv:2510.11701; the default): s = 1/T. Every policy token
 *   weighs the same, so an episode's total weight grows with its length: a long wrong episode is
 *   pushed down harder in total, as it should be. Bias: none per token, but the scale depends on the
 *   batch (a batch of long episodes gives each token a smaller step).
 * - `seq-mean-token-mean` (the original GRPO): s = 1/(N·L_i). Every episode weighs the same, so a
 *   token of a short episode weighs more than one of a long episode. Bias (Dr. GRPO,
 *   arXiv:2503.20783): with A > 0 short episodes gain more per token; with A < 0 long episodes are
 *   penalised less per token, so wrong episodes drift longer. Turn-level credit makes it worse
 *   for agents: a long, tool-heavy failure barely moves.
 * - `seq-mean-token-sum-norm` (Dr. GRPO): s = 1/(N·L), L a constant (the policy-token budget by
 *   default). The token sum of each episode over a fixed constant: the unbiased gradient of the
 *   summed objective, no length normalisation at all; the step size then grows with the number of
 *   policy tokens, which L keeps around 1 per token at most.
 */

export const AGGREGATION_MODES = ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"] as const;
export type AggregationMode = (typeof AGGREGATION_MODES)[number];

function policyTokens(mask: ArrayLike<number>): number {
  let count = 0;
  for (let t = 0; t < mask.length; t++) if (mask[t]) count++;
  return count;
}

/** The scale s of every token of every sequence (0 off the mask). `normLength` is L (seq-mean-token-sum-norm). */
export function aggregationScales(
  masks: readonly ArrayLike<number>[],
  mode: AggregationMode,
  normLength: number,
): Float32Array[] {
  if (!(AGGREGATION_MODES as readonly string[]).includes(mode)) {
    throw new Error(`unknown aggregation "${mode}"; valid: ${AGGREGATION_MODES.join(", ")}`);
  }
  if (mode === "seq-mean-token-sum-norm" && !(normLength > 0)) {
    throw new Error(`aggregation seq-mean-token-sum-norm needs normLength > 0, got ${normLength}`);
  }
  const counts = masks.map(policyTokens);
  const total = counts.reduce((a, b) => a + b, 0);
  const sequences = masks.length;
  return masks.map((mask, i) => {
    const scale =
      mode === "token-mean"
        ? total > 0
          ? 1 / total
          : 0
        : mode === "seq-mean-token-mean"
          ? counts[i] > 0
            ? 1 / (sequences * counts[i])
            : 0
          : 1 / (sequences * normLength);
    const out = new Float32Array(mask.length);
    for (let t = 0; t < mask.length; t++) if (mask[t]) out[t] = scale;
    return out;
  });
}
