import assert from "node:assert/strict";
import { test } from "node:test";
import { keyFromSeed } from "../../engine/init.ts";
import { type JaxArray, jax, np } from "../../engine/jax.ts";
import { adamw } from "../../engine/optim.ts";
import { createTrainer } from "../../engine/train.ts";
import { disposeTree, type HostTensor, refTree, treeFromHost, treeToHost } from "../../engine/tree.ts";
import { makeTokenBatches } from "./batch.ts";
import type { GptConfig } from "./config.ts";
import {
  createKvCache,
  createRecentKv,
  flushRecent,
  forwardChunk,
  forwardDecode,
  type KvCache,
  type RecentKv,
} from "./kv-cache.ts";
import { crossEntropy, type TokenBatch, tokenLoss } from "./losses.ts";
import { type GptParams, gptLogits, initGpt } from "./model.ts";

const TINY: GptConfig = { vocabSize: 7, dModel: 8, nLayers: 2, nHeads: 2, dFF: 12, maxLen: 6 };

/** Params with larger weights than the init, so every nonlinearity matters in the checks. */
async function sharpParams(config: GptConfig, seed: number, dtype: "float32" | "float64", scale: number) {
  const host = await treeToHost(initGpt(config, keyFromSeed(seed), dtype));
  for (const tensor of Object.values(host)) {
    tensor.data.forEach((v, i) => {
      tensor.data[i] = v * scale + (tensor.shape.length === 1 ? 0.1 * Math.sin(i + 1) : 0);
    });
  }
  return host;
}

test("gradients match central finite differences (float64, every parameter tensor)", async () => {
  const host = await sharpParams(TINY, 3, "float64", 4);
  const loss = tokenLoss(TINY, crossEntropy);
  const batch = (): TokenBatch => ({
    ids: np.array(
      [
        [1, 2, 3, 4, 5, 6],
        [6, 5, 4, 3, 2, 1],
      ],
      { dtype: np.int32 },
    ),
    weights: np.array(
      [
        [0, 0.1, 0.1, 0.05, 0.1, 0.1],
        [0, 0.1, 0, 0.1, 0.1, 0.2],
      ],
      { dtype: np.float64 },
    ),
    extra: {},
  });
  const trainer = createTrainer({ loss });
  const params = treeFromHost<GptParams>(host);
  const { grads } = await trainer.gradients(params, [batch()]);
  const analytic = await treeToHost(grads);
  disposeTree(params);
  disposeTree(grads);
  const lossAt = jax.jit((p: GptParams, b: TokenBatch) => loss(p, b).loss);
  const evaluate = async (tensors: Record<string, HostTensor>) =>
    (await lossAt(treeFromHost<GptParams>(tensors), batch()).data())[0];
  let checked = 0;
  for (const [path, tensor] of Object.entries(host)) {
    for (const index of [0, Math.floor(tensor.data.length / 2), tensor.data.length - 1]) {
      const g = analytic[path].data[index];
      // exp/log run in float32 inside jax-js even for float64 arrays: take the better of two
      // step sizes (1e-3: truncation error; 1e-4: float32 rounding noise).
      let best = Infinity;
      for (const h of [1e-3, 1e-4]) {
        const plus = structuredClone(host);
        plus[path].data[index] += h;
        const minus = structuredClone(host);
        minus[path].data[index] -= h;
        const fd = ((await evaluate(plus)) - (await evaluate(minus))) / (2 * h);
        best = Math.min(best, Math.abs(fd - g));
      }
      assert.ok(
        best <= 5e-4 * Math.max(1, Math.abs(g)),
        `${path}[${index}]: analytic ${g}, finite-difference error ${best}`,
      );
      checked++;
    }
  }
  assert.ok(checked >= 3 * 28);
  lossAt.dispose();
  trainer.dispose();
});

test("KV-cache chunks and single-token steps reproduce the full forward's logits", async () => {
  const config: GptConfig = { vocabSize: 23, dModel: 16, nLayers: 2, nHeads: 2, dFF: 32, maxLen: 12 };
  const params = treeFromHost<GptParams>(await sharpParams(config, 1, "float32", 5));
  const sequences = [
    [1, 5, 7, 9, 2, 3, 4, 8, 10, 11, 12, 13],
    [3, 3, 4, 22, 21, 20, 1, 1, 2, 5, 6, 7],
    [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16],
  ];
  const full = (await gptLogits(
    refTree(params),
    np.array(sequences, { dtype: np.int32 }),
    config,
  ).jsAsync()) as number[][][];
  let cache: KvCache = createKvCache(config, 3);
  const step = jax.jit((p: GptParams, c: KvCache, ids: JaxArray, start: JaxArray, count: JaxArray) => {
    const out = forwardChunk(p, c, ids, start, count, config, true);
    return [out.cache, out.logits!] as [KvCache, JaxArray];
  });
  const lengths = [0, 0, 0];
  let worst = 0;
  const feed = async (counts: number[], chunk: number) => {
    const ids = sequences.map((s, b) =>
      Array.from({ length: chunk }, (_, c) => (c < counts[b] ? s[lengths[b] + c] : 0)),
    );
    const [next, logits] = step(
      refTree(params),
      cache,
      np.array(ids, { dtype: np.int32 }),
      np.array(lengths, { dtype: np.int32 }),
      np.array(counts, { dtype: np.int32 }),
    );
    cache = next;
    const values = (await logits.jsAsync()) as number[][][];
    counts.forEach((n, b) => {
      for (let c = 0; c < n; c++) {
        values[b][c].forEach((v, token) => {
          worst = Math.max(worst, Math.abs(v - full[b][lengths[b] + c][token]));
        });
      }
      lengths[b] += n;
    });
  };
  await feed([3, 5, 0], 5); // prompts of different lengths; row 2 idle
  await feed([4, 4, 4], 4);
  for (let i = 0; i < 3; i++) await feed([1, 1, 1], 1); // single-token decode steps
  await feed([2, 0, 5], 5);
  assert.deepEqual(lengths, [12, 12, 12]);
  assert.ok(worst < 1e-4, `max |cached − full| = ${worst}`);
  disposeTree(cache as never);
  disposeTree(params);
  step.dispose();
});

test("decode steps through the recent cache (with flushes) reproduce the full forward's logits", async () => {
  const config: GptConfig = { vocabSize: 23, dModel: 16, nLayers: 2, nHeads: 2, dFF: 32, maxLen: 12 };
  const params = treeFromHost<GptParams>(await sharpParams(config, 2, "float32", 5));
  const sequences = [
    [1, 5, 7, 9, 2, 3, 4, 8, 10, 11, 12, 13],
    [3, 3, 4, 22, 21, 20, 1, 1, 2, 5, 6, 7],
  ];
  const full = (await gptLogits(
    refTree(params),
    np.array(sequences, { dtype: np.int32 }),
    config,
  ).jsAsync()) as number[][][];
  const int32 = (values: number[]) => np.array(values, { dtype: np.int32 });
  let cache: KvCache = createKvCache(config, 2);
  let recent: RecentKv = createRecentKv(config, 2, 3);
  // Prompts of 2 and 4 tokens straight into the main cache.
  cache = forwardChunk(
    refTree(params),
    cache,
    np.array(
      sequences.map((s) => s.slice(0, 4)),
      { dtype: np.int32 },
    ),
    int32([0, 0]),
    int32([2, 4]),
    config,
    false,
  ).cache;
  const written = [2, 4];
  const base = [2, 4];
  const decode = jax.jit(
    (p: GptParams, c: KvCache, r: RecentKv, ids: JaxArray, pos: JaxArray, b: JaxArray, a: JaxArray) => {
      const out = forwardDecode(p, c, r, ids, pos, b, a, config);
      return [out.recent, out.logits] as [RecentKv, JaxArray];
    },
  );
  let worst = 0;
  let flushes = 0;
  while (written.some((w) => w < 12)) {
    if (written.some((w, row) => w < 12 && w - base[row] >= 3)) {
      cache = flushRecent(
        cache,
        refTree(recent),
        int32(base),
        int32(written.map((w, row) => w - base[row])),
        12,
      );
      base.splice(0, 2, ...written);
      flushes++;
    }
    const active = written.map((w) => (w < 12 ? 1 : 0));
    const ids = written.map((w, row) => (w < 12 ? sequences[row][w] : 0));
    const [next, logits] = decode(
      refTree(params),
      refTree(cache),
      recent,
      int32(ids),
      int32(written),
      int32(base),
      int32(active),
    );
    recent = next;
    const values = (await logits.jsAsync()) as number[][];
    written.forEach((w, row) => {
      if (w >= 12) return;
      values[row].forEach((v, token) => {
        worst = Math.max(worst, Math.abs(v - full[row][w][token]));
      });
      written[row]++;
    });
  }
  assert.ok(flushes >= 2);
  assert.ok(worst < 1e-4, `max |decoded − full| = ${worst}`);
  disposeTree(cache as never);
  disposeTree(recent as never);
  disposeTree(params);
  decode.dispose();
});

function copyTask(count: number, seed: number) {
  // [a b c d e 6 a b c d e]: the model must copy the first five tokens after the separator 6.
  let s = seed;
  const next = () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s % 6;
  };
  return Array.from({ length: count }, () => {
    const head = Array.from({ length: 5 }, next);
    return { ids: [...head, 6, ...head], mask: [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1] };
  });
}

test("jitted and eager GPT train steps agree", async () => {
  const config: GptConfig = { vocabSize: 7, dModel: 16, nLayers: 1, nHeads: 2, dFF: 32, maxLen: 16 };
  const after: Record<string, HostTensor>[] = [];
  for (const jit of [true, false]) {
    const trainer = createTrainer({ loss: tokenLoss(config, crossEntropy), jit });
    const state = trainer.init(initGpt(config, keyFromSeed(4)));
    const [next] = await trainer.step(state, makeTokenBatches(copyTask(8, 1), { maxLen: 16 }), 1e-2);
    after.push(await treeToHost(next.params));
    disposeTree(next.params);
    disposeTree(next.opt as never);
    trainer.dispose();
  }
  for (const [path, tensor] of Object.entries(after[0])) {
    for (const [i, v] of tensor.data.entries())
      assert.ok(Math.abs(v - after[1][path].data[i]) < 1e-5, `${path}[${i}]`);
  }
});

test("learning smoke test: loss falls on a copy task and every parameter changes", async () => {
  const config: GptConfig = { vocabSize: 7, dModel: 32, nLayers: 2, nHeads: 2, dFF: 64, maxLen: 16 };
  const trainer = createTrainer({
    loss: tokenLoss(config, crossEntropy),
    optimizer: adamw({ weightDecay: 0.01 }),
  });
  const initial = initGpt(config, keyFromSeed(5));
  const before = await treeToHost(initial);
  let state = trainer.init(initial);
  const losses: number[] = [];
  for (let step = 0; step < 150; step++) {
    const [next, result] = await trainer.step(
      state,
      makeTokenBatches(copyTask(32, step + 1), { maxLen: 16 }),
      3e-3,
    );
    state = next;
    losses.push(result.loss);
    assert.ok(Number.isFinite(result.loss) && Number.isFinite(result.gradNorm));
  }
  const first = losses.slice(0, 5).reduce((a, b) => a + b) / 5;
  const last = losses.slice(-5).reduce((a, b) => a + b) / 5;
  // Chance is ln 6 ≈ 1.79 nats per copied token; copying is learnable well below it.
  assert.ok(first > 1.5, `initial loss ${first}`);
  assert.ok(last < 0.5 * first, `loss ${first.toFixed(3)} → ${last.toFixed(3)}`);
  const afterTraining = await treeToHost(state.params);
  for (const [path, tensor] of Object.entries(before)) {
    const changed = tensor.data.some((v, i) => v !== afterTraining[path].data[i]);
    assert.ok(changed, `${path} did not change`);
  }
  disposeTree(state.params);
  disposeTree(state.opt as never);
  trainer.dispose();
});
