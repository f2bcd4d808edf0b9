/**
 * The pretraining data stream: corpus episodes, encoded and grouped by length into buckets so a
 * step pads little (an episode of 40 tokens never sits in a 256-token row). Each step is one full
 * batch from one bucket, `tokensPerStep / T` rows of T tokens. The stream is a pure function of its
 * seed: resuming at step s replays the stream's first s batches without training on them.
 */
import type { Tokenizer } from "../types/policy.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { type CorpusMix, corpusEpisodes, type EncodedEpisode, encodeEpisode } from "./corpus.ts";

export interface StreamOptions {
  mix: CorpusMix;
  seed: number;
  tokenizer: Tokenizer;
  /** The model's context; longer episodes are dropped. */
  maxLen: number;
  /** Padded tokens per step (rows · T). */
  tokensPerStep: number;
  /** Row lengths of the buckets, ascending; the last must be maxLen. */
  buckets?: number[];
  /** Episodes generated per corpus batch. */
  episodesPerChunk?: number;
  /** Another corpus than the mix's world episodes (batch `index` of `count` episodes, deterministic). */
  episodes?: (seed: number, index: number, count: number) => Promise<Trajectory[]>;
}

export interface StreamBatch {
  /** Row length of this step's bucket. */
  length: number;
  episodes: EncodedEpisode[];
  /** Corpus episodes that were correct, among those generated so far (for the model card). */
}

export interface StreamStats {
  episodes: number;
  dropped: number;
  correct: number;
  policyTokens: number;
  tokens: number;
}

export function defaultBuckets(maxLen: number): number[] {
  return [64, 128, maxLen].filter((length, i, all) => length <= maxLen && all.indexOf(length) === i);
}

/** An endless iterator of step batches, plus running corpus statistics. */
export function pretrainStream(options: StreamOptions): { next(): Promise<StreamBatch>; stats: StreamStats } {
  const buckets = options.buckets ?? defaultBuckets(options.maxLen);
  if (buckets.at(-1) !== options.maxLen)
    throw new Error(`stream buckets must end at maxLen ${options.maxLen}`);
  const queues: EncodedEpisode[][] = buckets.map(() => []);
  const rowsOf = (length: number) => Math.max(1, Math.floor(options.tokensPerStep / length));
  const stats: StreamStats = { episodes: 0, dropped: 0, correct: 0, policyTokens: 0, tokens: 0 };
  let chunk = 0;
  const refill = async () => {
    const count = options.episodesPerChunk ?? 256;
    const episodes = options.episodes
      ? await options.episodes(options.seed, chunk++, count)
      : await corpusEpisodes(options.mix, options.seed, chunk++, count);
    for (const trajectory of episodes) {
      stats.episodes++;
      if (trajectory.correct) stats.correct++;
      const encoded = encodeEpisode(trajectory, options.tokenizer, options.maxLen);
      if (!encoded) {
        stats.dropped++;
        continue;
      }
      const bucket = buckets.findIndex((length) => encoded.ids.length <= length);
      queues[bucket].push(encoded);
    }
  };
  return {
    stats,
    async next() {
      for (;;) {
        // The bucket whose queue is fullest relative to its batch size goes first: the mix of
        // lengths over steps follows the corpus.
        let best = -1;
        let bestFill = 1;
        buckets.forEach((length, i) => {
          const fill = queues[i].length / rowsOf(length);
          if (fill >= bestFill) {
            best = i;
            bestFill = fill;
          }
        });
        if (best >= 0) {
          const length = buckets[best];
          const episodes = queues[best].splice(0, rowsOf(length));
          for (const episode of episodes) {
            stats.tokens += episode.ids.length;
            stats.policyTokens += episode.mask.reduce((a, b) => a + b, 0);
          }
          return { length, episodes };
        }
        await refill();
      }
    },
  };
}
