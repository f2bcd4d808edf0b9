/**
 * Packs token sequences into fixed-shape micro-batches on the host. Shapes are jit compile keys:
 * every micro-batch of one call has the same [B, T] (short ones padded with weight-0 rows) and T is
 * rounded up to a multiple of `lengthMultiple`, so a training run compiles only a few programs.
 * With `lengthBuckets`, sequences of similar lengths share micro-batches, each with its own T (see
 * `planLengthBuckets`): for batches of mixed lengths (RL episodes) most of the padding goes.
 */
import { np } from "../../engine/jax.ts";
import type { TokenBatch } from "./losses.ts";

export interface TokenSequence {
  ids: readonly number[];
  /** 1 where the token's log-prob counts (e.g. the policy's own tokens). Default: every token. */
  mask?: readonly number[];
  /** Extra per-token values (old log-probs, advantages…), aligned with `ids`; padded with 0. */
  extra?: Record<string, readonly number[]>;
}

export type WeightNormalization =
  /** weights = mask / (masked tokens in the whole batch): the mean over tokens. */
  | "token-mean"
  /** weights = mask / (masked tokens of the sequence · sequences): the mean over sequences of their token mean. */
  | "sequence-mean"
  /** weights = mask. */
  | "sum";

export interface TokenBatchOptions {
  /** Longest allowed sequence (the model's maxLen); longer sequences are an error. */
  maxLen: number;
  /** Rows per micro-batch. Default: as many as fit in `maxTokensPerMicroBatch`. */
  microBatchSize?: number;
  /** Cap on B·T per micro-batch (default 8192: wasm memory is 32-bit). */
  maxTokensPerMicroBatch?: number;
  /** T is rounded up to a multiple of this (default 16), capped at maxLen. */
  lengthMultiple?: number;
  normalization?: WeightNormalization;
  /**
   * Group sequences by length (`planLengthBuckets`) instead of giving every micro-batch the
   * longest one's T; `microBatchSize` is then ignored.
   */
  lengthBuckets?: boolean;
}

/** A micro-batch of a plan: its shape and the sequences (indices into the input) in its rows. */
export type BucketPlan = { T: number; rows: number; members: number[] };

/** What a micro-batch costs beyond its B·T token slots (a program call), in token slots. */
export const CALL_COST = 128;

/**
 * Micro-batches of sequences grouped by length, with the fewest padded token slots: sequences
 * sorted by length are cut into consecutive runs (dynamic programming over the cut points), each
 * run a micro-batch of T = its longest rounded up to `multiple` and B = the budget's rows at that
 * T (⌊maxTokens / T⌋) or, when fewer sequences are left, the next power of two — so the shapes a
 * run compiles stay few (one full shape per T and powers of two below it). Each call also costs
 * `CALL_COST` slots, which keeps tiny micro-batches from being split off for little gain.
 */
export function planLengthBuckets(
  lengths: readonly number[],
  options: { maxLen: number; maxTokens: number; multiple: number },
): BucketPlan[] {
  const order = lengths.map((_, i) => i).sort((a, b) => lengths[a] - lengths[b] || a - b);
  const n = order.length;
  // The micro-batch whose longest member is the k-th shortest sequence: its T and most rows.
  const shapeAt = (k: number) => {
    const T = bucketLength(lengths[order[k]], options.maxLen, options.multiple);
    return { T, cap: Math.max(1, Math.floor(options.maxTokens / T)) };
  };
  const rowsFor = (count: number, cap: number) => {
    let rows = 1;
    while (rows < count) rows *= 2;
    return Math.min(rows, cap);
  };
  // best[j]: the cheapest plan for the j shortest sequences; cut[j]: where its last run starts.
  const best = new Float64Array(n + 1).fill(Number.POSITIVE_INFINITY);
  const cut = new Int32Array(n + 1);
  best[0] = 0;
  for (let j = 1; j <= n; j++) {
    const { T, cap } = shapeAt(j - 1);
    for (let i = Math.max(0, j - cap); i < j; i++) {
      const cost = best[i] + rowsFor(j - i, cap) * T + CALL_COST;
      if (cost < best[j]) {
        best[j] = cost;
        cut[j] = i;
      }
    }
  }
  const plan: BucketPlan[] = [];
  for (let j = n; j > 0; j = cut[j]) {
    const { T, cap } = shapeAt(j - 1);
    plan.push({ T, rows: rowsFor(j - cut[j], cap), members: order.slice(cut[j], j) });
  }
  return plan;
}

/** Padded length T for sequences whose longest has `longest` tokens. */
export function bucketLength(longest: number, maxLen: number, multiple = 16): number {
  return Math.min(maxLen, Math.max(multiple, Math.ceil(longest / multiple) * multiple));
}

/**
 * Micro-batches for `createTrainer`. Token 0 of a sequence has no prediction, so its weight is
 * always 0 whatever its mask says (it also does not count in the normalisation).
 */
export function makeTokenBatches(
  sequences: readonly TokenSequence[],
  options: TokenBatchOptions,
): TokenBatch[] {
  if (sequences.length === 0) throw new Error("makeTokenBatches: no sequences");
  const longest = Math.max(...sequences.map((s) => s.ids.length));
  if (longest > options.maxLen) {
    throw new Error(`makeTokenBatches: a sequence has ${longest} tokens, more than maxLen ${options.maxLen}`);
  }
  const T = bucketLength(longest, options.maxLen, options.lengthMultiple ?? 16);
  const maxTokens = options.maxTokensPerMicroBatch ?? 8192;
  const B = options.microBatchSize ?? Math.max(1, Math.min(sequences.length, Math.floor(maxTokens / T)));
  const plan: BucketPlan[] = options.lengthBuckets
    ? planLengthBuckets(
        sequences.map((s) => s.ids.length),
        { maxLen: options.maxLen, maxTokens, multiple: options.lengthMultiple ?? 16 },
      )
    : Array.from({ length: Math.ceil(sequences.length / B) }, (_, k) => ({
        T,
        rows: B,
        members: Array.from({ length: Math.min(B, sequences.length - k * B) }, (_, r) => k * B + r),
      }));
  const extraNames = Object.keys(sequences[0].extra ?? {});

  const masks = sequences.map((s) => {
    const mask = s.ids.map((_, t) => (t === 0 ? 0 : (s.mask?.[t] ?? 1)));
    if (s.mask && s.mask.length !== s.ids.length)
      throw new Error("makeTokenBatches: mask length differs from ids length");
    return mask;
  });
  const normalization = options.normalization ?? "token-mean";
  const total = masks.reduce((sum, mask) => sum + mask.reduce((a, b) => a + b, 0), 0);
  const weightsOf = (mask: number[]): number[] => {
    if (normalization === "sum") return mask;
    if (normalization === "token-mean") return mask.map((m) => (total > 0 ? m / total : 0));
    const own = mask.reduce((a, b) => a + b, 0);
    return mask.map((m) => (own > 0 ? m / (own * sequences.length) : 0));
  };

  const batches: TokenBatch[] = [];
  for (const { T, rows: B, members } of plan) {
    const ids = new Int32Array(B * T);
    const weights = new Float32Array(B * T);
    const extra: Record<string, Float32Array<ArrayBuffer>> = Object.fromEntries(
      extraNames.map((name) => [name, new Float32Array(B * T)]),
    );
    members.forEach((index, row) => {
      const sequence = sequences[index];
      const w = weightsOf(masks[index]);
      for (let t = 0; t < sequence.ids.length; t++) {
        ids[row * T + t] = sequence.ids[t];
        weights[row * T + t] = w[t];
      }
      for (const name of extraNames) {
        const values = sequence.extra?.[name];
        if (!values || values.length !== sequence.ids.length) {
          throw new Error(
            `makeTokenBatches: extra "${name}" missing or of the wrong length in sequence ${index}`,
          );
        }
        extra[name].set(values, row * T);
      }
    });
    batches.push({
      ids: np.array(ids, { shape: [B, T], dtype: np.int32 }),
      weights: np.array(weights, { shape: [B, T] }),
      extra: Object.fromEntries(
        Object.entries(extra).map(([name, data]) => [name, np.array(data, { shape: [B, T] })]),
      ),
    });
  }
  return batches;
}
