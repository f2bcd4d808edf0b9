/**
 * Perplexity of trajectories under a scoring model, over the policy's tokens only (the paper's
 * "RL samples have low perplexity under the base model", arXiv:2504.13837):
 *
 *   PPL(x) = exp( −(1/|P|) Σ_{t ∈ P} log p(x_t | x_<t) )
 *
 * with P the positions the policy wrote (loss mask 1); prompt and tool-output tokens are context
 * only. A set of trajectories gets the pooled perplexity exp(Σ NLL / Σ |P|) (token-weighted) and
 * the median of the per-trajectory values.
 *
 * Token ids: the stored ids are reused when the run's policy tokenizer is the scoring model's
 * (same fingerprint) and every turn has them; otherwise the stored texts are re-encoded with the
 * scoring model's tokenizer, piece by piece as the episode loop encodes them (prompt, each turn,
 * each observation). Which way each trajectory went is counted in the result.
 */
import type { Tokenizer } from "../types/policy.ts";
import { flattenTrajectory, type Trajectory } from "../types/trajectory.ts";
import { quantileSorted } from "./bootstrap.ts";
import { type TokenizerInfo, tokenizerFingerprint } from "./tokenizer-fingerprint.ts";

/** Scores token sequences under a model: the per-token log-probs of the ids it is given. */
export interface TokenScorer {
  /** Name of the scoring model (its checkpoint). */
  readonly id: string;
  readonly tokenizer: Tokenizer;
  /** Longest sequence the model can score (its context window); longer trajectories are skipped. */
  readonly maxLength?: number;
  /**
   * For each sequence, `logprobs[t] = log p(ids[t] | ids[<t])` for every t ≥ 1 (index 0 is
   * ignored): one value per id.
   */
  score(sequences: readonly (readonly number[])[]): Promise<number[][]>;
  close?(): Promise<void> | void;
}

export interface ScoringSequence {
  ids: number[];
  /** 1 where the policy wrote the token. */
  mask: number[];
  source: "stored" | "re-encoded";
}

/** The ids and policy mask of a trajectory for a scorer (see the file comment for the rule). */
export function scoringSequence(
  trajectory: Trajectory,
  tokenizer: Tokenizer,
  storedIdsMatch: boolean,
): ScoringSequence {
  const complete =
    trajectory.prompt.tokenIds.length > 0 &&
    trajectory.turns.every(
      (turn) =>
        (turn.text === "" || turn.tokenIds.length > 0) &&
        (!turn.observation || turn.observation.text === "" || turn.observation.tokenIds.length > 0),
    );
  if (storedIdsMatch && complete) {
    const flat = flattenTrajectory(trajectory);
    return { ids: flat.tokenIds, mask: flat.lossMask, source: "stored" };
  }
  const ids: number[] = [];
  const mask: number[] = [];
  const push = (text: string, policy: number) => {
    for (const id of tokenizer.encode(text)) {
      ids.push(id);
      mask.push(policy);
    }
  };
  push(trajectory.prompt.text, 0);
  for (const turn of trajectory.turns) {
    push(turn.text, 1);
    if (turn.observation) push(turn.observation.text, 0);
  }
  return { ids, mask, source: "re-encoded" };
}

/** Negative log-likelihood and count of the policy tokens of one scored sequence (t = 0 has no prediction). */
export function policyNll(
  logprobs: readonly number[],
  mask: readonly number[],
): { nll: number; tokens: number } {
  if (logprobs.length !== mask.length) {
    throw new Error(`perplexity: scorer returned ${logprobs.length} log-probs for ${mask.length} tokens`);
  }
  let nll = 0;
  let tokens = 0;
  for (let t = 1; t < mask.length; t++) {
    if (!mask[t]) continue;
    if (!Number.isFinite(logprobs[t]) || logprobs[t] > 1e-9) {
      throw new Error(`perplexity: log-prob ${logprobs[t]} at position ${t} is not a finite value <= 0`);
    }
    nll -= logprobs[t];
    tokens++;
  }
  return { nll, tokens };
}

export interface PerplexityResult {
  scorer: string;
  /** Trajectories given. */
  trajectories: number;
  scored: number;
  /** Longer than the scorer's context window. */
  skippedTooLong: number;
  /** No policy token after the first position. */
  skippedEmpty: number;
  /** Policy tokens scored. */
  tokens: number;
  tokenSource: { stored: number; reEncoded: number };
  /** exp(Σ NLL / Σ tokens); null when nothing was scored. */
  pooled: number | null;
  /** Median of the per-trajectory perplexities; null when nothing was scored. */
  median: number | null;
  /** Per-trajectory perplexity, in input order of the scored ones. */
  perTrajectory: number[];
}

export interface PerplexityOptions {
  /** Tokenizer recorded by the eval run that produced the trajectories (null: none recorded). */
  storedTokenizer?: TokenizerInfo | null;
  /** Sequences per `score` call (default 32). */
  batchSize?: number;
}

/** Perplexity of `trajectories` (policy tokens only) under `scorer`. */
export async function perplexityUnder(
  trajectories: readonly Trajectory[],
  scorer: TokenScorer,
  options: PerplexityOptions = {},
): Promise<PerplexityResult> {
  const storedIdsMatch =
    options.storedTokenizer != null &&
    options.storedTokenizer.fingerprint === tokenizerFingerprint(scorer.tokenizer).fingerprint;
  const result: PerplexityResult = {
    scorer: scorer.id,
    trajectories: trajectories.length,
    scored: 0,
    skippedTooLong: 0,
    skippedEmpty: 0,
    tokens: 0,
    tokenSource: { stored: 0, reEncoded: 0 },
    pooled: null,
    median: null,
    perTrajectory: [],
  };
  const sequences: ScoringSequence[] = [];
  for (const trajectory of trajectories) {
    const sequence = scoringSequence(trajectory, scorer.tokenizer, storedIdsMatch);
    if (scorer.maxLength !== undefined && sequence.ids.length > scorer.maxLength) {
      result.skippedTooLong++;
    } else if (!sequence.mask.some((bit, t) => t > 0 && bit === 1)) {
      result.skippedEmpty++;
    } else {
      sequences.push(sequence);
    }
  }
  const batchSize = Math.max(1, options.batchSize ?? 32);
  let totalNll = 0;
  for (let start = 0; start < sequences.length; start += batchSize) {
    const batch = sequences.slice(start, start + batchSize);
    const logprobs = await scorer.score(batch.map((sequence) => sequence.ids));
    if (logprobs.length !== batch.length) {
      throw new Error(
        `perplexity: scorer ${scorer.id} returned ${logprobs.length} rows for ${batch.length} sequences`,
      );
    }
    batch.forEach((sequence, i) => {
      const { nll, tokens } = policyNll(logprobs[i], sequence.mask);
      totalNll += nll;
      result.tokens += tokens;
      result.scored++;
      result.perTrajectory.push(Math.exp(nll / tokens));
      if (sequence.source === "stored") result.tokenSource.stored++;
      else result.tokenSource.reEncoded++;
    });
  }
  if (result.scored > 0) {
    result.pooled = Math.exp(totalNll / result.tokens);
    result.median = quantileSorted(
      [...result.perTrajectory].sort((x, y) => x - y),
      0.5,
    );
  }
  return result;
}
