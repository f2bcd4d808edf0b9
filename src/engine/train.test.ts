import assert from "node:assert/strict";
import { test } from "node:test";
import { trackLiveBuffers, wasmMemoryBytes } from "./diagnostics.ts";
import { keyFromSeed, normalInit, splitKey } from "./init.ts";
import { type JaxArray, np } from "./jax.ts";
import { createTrainer, type LossFn } from "./train.ts";
import { disposeTree, type ParamTree, treeToHost } from "./tree.ts";

// A tiny regression model: y ≈ tanh(x @ w1) @ w2 + b.
type Params = { w1: JaxArray; w2: JaxArray; b: JaxArray };
type Batch = { x: JaxArray; y: JaxArray; weights: JaxArray };

function initParams(seed: number): Params {
  const [k1, k2] = splitKey(keyFromSeed(seed), 2);
  return { w1: normalInit(k1, [4, 8], 0.5), w2: normalInit(k2, [8, 2], 0.5), b: np.zeros([2]) };
}

// Weighted squared error: the weights carry the whole batch's normalisation (1 / total rows).
const loss: LossFn<Params, Batch> = (p, batch) => {
  const prediction = np.matmul(np.tanh(np.matmul(batch.x, p.w1)), p.w2).add(p.b);
  const perRow = np.square(prediction.sub(batch.y)).sum(-1);
  const total = perRow.ref.mul(batch.weights).sum();
  return { loss: total, metrics: { "loss/max_row": perRow.max() } };
};

function makeRows(n: number, seed: number): { x: number[][]; y: number[][] } {
  let s = seed;
  const rand = () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return (s / 2147483648) * 2 - 1;
  };
  const x = Array.from({ length: n }, () => Array.from({ length: 4 }, rand));
  return { x, y: x.map((row) => [row[0] * row[1], row[2] - row[3]]) };
}

function batchOf(rows: { x: number[][]; y: number[][] }, from: number, to: number, total: number): Batch {
  const n = to - from;
  return {
    x: np.array(rows.x.slice(from, to)),
    y: np.array(rows.y.slice(from, to)),
    weights: np.full([n], 1 / total),
  };
}

async function hostValues(tree: ParamTree): Promise<Float64Array[]> {
  return Object.values(await treeToHost(tree)).map((t) => Float64Array.from(t.data));
}

function maxDiff(a: Float64Array[], b: Float64Array[]): number {
  let worst = 0;
  a.forEach((leaf, i) => {
    leaf.forEach((v, j) => {
      worst = Math.max(worst, Math.abs(v - b[i][j]));
    });
  });
  return worst;
}

test("jitted and eager steps agree", async () => {
  const rows = makeRows(16, 1);
  const results: Float64Array[][] = [];
  const losses: number[][] = [];
  for (const jit of [true, false]) {
    const trainer = createTrainer({ loss, jit });
    let state = trainer.init(initParams(0));
    const seen: number[] = [];
    for (let step = 0; step < 3; step++) {
      const [next, result] = await trainer.step(state, [batchOf(rows, 0, 16, 16)], 0.05);
      state = next;
      seen.push(result.loss);
    }
    results.push(await hostValues(state.params));
    losses.push(seen);
    disposeTree(state.params);
    disposeTree(state.opt as unknown as ParamTree);
    trainer.dispose();
  }
  assert.ok(maxDiff(results[0], results[1]) < 1e-5, `params differ by ${maxDiff(results[0], results[1])}`);
  for (const [i, l] of losses[0].entries()) assert.ok(Math.abs(l - losses[1][i]) < 1e-5);
  assert.ok(losses[0][2] < losses[0][0], "loss falls");
});

test("micro-batched gradients equal the whole-batch gradient", async () => {
  const rows = makeRows(12, 2);
  const trainer = createTrainer({ loss });
  const params = initParams(3);
  const whole = await trainer.gradients(params, [batchOf(rows, 0, 12, 12)]);
  const split = await trainer.gradients(params, [
    batchOf(rows, 0, 4, 12),
    batchOf(rows, 4, 8, 12),
    batchOf(rows, 8, 12, 12),
  ]);
  assert.ok(Math.abs(whole.loss - split.loss) < 1e-6);
  const diff = maxDiff(await hostValues(whole.grads), await hostValues(split.grads));
  assert.ok(diff < 1e-6, `gradient difference ${diff}`);
  // The step with micro-batches takes the same update as the whole batch.
  const stepWhole = await trainer.step(trainer.init(initParams(3)), [batchOf(rows, 0, 12, 12)], 0.01);
  const stepSplit = await trainer.step(
    trainer.init(initParams(3)),
    [batchOf(rows, 0, 6, 12), batchOf(rows, 6, 12, 12)],
    0.01,
  );
  assert.ok(Math.abs(stepWhole[1].gradNorm - stepSplit[1].gradNorm) < 1e-6);
  assert.ok(maxDiff(await hostValues(stepWhole[0].params), await hostValues(stepSplit[0].params)) < 1e-6);
  for (const tree of [params, whole.grads, split.grads, stepWhole[0].params, stepSplit[0].params])
    disposeTree(tree);
  trainer.dispose();
});

/** Runs `steps` training steps; `leak` keeps an extra reference to the params each step. */
async function growth(steps: number, leak: boolean): Promise<{ bytes: number; buffers: number | null }> {
  const tracker = await trackLiveBuffers();
  const rows = makeRows(64, 4);
  const trainer = createTrainer({ loss });
  let state = trainer.init(initParams(5));
  const run = async (n: number) => {
    for (let i = 0; i < n; i++) {
      if (leak) void state.params.w1.ref; // a forgotten reference: this w1 is never freed
      const [next] = await trainer.step(state, [batchOf(rows, 0, 32, 64), batchOf(rows, 32, 64, 64)], 0.01);
      state = next;
    }
  };
  await run(5); // warm-up: compile, fill jax-js's free lists
  const bytesBefore = wasmMemoryBytes();
  const buffersBefore = tracker?.live() ?? null;
  await run(steps);
  const result = {
    bytes: wasmMemoryBytes() - bytesBefore,
    buffers: tracker && buffersBefore !== null ? tracker.live() - buffersBefore : null,
  };
  disposeTree(state.params);
  disposeTree(state.opt as unknown as ParamTree);
  trainer.dispose();
  return result;
}

test("memory stays flat over many steps (and the check catches a leak)", async () => {
  assert.ok(wasmMemoryBytes() > 0, "the wasm heap is visible");
  assert.notEqual(await trackLiveBuffers(), null, "live-buffer tracking found jax-js's backend");
  const clean = await growth(100, false);
  assert.equal(clean.bytes, 0);
  assert.equal(clean.buffers, 0);
  // Negative control: one forgotten reference per step is exactly one live buffer per step.
  const leaky = await growth(100, true);
  assert.equal(leaky.buffers, 100);
});

test("memory does not grow with the number of micro-batches", async () => {
  // A loss whose activations are large next to its params (four [512, 1024] hidden layers, 2 MiB
  // each): queuing 16 micro-batches before reading any result grew the heap by ~1.1 GB here.
  type Wide = { w1: JaxArray; w2: JaxArray };
  const wide: LossFn<Wide, { x: JaxArray }> = (p, batch) => {
    let h = batch.x;
    for (let i = 0; i < 4; i++) h = np.tanh(np.matmul(np.tanh(np.matmul(h, p.w1.ref)), p.w2.ref));
    p.w1.dispose();
    p.w2.dispose();
    return { loss: np.square(h).mean(), metrics: {} };
  };
  const [k1, k2] = splitKey(keyFromSeed(1), 2);
  const trainer = createTrainer({ loss: wide });
  let state = trainer.init({ w1: normalInit(k1, [64, 1024], 0.1), w2: normalInit(k2, [1024, 64], 0.1) });
  const batches = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ x: np.full([512, 64], 0.01 * (i + 1)) }));
  for (let i = 0; i < 4; i++) [state] = await trainer.step(state, batches(2), 0.01); // compile, warm up
  const before = wasmMemoryBytes();
  for (let i = 0; i < 2; i++) [state] = await trainer.step(state, batches(16), 0.01);
  const grads = await trainer.gradients(state.params, batches(16));
  const grown = wasmMemoryBytes() - before;
  assert.ok(
    grown < 16 * 2 ** 20,
    `the heap grew by ${(grown / 2 ** 20).toFixed(0)} MiB with 16 micro-batches`,
  );
  for (const tree of [state.params, state.opt as unknown as ParamTree, grads.grads]) disposeTree(tree);
  trainer.dispose();
});
