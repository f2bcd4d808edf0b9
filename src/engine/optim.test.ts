import assert from "node:assert/strict";
import { test } from "node:test";
import { np } from "./jax.ts";
import { adamw, applyUpdates, clipByGlobalNorm } from "./optim.ts";
import { warmupCosine } from "./schedule.ts";
import { disposeTree, type ParamTree, refTree, treeToHost } from "./tree.ts";

async function values(tree: ParamTree): Promise<Record<string, number[]>> {
  const host = await treeToHost(tree);
  return Object.fromEntries(Object.entries(host).map(([k, t]) => [k, [...t.data]]));
}

test("adamw: two steps of the worked example (decay on matrices only)", async () => {
  // θ = 1, g = 0.5, lr = 0.1, b1 = 0.9, b2 = 0.999, wd = 0.1.
  // Step 1: m = 0.05, v = 0.00025, m̂ = 0.5, v̂ = 0.25 → direction 1 (+ 0.1·θ = 0.1 for the matrix).
  //   matrix 1 − 0.1·1.1 = 0.89; bias 1 − 0.1·1 = 0.9.
  // Step 2: m = 0.095, v = 0.00049975, m̂ = 0.095/0.19 = 0.5, v̂ = 0.00049975/0.001999 = 0.25.
  //   matrix 0.89 − 0.1·(1 + 0.089) = 0.7811; bias 0.9 − 0.1 = 0.8.
  const optimizer = adamw({ b1: 0.9, b2: 0.999, eps: 1e-8, weightDecay: 0.1 });
  let params: ParamTree = { w: np.ones([1, 1]), b: np.ones([1]) };
  let state = optimizer.init(refTree(params));
  for (let i = 0; i < 2; i++) {
    const grads = { w: np.full([1, 1], 0.5), b: np.full([1], 0.5) };
    const [updates, next] = optimizer.update(grads, state, refTree(params), np.array(0.1));
    params = applyUpdates(params, updates);
    state = next;
    const v = await values(params);
    assert.ok(Math.abs(v.w[0] - [0.89, 0.7811][i]) < 1e-6, `step ${i + 1} w=${v.w[0]}`);
    assert.ok(Math.abs(v.b[0] - [0.9, 0.8][i]) < 1e-6, `step ${i + 1} b=${v.b[0]}`);
  }
  assert.deepEqual((await values({ count: state.count })).count, [2]);
  disposeTree(params);
  disposeTree(state as unknown as ParamTree);
});

test("adamw: learningRateScale multiplies one leaf's step (weight decay included)", async () => {
  // Step 1 of the worked example above with lr 0.1: matrix 1 − 0.1·1.1 = 0.89, bias 1 − 0.1 = 0.9.
  // Scaled ×3 on the bias only: 1 − 0.3 = 0.7; the matrix is unchanged at 0.89.
  const optimizer = adamw({
    b1: 0.9,
    b2: 0.999,
    weightDecay: 0.1,
    learningRateScale: (path) => (path === "b" ? 3 : 1),
  });
  const params: ParamTree = { w: np.ones([1, 1]), b: np.ones([1]) };
  const state = optimizer.init(refTree(params));
  const grads = { w: np.full([1, 1], 0.5), b: np.full([1], 0.5) };
  const [updates, next] = optimizer.update(grads, state, refTree(params), np.array(0.1));
  const v = await values(applyUpdates(params, updates));
  assert.ok(Math.abs(v.w[0] - 0.89) < 1e-6, `w=${v.w[0]}`);
  assert.ok(Math.abs(v.b[0] - 0.7) < 1e-6, `b=${v.b[0]}`);
  disposeTree(next as unknown as ParamTree);
});

test("clipByGlobalNorm: [3, 4] and [0] have norm 5; clipped to 1 → [0.6, 0.8]; under the limit unchanged", async () => {
  const [clipped, norm] = clipByGlobalNorm({ a: np.array([3, 4]), b: np.array([0]) }, 1);
  const v = await values({ ...(clipped as Record<string, ParamTree>), norm });
  assert.ok(Math.abs(v.norm[0] - 5) < 1e-6);
  assert.ok(Math.abs(v.a[0] - 0.6) < 1e-6 && Math.abs(v.a[1] - 0.8) < 1e-6);
  const [same, norm2] = clipByGlobalNorm({ a: np.array([0.3, 0.4]) }, 1);
  const w = await values({ ...(same as Record<string, ParamTree>), norm: norm2 });
  assert.ok(Math.abs(w.a[0] - 0.3) < 1e-7 && Math.abs(w.norm[0] - 0.5) < 1e-7);
});

test("warmupCosine: linear warm-up, cosine to the floor, flat after the end", () => {
  const lr = warmupCosine({ peak: 1e-3, warmupSteps: 10, totalSteps: 110, finalFraction: 0.1 });
  const close = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-12, `${a} vs ${b}`);
  close(lr(0), 1e-4);
  close(lr(9), 1e-3);
  close(lr(10), 1e-3);
  close(lr(60), 5.5e-4);
  close(lr(110), 1e-4);
  close(lr(500), 1e-4);
  assert.throws(() => warmupCosine({ peak: 1, warmupSteps: 5, totalSteps: 2 }), /totalSteps/);
});
