/**
 * The lab's trainer (engine/train.ts `createTrainer`) on a LoRA adapter of a Hugging Face base, in
 * the shape the lab's loops use: a `Trainer<LoraParams, TokenBatch>` whose micro-batches are plain
 * token batches. The base's weights are put on the engine once and every micro-batch carries a
 * reference to them (token-loss.ts: the frozen base rides beside the batch, so the compiled step
 * reads them as inputs), never a copy; the adapter is the only tree differentiated and updated.
 * With dropout each micro-batch gets its random key from (seed, optimizer step, index).
 *
 * `createFullTrainer` is full fine-tuning of the same checkpoint: every weight (`HfParams`) is the
 * differentiated tree, with AdamW's two moments for each (three copies of the weights in the
 * trainer, plus the gradients during a step), and the micro-batches are the token batches as
 * they are; the loss is the same function (token-loss.ts `hfTokenLossOf`).
 */
import { mixSeeds } from "../../core/random.ts";
import { engineName } from "../../engine/backend.ts";
import { np, random } from "../../engine/jax.ts";
import { type HostArray, hostOnlyArray } from "../../engine/onnx/host-copies.ts";
import { type AdamWOptions, adamw } from "../../engine/optim.ts";
import { createTrainer, type Trainer } from "../../engine/train.ts";
import { disposeTree, refTree, treeFromHost, unflattenTree } from "../../engine/tree.ts";
import type { PerTokenLoss, TokenBatch, TokenLossOptions } from "../embedded/losses.ts";
import { layeredGradientsOn, layeredLoraGradients } from "./layered-grad.ts";
import type { LoraConfig, LoraParams } from "./lora.ts";
import type { HfParams } from "./model.ts";
import { type HfLoraBatch, hfFullTokenLoss, hfLoraTokenLoss, type WithValueHead } from "./token-loss.ts";
import type { HfCheckpoint } from "./weights.ts";

export interface LoraTrainerOptions {
  loss: PerTokenLoss;
  /** The loss's temperature and entropy; `values` (and `valueGradient`) when the params carry a value head. */
  lossOptions?: TokenLossOptions;
  optimizer?: AdamWOptions;
  maxGradNorm?: number;
  /** Seed of the dropout keys. */
  seed?: number;
  /** Gradients layer by layer (layered-grad.ts) or as one program; default `layeredGradientsOn`. */
  layered?: boolean;
}

// ORT's memory pattern off in both trainers: a 0.6B model's LoRA update peaked at 6.3 GB without it
// and 7.7 GB with it at 256 tokens, 8.8 and 12.0 GB at 512, at the same speed
// (docs/real-checkpoints.md).
const MEM_PATTERN = false;

/**
 * A trainer of `lora` on `checkpoint`'s frozen weights (and of a value head beside the adapter when
 * the params carry one); `dispose` frees the programs and the base.
 */
export function createLoraTrainer(
  checkpoint: HfCheckpoint,
  lora: LoraConfig,
  options: LoraTrainerOptions,
): Trainer<WithValueHead<LoraParams>, TokenBatch> {
  // On ONNX Runtime a real model's gradient runs layer by layer with recomputation (layered-grad.ts):
  // its update then holds one block's activations and a few hundred tokens' logits at a time.
  const weightBytes = Object.values(checkpoint.tensors).reduce((sum, { data }) => sum + data.byteLength, 0);
  const layered =
    engineName() === "onnx" && (options.layered ?? layeredGradientsOn(weightBytes))
      ? layeredLoraGradients(checkpoint, lora, options)
      : null;
  const inner = createTrainer<WithValueHead<LoraParams>, HfLoraBatch>({
    loss: hfLoraTokenLoss(checkpoint.config, lora, options.loss, options.lossOptions),
    optimizer: adamw(options.optimizer),
    maxGradNorm: options.maxGradNorm,
    memPattern: MEM_PATTERN,
    ...(layered
      ? { microBatchGradients: (params, batch, index, step) => layered.gradients(params, batch, step, index) }
      : {}),
  });
  // The compiled steps (ONNX) read their inputs on the host: the base is the checkpoint's own
  // arrays there and lazy zeros in jax-js (not copied in: 2.3 GB for a 0.6B model). On the jax-js
  // engine the steps read jax-js's copy.
  const base =
    engineName() === "onnx"
      ? (unflattenTree(
          Object.entries(checkpoint.tensors).map(([path, { shape, data }]) => [
            path,
            hostOnlyArray(np.zeros(shape, { dtype: np.float32 }), data as HostArray),
          ]),
        ) as HfParams)
      : treeFromHost<HfParams>(checkpoint.tensors);
  const withBase = (microBatches: TokenBatch[], step: number): HfLoraBatch[] =>
    layered
      ? (microBatches as HfLoraBatch[])
      : microBatches.map((batch, i) => ({
          ...batch,
          base: refTree(base),
          ...(lora.dropout > 0
            ? { dropoutKey: random.key(mixSeeds(mixSeeds(options.seed ?? 0, step), i) >>> 0) }
            : {}),
        }));
  return {
    init: (params) => inner.init(params),
    step: (state, microBatches, learningRate) =>
      inner.step(state, withBase(microBatches, state.step), learningRate),
    gradients: (params, microBatches) => inner.gradients(params, withBase(microBatches, 0)),
    dispose: () => {
      inner.dispose();
      layered?.dispose();
      disposeTree(base as never);
    },
  };
}

/**
 * A trainer of every weight of `checkpoint` (full fine-tuning), and of a value head when the params
 * carry one; its state's params start as `treeFromHost(checkpoint.tensors)` (`fullParams`).
 * Dropout is LoRA's alone: none here.
 */
export function createFullTrainer(
  checkpoint: HfCheckpoint,
  options: Omit<LoraTrainerOptions, "seed">,
): Trainer<WithValueHead<HfParams>, TokenBatch> {
  return createTrainer<WithValueHead<HfParams>, TokenBatch>({
    loss: hfFullTokenLoss(checkpoint.config, options.loss, options.lossOptions),
    optimizer: adamw(options.optimizer),
    maxGradNorm: options.maxGradNorm,
    memPattern: MEM_PATTERN,
  });
}

/** The checkpoint's weights as the trainable tree of full fine-tuning (copied into jax-js). */
export function fullParams(checkpoint: HfCheckpoint): HfParams {
  return treeFromHost<HfParams>(checkpoint.tensors);
}
