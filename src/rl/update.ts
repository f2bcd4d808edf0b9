/**
 * The optimizer step of an RL update, over micro-batches, with bounded memory.
 *
 * With one micro-batch it is the engine trainer's fused jitted step. With several, each
 * micro-batch's gradient is computed and read back before the next is queued (the engine trainer's
 * `gradients`, one micro-batch at a time), the gradients are summed, then one jitted function
 * clips the global norm and applies AdamW, exactly as the engine's step does. Same loss, optimizer
 * and clipping, so the result equals the engine's multi-micro-batch step (update.test.ts pins it
 * against the fused whole-batch step); the difference is peak memory. Measured here on the
 * 4-layer d=128 base with 2048-token micro-batches (T = 256): the engine's step, which queues every
 * micro-batch before reading any, grew the wasm heap to 2.7 GB with 4 micro-batches and past the
 * 4 GiB cap with 8; this one stays at 0.7 GB with 8.
 */
import { type JaxArray, jax, np } from "../engine/jax.ts";
import {
  type AdamWState,
  applyUpdates,
  clipByGlobalNorm,
  type GradientTransformation,
  globalNorm,
} from "../engine/optim.ts";
import { createTrainer, type LossFn, type StepResult, type TrainState } from "../engine/train.ts";
import { mapTree, type ParamTree, refTree } from "../engine/tree.ts";

export interface RlUpdaterOptions<P extends ParamTree, B> {
  loss: LossFn<P, B>;
  optimizer: GradientTransformation<AdamWState>;
  /** Clip the global gradient norm to this (0 or Infinity: no clipping). */
  maxGradNorm: number;
  /** false: run eagerly (tests). */
  jit?: boolean;
}

export interface RlUpdater<P extends ParamTree, B> {
  init(params: P): TrainState<P>;
  /** One optimizer step over the summed gradients of the micro-batches. Consumes `state` and the batches. */
  step(state: TrainState<P>, microBatches: B[], learningRate: number): Promise<[TrainState<P>, StepResult]>;
  dispose(): void;
}

export function createRlUpdater<P extends ParamTree, B>(options: RlUpdaterOptions<P, B>): RlUpdater<P, B> {
  const trainer = createTrainer<P, B>(options);
  const clip = options.maxGradNorm > 0 && Number.isFinite(options.maxGradNorm);
  const applyFn = (params: P, opt: AdamWState<P>, grads: P, learningRate: JaxArray) => {
    let norm: JaxArray;
    if (clip) [grads, norm] = clipByGlobalNorm(grads, options.maxGradNorm);
    else norm = globalNorm(refTree(grads));
    const [updates, nextOpt] = options.optimizer.update(
      grads,
      opt as AdamWState,
      refTree(params),
      learningRate,
    );
    return [applyUpdates(params, updates), nextOpt as AdamWState<P>, norm] as const;
  };
  const apply = (options.jit === false ? applyFn : jax.jit(applyFn as never)) as typeof applyFn;

  return {
    init: (params) => trainer.init(params),
    async step(state, microBatches, learningRate) {
      if (microBatches.length <= 1) return trainer.step(state, microBatches, learningRate);
      let total: P | null = null;
      let loss = 0;
      const metrics: Record<string, number> = {};
      for (const batch of microBatches) {
        const out = await trainer.gradients(state.params, [batch]);
        total = total === null ? out.grads : mapTree((a, g) => a.add(g), total, out.grads);
        loss += out.loss;
        for (const [name, value] of Object.entries(out.metrics)) metrics[name] = (metrics[name] ?? 0) + value;
      }
      const [params, opt, norm] = apply(state.params, state.opt, total as P, np.array(learningRate));
      const gradNorm = (await norm.data())[0];
      return [
        { params, opt, step: state.step + 1 },
        { loss, gradNorm, learningRate, metrics },
      ];
    },
    dispose() {
      trainer.dispose();
      if (options.jit !== false) (apply as unknown as { dispose(): void }).dispose();
    },
  };
}
