/**
 * SFT data: trajectories from dataset directories, encoded exactly as the embedded policy sees them
 * (`encodeEpisode`: prompt, then each turn's text and observation encoded piece by piece), with
 * the assistant-only loss mask (1 on the policy's own tokens, 0 on the prompt and on tool output),
 * a held-out split by task, and a deterministic batch plan over length buckets.
 *
 * Batch plan: every episode sits in the smallest bucket that holds it; an epoch shuffles the
 * episodes (seed, epoch), cuts each bucket's queue into batches of `tokensPerStep / T` rows (the
 * last one of a bucket may be shorter) and shuffles the batch order. The number of batches per
 * epoch is fixed by the data, so step s is batch s mod P of epoch floor(s / P): a pure function of
 * the step, and a resumed run continues with exactly the batches an uninterrupted one would see.
 */
import { createRng, hashString, mixSeeds } from "../core/random.ts";
import { type LoadedDataset, loadDataset } from "../data/dataset.ts";
import { type EncodedEpisode, encodeEpisode } from "../pretrain/corpus.ts";
import { isInfraFailure } from "../types/failure.ts";
import type { Tokenizer, ToolSpec } from "../types/policy.ts";
import type { Trajectory } from "../types/trajectory.ts";

export interface SftEpisode extends EncodedEpisode {
  taskId: string;
}

export interface SftDataCounts {
  /** Trajectories read from the datasets. */
  trajectories: number;
  /** Left out because they were not correct (with `correctOnly`). */
  skippedIncorrect: number;
  /** Left out because they failed for an infra reason (never the policy's: never trained on). */
  skippedInfra: number;
  /** Left out because they are longer than the model's context. */
  droppedTooLong: number;
  trainEpisodes: number;
  heldoutEpisodes: number;
  trainTasks: number;
  heldoutTasks: number;
  /** Policy tokens (loss tokens) and all tokens of the training episodes. */
  trainPolicyTokens: number;
  trainTokens: number;
}

export interface SftData {
  train: SftEpisode[];
  heldout: SftEpisode[];
  counts: SftDataCounts;
  /** Each dataset's directory, run id, provenance and summary (for the model's metadata). */
  sources: Omit<LoadedDataset, "trajectories" | "tools">[];
}

/** True when a task belongs to the held-out split (a seeded hash of its id below `fraction`). */
export function isHeldoutTask(taskId: string, seed: number, fraction: number): boolean {
  return mixSeeds(seed, hashString(taskId)) / 4294967296 < fraction;
}

export function loadSftData(options: {
  data: readonly string[];
  tokenizer: Tokenizer;
  /**
   * A trajectory's examples another way (an hf: checkpoint's chat template: policy/hf/sft-encode.ts),
   * given its dataset's tool specs; null when too long. Default: the embedded policy's encoding.
   */
  encode?: (trajectory: Trajectory, tools: ToolSpec[] | undefined) => EncodedEpisode[] | null;
  maxLen: number;
  correctOnly: boolean;
  heldoutFraction: number;
  seed: number;
}): SftData {
  const train: SftEpisode[] = [];
  const heldout: SftEpisode[] = [];
  const counts: SftDataCounts = {
    trajectories: 0,
    skippedIncorrect: 0,
    skippedInfra: 0,
    droppedTooLong: 0,
    trainEpisodes: 0,
    heldoutEpisodes: 0,
    trainTasks: 0,
    heldoutTasks: 0,
    trainPolicyTokens: 0,
    trainTokens: 0,
  };
  const sources: SftData["sources"] = [];
  const trainTasks = new Set<string>();
  const heldoutTasks = new Set<string>();
  for (const directory of options.data) {
    const { trajectories, tools, ...source } = loadDataset(directory);
    sources.push(source);
    for (const trajectory of trajectories) {
      counts.trajectories++;
      if (isInfraFailure(trajectory)) {
        counts.skippedInfra++;
        continue;
      }
      if (options.correctOnly && !trajectory.correct) {
        counts.skippedIncorrect++;
        continue;
      }
      const encoded = options.encode
        ? options.encode(trajectory, tools)
        : [encodeEpisode(trajectory, options.tokenizer, options.maxLen)];
      if (!encoded || encoded.some((example) => example === null)) {
        counts.droppedTooLong++;
        continue;
      }
      for (const example of encoded as EncodedEpisode[]) {
        const episode = { ...example, taskId: trajectory.taskId };
        if (isHeldoutTask(trajectory.taskId, options.seed, options.heldoutFraction)) {
          heldout.push(episode);
          heldoutTasks.add(trajectory.taskId);
        } else {
          train.push(episode);
          trainTasks.add(trajectory.taskId);
          counts.trainTokens += example.ids.length;
          counts.trainPolicyTokens += example.mask.reduce((a, b) => a + b, 0);
        }
      }
    }
  }
  counts.trainEpisodes = train.length;
  counts.heldoutEpisodes = heldout.length;
  counts.trainTasks = trainTasks.size;
  counts.heldoutTasks = heldoutTasks.size;
  return { train, heldout, counts, sources };
}

export interface BatchPlan {
  /** Batches in one pass over the training episodes. */
  batchesPerEpoch: number;
  /** The batch of a step: its row length (bucket) and the indices of its episodes. */
  batch(step: number): { epoch: number; length: number; indices: number[] };
}

export function defaultSftBuckets(maxLen: number): number[] {
  return [64, 128, maxLen].filter((length, i, all) => length <= maxLen && all.indexOf(length) === i);
}

/** The deterministic batch plan over episodes of the given lengths (see the file comment). */
export function sftBatchPlan(
  lengths: readonly number[],
  options: { buckets: readonly number[]; tokensPerStep: number; seed: number },
): BatchPlan {
  if (lengths.length === 0) throw new Error("sft: no training episodes");
  const { buckets } = options;
  const bucketOf = lengths.map((length) => {
    const bucket = buckets.findIndex((b) => length <= b);
    if (bucket < 0)
      throw new Error(`sft: an episode has ${length} tokens, more than the largest bucket ${buckets.at(-1)}`);
    return bucket;
  });
  const rowsOf = (length: number) => Math.max(1, Math.floor(options.tokensPerStep / length));
  const sizes = buckets.map((_, b) => bucketOf.filter((x) => x === b).length);
  const batchesPerEpoch = buckets.reduce((sum, length, b) => sum + Math.ceil(sizes[b] / rowsOf(length)), 0);
  let cached: { epoch: number; batches: { length: number; indices: number[] }[] } | null = null;
  const epochBatches = (epoch: number) => {
    if (cached?.epoch === epoch) return cached.batches;
    const rng = createRng(mixSeeds(options.seed, epoch));
    const order = rng.fork("episodes").shuffle(lengths.map((_, i) => i));
    const batches: { length: number; indices: number[] }[] = [];
    buckets.forEach((length, b) => {
      const queue = order.filter((i) => bucketOf[i] === b);
      const rows = rowsOf(length);
      for (let start = 0; start < queue.length; start += rows)
        batches.push({ length, indices: queue.slice(start, start + rows) });
    });
    cached = { epoch, batches: rng.fork("batches").shuffle(batches) };
    return cached.batches;
  };
  return {
    batchesPerEpoch,
    batch(step) {
      const epoch = Math.floor(step / batchesPerEpoch);
      return { epoch, ...epochBatches(epoch)[step % batchesPerEpoch] };
    },
  };
}
