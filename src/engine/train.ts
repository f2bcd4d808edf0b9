/**
 * The training step: loss, gradient, global-norm clipping and the optimizer update fused into one
 * jitted function, with gradient accumulation over micro-batches (wasm memory caps at 4 GiB: keep
 * a micro-batch under ~8k tokens).
 *
 * The loss is pluggable: any pure `loss(params, batch) → { loss, metrics }` over jax arrays. With
 * micro-batches, the step's loss is the SUM of the micro-batch losses, so a loss must return its
 * micro-batch's contribution to the whole batch's loss (e.g. divide by the whole batch's token
 * count, computed on the host, not by the micro-batch's). The gradient is then exactly the
 * gradient of the whole batch. Metrics are summed the same way.
 */
import { type JaxArray, jax, np } from "./jax.ts";
import { adamw, type AdamWState, applyUpdates, clipByGlobalNorm, type GradientTransformation, globalNorm } from "./optim.ts";
import { mapTree, type ParamTree, refTree } from "./tree.ts";

/** What a loss returns: a scalar and named scalar metrics (each summed over micro-batches). */
export type LossOutput = { loss: JaxArray; metrics: Record<string, JaxArray> };

/** A pure loss over a param tree and a batch tree. Consumes both (jax-js ownership). */
export type LossFn<P extends ParamTree, B> = (params: P, batch: B) => LossOutput;

export type TrainState<P extends ParamTree> = {
  params: P;
  opt: AdamWState<P>;
  /** Optimizer steps taken so far. */
  step: number;
};

export interface StepResult {
  /** Sum of the micro-batch losses (the batch loss). */
  loss: number;
  /** Global gradient norm before clipping. */
  gradNorm: number;
  learningRate: number;
  metrics: Record<string, number>;
}

export interface TrainerOptions<P extends ParamTree, B> {
  loss: LossFn<P, B>;
  /** Default: `adamw()` with its defaults. */
  optimizer?: GradientTransformation<AdamWState>;
  /** Clip the global gradient norm to this (default 1). 0 or Infinity: no clipping. */
  maxGradNorm?: number;
  /** Compile with `jit` (default true); false runs the same functions eagerly (tests). */
  jit?: boolean;
}

export interface Trainer<P extends ParamTree, B> {
  /** Optimizer state for fresh params. Consumes `params`. */
  init(params: P): TrainState<P>;
  /**
   * One optimizer step over the micro-batches (their gradients summed). Consumes `state` and the
   * batches; returns the next state.
   */
  step(state: TrainState<P>, microBatches: B[], learningRate: number): Promise<[TrainState<P>, StepResult]>;
  /** Summed loss and gradients over micro-batches, no update. Consumes the batches, not params. */
  gradients(params: P, microBatches: B[]): Promise<{ loss: number; metrics: Record<string, number>; grads: P }>;
  /** Frees the compiled programs. */
  dispose(): void;
}

async function scalar(x: JaxArray): Promise<number> {
  return (await x.data())[0];
}

async function readMetrics(metrics: Record<string, JaxArray>, into: Record<string, number>): Promise<void> {
  for (const [name, value] of Object.entries(metrics)) into[name] = (into[name] ?? 0) + (await scalar(value));
}

/** Builds the jitted step functions for one loss. */
export function createTrainer<P extends ParamTree, B>(options: TrainerOptions<P, B>): Trainer<P, B> {
  const optimizer = options.optimizer ?? adamw();
  const maxGradNorm = options.maxGradNorm ?? 1;
  const clip = maxGradNorm > 0 && Number.isFinite(maxGradNorm);
  const compile = <F extends (...args: never[]) => unknown>(f: F): F =>
    (options.jit === false ? f : (jax.jit(f as never) as unknown as F));

  const lossAndGrad = (params: P, batch: B): [LossOutput, P] => {
    const [out, grads] = jax.valueAndGrad(
      (p: P, b: B) => {
        const { loss, metrics } = options.loss(p, b);
        return [loss, metrics] as never;
      },
      { hasAux: true },
    )(params as never, batch as never) as unknown as [[JaxArray, Record<string, JaxArray>], P];
    return [{ loss: out[0], metrics: out[1] }, grads];
  };

  // Clip, update, apply. Consumes everything; returns [params, opt, gradNorm].
  const apply = (params: P, opt: AdamWState<P>, grads: P, learningRate: JaxArray): [P, AdamWState<P>, JaxArray] => {
    let norm: JaxArray;
    if (clip) [grads, norm] = clipByGlobalNorm(grads, maxGradNorm);
    else norm = globalNorm(refTree(grads));
    const [updates, nextOpt] = optimizer.update(grads, opt as AdamWState, refTree(params), learningRate);
    return [applyUpdates(params, updates), nextOpt as AdamWState<P>, norm];
  };

  const fusedStep = compile((params: P, opt: AdamWState<P>, batch: B, learningRate: JaxArray) => {
    const [out, grads] = lossAndGrad(refTree(params), batch);
    const [nextParams, nextOpt, norm] = apply(params, opt, grads, learningRate);
    return [nextParams, nextOpt, out.loss, out.metrics, norm] as const;
  });
  const firstGrads = compile((params: P, batch: B) => {
    const [out, grads] = lossAndGrad(params, batch);
    return [grads, out.loss, out.metrics] as const;
  });
  const accumulate = compile((params: P, acc: P, batch: B) => {
    const [out, grads] = lossAndGrad(params, batch);
    return [mapTree((a, g) => a.add(g), acc, grads), out.loss, out.metrics] as const;
  });
  const lastStep = compile((params: P, opt: AdamWState<P>, acc: P, batch: B, learningRate: JaxArray) => {
    const [out, grads] = lossAndGrad(refTree(params), batch);
    const total = mapTree((a, g) => a.add(g), acc, grads);
    const [nextParams, nextOpt, norm] = apply(params, opt, total, learningRate);
    return [nextParams, nextOpt, out.loss, out.metrics, norm] as const;
  });

  const gradients = async (params: P, microBatches: B[]) => {
    if (microBatches.length === 0) throw new Error("Trainer.gradients: no micro-batches");
    const metrics: Record<string, number> = {};
    let [acc, loss, m] = firstGrads(refTree(params), microBatches[0]) as unknown as [P, JaxArray, Record<string, JaxArray>];
    let total = await scalar(loss);
    await readMetrics(m, metrics);
    for (const batch of microBatches.slice(1)) {
      [acc, loss, m] = accumulate(refTree(params), acc, batch) as unknown as [P, JaxArray, Record<string, JaxArray>];
      total += await scalar(loss);
      await readMetrics(m, metrics);
    }
    return { loss: total, metrics, grads: acc };
  };

  return {
    init(params) {
      const opt = optimizer.init(refTree(params)) as AdamWState<P>;
      return { params, opt, step: 0 };
    },
    async step(state, microBatches, learningRate) {
      if (microBatches.length === 0) throw new Error("Trainer.step: no micro-batches");
      const lr = np.array(learningRate);
      const metrics: Record<string, number> = {};
      let loss = 0;
      let params: P;
      let opt: AdamWState<P>;
      let norm: JaxArray;
      if (microBatches.length === 1) {
        let l: JaxArray;
        let m: Record<string, JaxArray>;
        [params, opt, l, m, norm] = fusedStep(state.params, state.opt, microBatches[0], lr) as unknown as [
          P,
          AdamWState<P>,
          JaxArray,
          Record<string, JaxArray>,
          JaxArray,
        ];
        loss = await scalar(l);
        await readMetrics(m, metrics);
      } else {
        let [acc, l, m] = firstGrads(refTree(state.params), microBatches[0]) as unknown as [
          P,
          JaxArray,
          Record<string, JaxArray>,
        ];
        loss += await scalar(l);
        await readMetrics(m, metrics);
        for (const batch of microBatches.slice(1, -1)) {
          [acc, l, m] = accumulate(refTree(state.params), acc, batch) as unknown as [P, JaxArray, Record<string, JaxArray>];
          loss += await scalar(l);
          await readMetrics(m, metrics);
        }
        [params, opt, l, m, norm] = lastStep(state.params, state.opt, acc, microBatches[microBatches.length - 1], lr) as unknown as [
          P,
          AdamWState<P>,
          JaxArray,
          Record<string, JaxArray>,
          JaxArray,
        ];
        loss += await scalar(l);
        await readMetrics(m, metrics);
      }
      const gradNorm = await scalar(norm);
      return [{ params, opt, step: state.step + 1 }, { loss, gradNorm, learningRate, metrics }];
    },
    gradients,
    dispose() {
      if (options.jit === false) return;
      for (const f of [fusedStep, firstGrads, accumulate, lastStep]) (f as unknown as { dispose(): void }).dispose();
    },
  };
}
