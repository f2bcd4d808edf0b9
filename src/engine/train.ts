/**
 * The training step: loss, gradient, global-norm clipping and the optimizer update fused into one
 * jitted function, with gradient accumulation over micro-batches (wasm memory caps at 4 GiB: keep
 * a micro-batch under ~8k tokens).
 *
 * Memory with several micro-batches: each micro-batch's program is run to completion (its loss
 * and metrics read back, the running gradient sum settled) before the next one is dispatched, so
 * the wasm heap holds one micro-batch's activations and one gradient sum, whatever the count.
 * Queuing them all before reading any result grew the heap with their count: measured on the
 * 4-layer d=128 base with 2048-token micro-batches (T = 256), 2.7 GB with 4 and past the 4 GiB cap
 * with 8 (it killed a pretraining run); read one at a time, 8 take 0.65 GiB, as much as one
 * (train.test.ts pins it on a small model: 16 micro-batches grew the heap by 1.1 GB before).
 *
 * The loss is pluggable: any pure `loss(params, batch) → { loss, metrics }` over jax arrays. With
 * micro-batches, the step's loss is the SUM of the micro-batch losses, so a loss must return its
 * micro-batch's contribution to the whole batch's loss (e.g. divide by the whole batch's token
 * count, computed on the host, not by the micro-batch's). The gradient is then exactly the
 * gradient of the whole batch. Metrics are summed the same way.
 */
import { compileProgram } from "./backend.ts";
import { type ExecMode, ExecutionSite, readArrays } from "./exec.ts";
import { type JaxArray, jax, np } from "./jax.ts";
import {
  type AdamWState,
  adamw,
  applyUpdates,
  clipByGlobalNorm,
  type GradientTransformation,
  globalNorm,
} from "./optim.ts";
import { mapTree, type ParamTree, refTree } from "./tree.ts";

/** What a loss returns: a scalar and named scalar metrics (each summed over micro-batches). */
export type LossOutput = { loss: JaxArray; metrics: Record<string, JaxArray> };

/** One micro-batch's loss, metrics and gradient, computed outside the compiled programs. */
export interface MicroBatchGradient<P> {
  loss: number;
  metrics: Record<string, number>;
  grads: P;
}

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
  /** ONNX Runtime's memory pattern for the compiled steps (runtime.ts; default on). */
  memPattern?: boolean;
  /**
   * One micro-batch's loss, metrics and gradient computed outside the compiled gradient programs
   * (policy/hf/layered-grad.ts: a real model's LoRA gradient layer by layer); the update stays the
   * compiled `apply-update` on their sum. `index` is the micro-batch's place in the step. Consumes
   * the batch, not the params.
   */
  microBatchGradients?: (params: P, batch: B, index: number, step: number) => Promise<MicroBatchGradient<P>>;
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
  gradients(
    params: P,
    microBatches: B[],
  ): Promise<{ loss: number; metrics: Record<string, number>; grads: P }>;
  /** Frees the compiled programs. */
  dispose(): void;
}

type Scalars = { loss: number; metrics: Record<string, number> };

/** Adds one micro-batch's scalars into a running sum. */
function addScalars(total: Scalars, part: Scalars): void {
  total.loss += part.loss;
  for (const [name, value] of Object.entries(part.metrics))
    total.metrics[name] = (total.metrics[name] ?? 0) + value;
}

/**
 * Reads one micro-batch's loss and metric scalars (and the norm), consuming them. In pool mode
 * `settle` (the call's other outputs) is finished first; either way the micro-batch's program has
 * run when this returns, so its buffers are free before the next one is dispatched.
 */
async function readScalars(
  loss: JaxArray,
  metrics: Record<string, JaxArray>,
  norm: JaxArray | null,
  mode: ExecMode,
  settle: unknown,
): Promise<Scalars & { norm: number }> {
  const names = Object.keys(metrics);
  const arrays = [loss, ...names.map((name) => metrics[name])];
  if (norm) arrays.push(norm);
  const values = (await readArrays(arrays, mode, settle)).map((v) => v[0]);
  return {
    loss: values[0],
    metrics: Object.fromEntries(names.map((name, j) => [name, values[1 + j]])),
    norm: norm ? values[values.length - 1] : Number.NaN,
  };
}

/** Builds the jitted step functions for one loss. */
export function createTrainer<P extends ParamTree, B>(options: TrainerOptions<P, B>): Trainer<P, B> {
  const optimizer = options.optimizer ?? adamw();
  const maxGradNorm = options.maxGradNorm ?? 1;
  const clip = maxGradNorm > 0 && Number.isFinite(maxGradNorm);
  const compile = <F extends (...args: never[]) => unknown>(f: F, name: string, maxSessions?: number): F =>
    options.jit === false ? f : compileProgram(f, name, { maxSessions, memPattern: options.memPattern });

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
  const apply = (
    params: P,
    opt: AdamWState<P>,
    grads: P,
    learningRate: JaxArray,
  ): [P, AdamWState<P>, JaxArray] => {
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
  }, "train-step");
  const accumulate = compile(
    (params: P, acc: P, batch: B) => {
      const [out, grads] = lossAndGrad(params, batch);
      return [mapTree((a, g) => a.add(g), acc, grads), out.loss, out.metrics] as const;
    },
    "accumulate",
    16,
  );
  // The update of a step with several micro-batches, on their summed gradients. Kept apart from
  // the gradient programs so that those are the only ones compiled per micro-batch shape (length-
  // bucketed batches have several shapes per step).
  const applyStep = compile(apply, "apply-update");

  const gradientSite = new ExecutionSite("gradients");
  const stepSite = new ExecutionSite("train-step");

  type Out = [JaxArray, Record<string, JaxArray>];
  /**
   * Runs the micro-batches through the accumulating program one at a time (each read before the
   * next is dispatched), from a zero gradient sum, adding their scalars into `total`.
   */
  const accumulateAll = async (params: P, microBatches: B[], mode: ExecMode, total: Scalars, step = 0) => {
    let acc = mapTree((p) => np.zeros(p.shape, { dtype: p.dtype }), params);
    const external = options.microBatchGradients;
    if (external) {
      for (const [index, batch] of microBatches.entries()) {
        const { loss, metrics, grads } = await external(params, batch, index, step);
        acc = mapTree((a, g) => a.add(g), acc, grads);
        addScalars(total, { loss, metrics });
      }
      return acc;
    }
    for (const batch of microBatches) {
      const [next, loss, metrics] = accumulate(refTree(params), acc, batch) as unknown as [P, ...Out];
      acc = next;
      addScalars(total, await readScalars(loss, metrics, null, mode, acc));
    }
    return acc;
  };
  const gradients = async (params: P, microBatches: B[]) => {
    if (microBatches.length === 0) throw new Error("Trainer.gradients: no micro-batches");
    const mode = gradientSite.begin();
    const total: Scalars = { loss: 0, metrics: {} };
    const acc = await accumulateAll(params, microBatches, mode, total);
    gradientSite.end();
    return { loss: total.loss, metrics: total.metrics, grads: acc };
  };

  return {
    init(params) {
      const opt = optimizer.init(refTree(params)) as AdamWState<P>;
      return { params, opt, step: 0 };
    },
    async step(state, microBatches, learningRate) {
      if (microBatches.length === 0) throw new Error("Trainer.step: no micro-batches");
      const mode = stepSite.begin();
      const lr = np.array(learningRate);
      const total: Scalars = { loss: 0, metrics: {} };
      let params: P;
      let opt: AdamWState<P>;
      let gradNorm: number;
      if (microBatches.length === 1 && !options.microBatchGradients) {
        type Final = [P, AdamWState<P>, JaxArray, Record<string, JaxArray>, JaxArray];
        let loss: JaxArray;
        let metrics: Record<string, JaxArray>;
        let norm: JaxArray;
        [params, opt, loss, metrics, norm] = fusedStep(
          state.params,
          state.opt,
          microBatches[0],
          lr,
        ) as unknown as Final;
        const read = await readScalars(loss, metrics, norm, mode, [params, opt]);
        addScalars(total, read);
        gradNorm = read.norm;
      } else {
        const acc = await accumulateAll(state.params, microBatches, mode, total, state.step);
        let norm: JaxArray;
        [params, opt, norm] = applyStep(state.params, state.opt, acc, lr);
        gradNorm = (await readArrays([norm], mode, [params, opt]))[0][0];
      }
      stepSite.end();
      return [
        { params, opt, step: state.step + 1 },
        { loss: total.loss, gradNorm, learningRate, metrics: total.metrics },
      ];
    },
    gradients,
    dispose() {
      if (options.jit === false) return;
      for (const f of [fusedStep, accumulate, applyStep]) (f as unknown as { dispose(): void }).dispose();
    },
  };
}
