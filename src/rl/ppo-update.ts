/**
 * Step 4 of an RL step (train.ts): the PPO update. `ppoEpochs` passes over the update batch, each
 * split into `miniBatches` optimizer steps in an order drawn from (seed, step), over token sequences
 * assembled from the trajectories exactly as sampled (assemble.ts). A non-finite loss or gradient
 * norm in any optimizer step undoes the whole update: the params and optimizer state of the step's
 * start are kept by reference until every step is known finite.
 */
import { createRng, mixSeeds } from "../core/random.ts";
import type { Trainer, TrainState } from "../engine/train.ts";
import { disposeTree, type ParamTree, refTree } from "../engine/tree.ts";
import { makeTokenBatches, type TokenBatch, type TokenSequence } from "../policy/embedded/index.ts";
import type { GptParams } from "../policy/embedded/model.ts";
import { assembleSequences } from "./assemble.ts";
import type { RlConfig } from "./config.ts";
import type { RlUpdateBatch } from "./train.ts";

export type RlTrainState<P extends ParamTree = GptParams> = TrainState<P>;
export type RlTrainer<P extends ParamTree = GptParams> = Trainer<P, TokenBatch>;

/**
 * Micro-batches of the update: episodes grouped by length (batch.ts `planLengthBuckets`), T a
 * multiple of 64 per micro-batch, at most `microBatchTokens` token slots each. Episodes of a step
 * range from a dozen tokens to the context, so one T for all (the longest's) padded about 60% of
 * the slots.
 */
function microBatches(sequences: TokenSequence[], maxLen: number, microBatchTokens: number): TokenBatch[] {
  return makeTokenBatches(sequences, {
    maxLen,
    maxTokensPerMicroBatch: microBatchTokens,
    lengthMultiple: 64,
    normalization: "sum",
    lengthBuckets: true,
  });
}

/**
 * Runs the update of RL step `step` from `state` (consumed) and returns the next state with the update's metrics:
 * the loss's metrics, `loss/total` and `optim/grad_norm` averaged over the optimizer steps,
 * `policy/kl_sampler` (KL(old‖new) at the first step, before any change) and `optim/updates`.
 * When any step is non-finite the returned state is the step's start and `metrics` is null.
 */
export async function ppoUpdate<P extends ParamTree>(
  trainer: RlTrainer<P>,
  state: RlTrainState<P>,
  update: RlUpdateBatch,
  learningRate: number,
  options: { step: number; config: RlConfig; maxLen: number; normLength: number },
): Promise<{ state: RlTrainState<P>; metrics: Record<string, number> | null }> {
  const { step, config, maxLen, normLength } = options;
  // Keep the step's starting point until every update of the step is known finite.
  const before: RlTrainState<P> = {
    params: refTree(state.params),
    opt: refTree(state.opt as never),
    step: state.step,
  };
  const updates: Record<string, number>[] = [];
  const order = createRng(mixSeeds(mixSeeds(config.seed, step), 0x9b));
  let finite = true;
  let firstKl = Number.NaN;
  for (let epoch = 0; epoch < config.ppoEpochs && finite; epoch++) {
    const indices = order.shuffle(update.trajectories.map((_, i) => i));
    const size = Math.ceil(indices.length / config.miniBatches);
    for (let start = 0; start < indices.length && finite; start += size) {
      const chunk = indices.slice(start, start + size);
      const sequences = assembleSequences(
        chunk.map((i) => update.trajectories[i]),
        chunk.map((i) => update.advantages[i]),
        {
          aggregation: config.aggregation,
          normLength,
          maxLen,
          ...(update.refLogprobs ? { refLogprobs: chunk.map((i) => update.refLogprobs![i]) } : {}),
          ...(update.critic
            ? {
                critic: {
                  oldValues: chunk.map((i) => update.critic!.oldValues[i]),
                  returns: chunk.map((i) => update.critic!.returns[i]),
                },
              }
            : {}),
        },
      );
      const [next, out] = await trainer.step(
        state,
        microBatches(sequences, maxLen, config.microBatchTokens),
        learningRate,
      );
      state = next;
      if (!Number.isFinite(out.loss) || !Number.isFinite(out.gradNorm)) finite = false;
      if (updates.length === 0) firstKl = out.metrics["policy/kl_old"];
      updates.push({ ...out.metrics, "loss/total": out.loss, "optim/grad_norm": out.gradNorm });
    }
  }
  if (!finite) {
    disposeTree(state.params);
    disposeTree(state.opt as never);
    return { state: before, metrics: null };
  }
  disposeTree(before.params);
  disposeTree(before.opt as never);
  const metrics: Record<string, number> = {};
  for (const key of Object.keys(updates[0])) metrics[key] = mean(updates.map((u) => u[key]));
  // Before any update the trainer's log-probs must equal the sampler's: ≈ 0 unless they disagree.
  metrics["policy/kl_sampler"] = firstKl;
  metrics["optim/updates"] = updates.length;
  return { state, metrics };
}

function mean(values: readonly number[]): number {
  return values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
}
