/**
 * Sampling one token from a row of logits, on the host (a row is V floats; the decode step has to
 * come back to the host each token anyway to check stop tokens). Per-sequence `Rng` streams make a
 * sequence's samples independent of which other sequences share its batch.
 *
 * Conventions (what the RL code relies on):
 * - temperature T > 0: the distribution is softmax(logits / T), then top-p keeps the smallest set
 *   of most likely tokens whose probability reaches `topP` (ties broken by lower id; at least one
 *   token) and renormalises.
 * - The returned `logprob` is log softmax(logits / T)[token], BEFORE top-p truncation: the value
 *   `scoreTokens(…, { temperature: T })` recomputes, so PPO ratios compare like with like. (With
 *   top-p < 1 the true sampling probability is higher by the kept mass; it is not reported.)
 * - temperature 0: greedy (argmax, lowest id on ties); `logprob` is then under T = 1.
 */
import type { Rng } from "../../core/random.ts";

export interface SamplingOptions {
  /** 0 = greedy. */
  temperature: number;
  /** Nucleus mass in (0, 1]; 1 = no truncation. */
  topP: number;
}

export function validateSampling(options: SamplingOptions): SamplingOptions {
  if (!(options.temperature >= 0) || !Number.isFinite(options.temperature)) {
    throw new Error(`temperature must be a finite number ≥ 0, got ${options.temperature}`);
  }
  if (!(options.topP > 0 && options.topP <= 1))
    throw new Error(`topP must be in (0, 1], got ${options.topP}`);
  return options;
}

/** Log-softmax of `logits / temperature` in float64. */
export function logSoftmax(logits: ArrayLike<number>, temperature = 1): Float64Array {
  const n = logits.length;
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = logits[i] / temperature;
  const logZ = logPartition(logits, temperature);
  for (let i = 0; i < n; i++) out[i] -= logZ;
  return out;
}

/**
 * log Σ exp(logits[i] / temperature): the max of the scaled logits plus the log of the sum of
 * their exponentials after it, in index order. logSoftmax and sampleToken both take it from here,
 * so a token's log-prob is the same double whichever path computed it.
 */
export function logPartition(logits: ArrayLike<number>, temperature: number): number {
  const n = logits.length;
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    const x = logits[i] / temperature;
    if (x > max) max = x;
  }
  let sum = 0;
  for (let i = 0; i < n; i++) sum += Math.exp(logits[i] / temperature - max);
  return max + Math.log(sum);
}

/**
 * Draws a token id; see the file header for the exact distribution and log-prob reported. Greedy
 * and full-mass draws read the logits in place (two passes over the vocabulary, and the draw's
 * scan stops at the drawn token); only a top-p draw builds the log-probs.
 */
export function sampleToken(
  logits: ArrayLike<number>,
  options: SamplingOptions,
  rng: Rng,
): { id: number; logprob: number } {
  if (options.temperature === 0) {
    const best = argmax(logits);
    return { id: best, logprob: logits[best] - logPartition(logits, 1) };
  }
  const T = options.temperature;
  if (options.topP >= 1) {
    const logZ = logPartition(logits, T);
    const u = rng.next();
    let cumulative = 0;
    for (let i = 0; i < logits.length; i++) {
      const logprob = logits[i] / T - logZ;
      cumulative += Math.exp(logprob);
      if (u < cumulative) return { id: i, logprob };
    }
    // Rounding left the total a hair under 1: take the last token with any mass.
    let last = logits.length - 1;
    while (last > 0 && logits[last] / T - logZ === -Infinity) last--;
    return { id: last, logprob: logits[last] / T - logZ };
  }
  const logp = logSoftmax(logits, T);
  return drawNucleus(logp, options.topP, rng.next());
}

/**
 * `sampleToken` from logits the engine has normalised (float32): `logZ` = log Σ exp(logits / T)
 * at the draw's temperature (at 1 for greedy) and `probs` = softmax(logits / T). The same
 * conventions; the log-prob is logits[id] / T − logZ, and a full-mass draw adds up `probs` (the
 * host runs no exp over the vocabulary). Greedy still takes the argmax of the logits.
 */
export function sampleNormalised(
  logits: ArrayLike<number>,
  logZ: number,
  probs: ArrayLike<number>,
  options: SamplingOptions,
  rng: Rng,
): { id: number; logprob: number } {
  if (options.temperature === 0) {
    const best = argmax(logits);
    return { id: best, logprob: logits[best] - logZ };
  }
  const T = options.temperature;
  const u = rng.next();
  if (options.topP >= 1) {
    let cumulative = 0;
    let last = 0;
    for (let i = 0; i < probs.length; i++) {
      if (probs[i] === 0) continue;
      last = i;
      cumulative += probs[i];
      if (u < cumulative) return { id: i, logprob: logits[i] / T - logZ };
    }
    // Rounding left the total a hair under 1: the last token with any mass.
    return { id: last, logprob: logits[last] / T - logZ };
  }
  const logp = new Float64Array(logits.length);
  for (let i = 0; i < logits.length; i++) logp[i] = logits[i] / T - logZ;
  return drawNucleus(logp, options.topP, u);
}

/** The index of the largest logit (the lowest on ties). */
function argmax(logits: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
  return best;
}

/** A top-p draw with uniform `u` from log-probs (see the file header). */
function drawNucleus(logp: Float64Array, topP: number, u: number): { id: number; logprob: number } {
  const { order, kept, mass } = nucleus(logp, topP);
  let cumulative = 0;
  for (let i = 0; i < kept; i++) {
    cumulative += Math.exp(logp[order[i]]);
    if (u * mass < cumulative) return { id: order[i], logprob: logp[order[i]] };
  }
  return { id: order[kept - 1], logprob: logp[order[kept - 1]] };
}

/** Selection up to this many tokens before sorting the whole vocabulary instead. */
const SELECT_LIMIT = 16;

/**
 * The nucleus: tokens by decreasing log-prob (ties: lower id first) until their mass reaches
 * `topP`. Usually a handful of tokens hold it, so they are picked by repeated scans, each the
 * next largest; past SELECT_LIMIT the whole vocabulary is sorted. Both give the same order.
 */
function nucleus(logp: Float64Array, topP: number): { order: ArrayLike<number>; kept: number; mass: number } {
  const taken = new Uint8Array(logp.length);
  const order: number[] = [];
  let mass = 0;
  while (order.length < SELECT_LIMIT && order.length < logp.length && (order.length === 0 || mass < topP)) {
    let best = -1;
    for (let i = 0; i < logp.length; i++) if (!taken[i] && (best < 0 || logp[i] > logp[best])) best = i;
    taken[best] = 1;
    order.push(best);
    mass += Math.exp(logp[best]);
  }
  if (order.length === logp.length || mass >= topP) return { order, kept: order.length, mass };
  const sorted = Array.from(logp.keys()).sort((a, b) => logp[b] - logp[a] || a - b);
  let kept = 0;
  mass = 0;
  while (kept < sorted.length && (kept === 0 || mass < topP)) mass += Math.exp(logp[sorted[kept++]]);
  return { order: sorted, kept, mass };
}
