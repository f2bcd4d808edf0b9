/**
 * Optimizers in the optax shape: a pure `init(params) → state` and
 * `update(grads, state, params, lr) → [updates, state]`, with `applyUpdates(params, updates)`
 * adding the updates. Everything is traceable, so a whole update fuses into one `jit` with the
 * loss and gradient. Every function consumes its array arguments (jax-js ownership).
 *
 * AdamW (Loshchilov & Hutter 2019) as in optax.adamw:
 *   m ← b1·m + (1−b1)·g          v ← b2·v + (1−b2)·g²
 *   m̂ = m / (1 − b1^t)           v̂ = v / (1 − b2^t)          (t = step count after this update)
 *   update = −lr · (m̂ / (√v̂ + eps) + wd · θ)      (decay only where `decayMask` is true)
 * The learning rate is an argument (a traced scalar), not part of the state, so a schedule
 * computed on the host never triggers a recompile.
 */
import { type JaxArray, np } from "./jax.ts";
import { disposeTree, flattenTree, mapTree, type ParamTree, unflattenTree } from "./tree.ts";

export type AdamWState<P extends ParamTree = ParamTree> = {
  /** Number of updates applied so far (float32 scalar). */
  count: JaxArray;
  mu: P;
  nu: P;
};

export interface AdamWOptions {
  b1?: number;
  b2?: number;
  eps?: number;
  /** Decoupled weight decay coefficient (multiplied by the learning rate). */
  weightDecay?: number;
  /**
   * Which leaves decay, by path and shape. Default: matrices only (ndim ≥ 2), so biases and
   * LayerNorm parameters do not decay (the nanoGPT convention).
   */
  decayMask?: (path: string, shape: number[]) => boolean;
  /**
   * A leaf's learning rate as a multiple of the step's, by path (default 1 everywhere): e.g. a
   * critic head that must track returns faster than the policy moves. Fixed per leaf, so it
   * follows the schedule.
   */
  learningRateScale?: (path: string, shape: number[]) => number;
}

export interface GradientTransformation<S> {
  init(params: ParamTree): S;
  /** Returns the updates to add to the params and the next state. Consumes every argument. */
  update(grads: ParamTree, state: S, params: ParamTree, learningRate: JaxArray): [ParamTree, S];
}

export const DEFAULT_ADAMW = { b1: 0.9, b2: 0.95, eps: 1e-8, weightDecay: 0.1 } as const;

/** AdamW. State leaves are zeros shaped like the params (in the params' dtype). */
export function adamw(options: AdamWOptions = {}): GradientTransformation<AdamWState> {
  const b1 = options.b1 ?? DEFAULT_ADAMW.b1;
  const b2 = options.b2 ?? DEFAULT_ADAMW.b2;
  const eps = options.eps ?? DEFAULT_ADAMW.eps;
  const weightDecay = options.weightDecay ?? DEFAULT_ADAMW.weightDecay;
  const decayMask = options.decayMask ?? ((_path: string, shape: number[]) => shape.length >= 2);
  return {
    init(params) {
      const zeros = () => mapTree((p) => np.zeros(p.shape, { dtype: p.dtype }), params);
      const state = { count: np.zeros([]), mu: zeros(), nu: zeros() };
      disposeTree(params);
      return state;
    },
    update(grads, state, params, learningRate) {
      const count = state.count.add(1);
      // Bias corrections 1 − b^t as traced scalars: b^t = exp(t·ln b).
      const correction1 = np
        .exp(count.ref.mul(Math.log(b1)))
        .neg()
        .add(1);
      const correction2 = np
        .exp(count.ref.mul(Math.log(b2)))
        .neg()
        .add(1);
      const g = flattenTree(grads);
      const m = flattenTree(state.mu);
      const v = flattenTree(state.nu);
      const p = flattenTree(params);
      const mu: [string, JaxArray][] = [];
      const nu: [string, JaxArray][] = [];
      const updates: [string, JaxArray][] = [];
      for (let i = 0; i < g.length; i++) {
        const [path, grad] = g[i];
        const param = p[i][1];
        const scale = options.learningRateScale?.(path, param.shape) ?? 1;
        if (!(scale >= 0)) throw new Error(`adamw: learningRateScale of ${path} must be >= 0, got ${scale}`);
        const mNext = m[i][1].mul(b1).add(grad.ref.mul(1 - b1));
        const vNext = v[i][1].mul(b2).add(np.square(grad).mul(1 - b2));
        const mHat = mNext.ref.div(correction1.ref);
        const vHat = vNext.ref.div(correction2.ref);
        let direction = mHat.div(np.sqrt(vHat).add(eps));
        if (weightDecay !== 0 && decayMask(path, param.shape))
          direction = direction.add(param.mul(weightDecay));
        else param.dispose();
        const step = direction.mul(learningRate.ref);
        updates.push([path, (scale === 1 ? step : step.mul(scale)).neg()]);
        mu.push([path, mNext]);
        nu.push([path, vNext]);
      }
      correction1.dispose();
      correction2.dispose();
      learningRate.dispose();
      return [
        unflattenTree(updates) as ParamTree,
        { count, mu: unflattenTree(mu) as ParamTree, nu: unflattenTree(nu) as ParamTree },
      ];
    },
  };
}

/** params + updates, leaf by leaf. Consumes both. */
export function applyUpdates<P extends ParamTree>(params: P, updates: ParamTree): P {
  return mapTree((p, u) => p.add(u), params, updates as P);
}

/** √(Σ leaf²) over every leaf of the tree. Consumes the tree. */
export function globalNorm(tree: ParamTree): JaxArray {
  const squares = flattenTree(tree).map(([, leaf]) => np.square(leaf).sum());
  return np.sqrt(squares.reduce((total, s) => total.add(s)));
}

/**
 * Scales the tree so its global norm is at most `maxNorm` (optax.clip_by_global_norm: scale =
 * min(1, maxNorm / norm)). Returns the clipped tree and the norm before clipping. Consumes tree.
 */
export function clipByGlobalNorm<P extends ParamTree>(tree: P, maxNorm: number): [P, JaxArray] {
  const norm = globalNorm(mapTree((leaf) => leaf.ref, tree));
  const scale = np.minimum(np.array(maxNorm).div(norm.ref.add(1e-12)), 1);
  const clipped = mapTree((leaf) => leaf.mul(scale.ref), tree);
  scale.dispose();
  return [clipped, norm];
}
