import assert from "node:assert/strict";
import { test } from "node:test";
import { keyFromSeed } from "../../engine/init.ts";
import { np } from "../../engine/jax.ts";
import { disposeTree, refTree } from "../../engine/tree.ts";
import type { GptConfig } from "./config.ts";
import { bakedProgramsOpen, gptKvModel, HostKvCache, releaseFixedParams } from "./host-kv.ts";
import { gptLogits, initGpt } from "./model.ts";

const config: GptConfig = { vocabSize: 11, dModel: 8, nLayers: 2, nHeads: 2, dFF: 16, maxLen: 160 };

/** Logits of the full causal forward at every position of `ids` (the reference). */
function fullLogits(params: ReturnType<typeof initGpt>, ids: number[]): Float32Array {
  const array = np.array(Int32Array.from(ids), { shape: [1, ids.length], dtype: np.int32 });
  return gptLogits(refTree(params), array, config).dataSync() as Float32Array;
}

test("host caches grow and shrink between capacities and decode the same logits as the full forward", () => {
  const params = initGpt(config, keyFromSeed(4));
  const cache = new HostKvCache(gptKvModel(params, config), 2);
  const V = config.vocabSize;
  const long = Array.from({ length: 150 }, (_, t) => (t * 7 + 3) % V);
  const short = Array.from({ length: 20 }, (_, t) => (t * 5 + 1) % V);
  assert.equal(cache.capacity, 64);
  // Prefill row 0 in chunks of 8 (row 1 idle), past 64 and 128 positions.
  for (let start = 0; start < long.length - 1; start += 8) {
    const n = Math.min(8, long.length - 1 - start);
    const ids = new Int32Array(16);
    ids.set(long.slice(start, start + n), 0);
    cache.step(ids, Int32Array.from([start, 0]), Int32Array.from([n, 0]), false);
  }
  assert.equal(cache.capacity, 160);
  // Decode the last token of row 0 and the first of row 1 together.
  const logits = cache.step(
    Int32Array.from([long.at(-1)!, short[0]]),
    Int32Array.from([long.length - 1, 0]),
    Int32Array.from([1, 1]),
    true,
  )!;
  const want0 = fullLogits(params, long).subarray((long.length - 1) * V);
  const want1 = fullLogits(params, short.slice(0, 1));
  for (let v = 0; v < V; v++) {
    assert.ok(Math.abs(logits[v] - want0[v]) < 1e-4, `row 0 logit ${v}`);
    assert.ok(Math.abs(logits[V + v] - want1[v]) < 1e-4, `row 1 logit ${v}`);
  }
  // Row 0 ends; row 1 goes on: the caches shrink back to 64 and keep row 1's positions.
  cache.reset(0);
  for (let t = 1; t < short.length; t++) {
    const out = cache.step(
      Int32Array.from([0, short[t]]),
      Int32Array.from([0, t]),
      Int32Array.from([0, 1]),
      true,
    )!;
    if (t === short.length - 1) {
      const want = fullLogits(params, short).subarray(t * V);
      for (let v = 0; v < V; v++)
        assert.ok(Math.abs(out[V + v] - want[v]) < 1e-4, `after shrink, logit ${v}`);
    }
  }
  assert.equal(cache.capacity, 64);
  disposeTree(params);
});

test("scattered rows are gathered from the caches and written back in place; a narrow span reads a window", () => {
  const params = initGpt(config, keyFromSeed(6));
  const rows = 32;
  const cache = new HostKvCache(gptKvModel(params, config), rows);
  const V = config.vocabSize;
  const busy = [3, 17, 30];
  const sequences = busy.map((b) => Array.from({ length: 12 + b }, (_, t) => (t * 3 + b) % V));
  const steps = (
    chunk: number,
    rowsOf: number[],
    tokensOf: (i: number) => number[],
    startOf: (i: number) => number,
  ) => {
    const ids = new Int32Array(rows * chunk);
    const start = new Int32Array(rows);
    const count = new Int32Array(rows);
    rowsOf.forEach((b, i) => {
      const tokens = tokensOf(i);
      ids.set(tokens, b * chunk);
      start[b] = startOf(i);
      count[b] = tokens.length;
    });
    return cache.step(ids, start, count, chunk === 1);
  };
  // Prefill everything but each sequence's last token, 8 at a time (gathered: 3 busy rows of 32).
  for (let offset = 0; ; offset += 8) {
    const live = busy.map((_, i) => i).filter((i) => offset < sequences[i].length - 1);
    if (live.length === 0) break;
    steps(
      8,
      live.map((i) => busy[i]),
      (j) => sequences[live[j]].slice(offset, Math.min(offset + 8, sequences[live[j]].length - 1)),
      () => offset,
    );
  }
  const logits = steps(
    1,
    busy,
    (i) => [sequences[i].at(-1)!],
    (i) => sequences[i].length - 1,
  )!;
  busy.forEach((b, i) => {
    const want = fullLogits(params, sequences[i]).subarray((sequences[i].length - 1) * V);
    for (let v = 0; v < V; v++)
      assert.ok(Math.abs(logits[b * V + v] - want[v]) < 1e-4, `row ${b} logit ${v}`);
  });
  // Rows that did nothing get zero logits (nothing ran for them).
  assert.ok(logits.subarray(0, 3 * V).every((x) => x === 0));
  // Two adjacent rows: a window (no gather); the result is the same function.
  const near = steps(
    1,
    [17],
    () => [sequences[1][0]],
    () => 0,
  )!;
  const want = fullLogits(params, sequences[1].slice(0, 1));
  for (let v = 0; v < V; v++) assert.ok(Math.abs(near[17 * V + v] - want[v]) < 1e-4);
  disposeTree(params);
});

test("a model that normalises on the engine, its weights baked into the decode program: the same logits, and each row's log-partition and probabilities at its temperature", () => {
  const params = initGpt(config, keyFromSeed(8));
  const rows = 32;
  const plain = gptKvModel(params, config);
  const model = {
    ...plain,
    normalise: true,
    // Every leaf but the last fixed: the baked program still takes one parameter as an input.
    fixedParams: {
      id: "host-kv-test",
      leaves: plain.paramData.map((_, i) => i < plain.paramData.length - 1),
    },
  };
  const V = config.vocabSize;
  const busy = [3, 17, 30]; // scattered: the step gathers its rows
  const temperatures = [0.5, 1, 2];
  const sequences = busy.map((b) => Array.from({ length: 5 + b }, (_, t) => (t * 7 + b) % V));
  // Steps every row through its sequence; returns the last step in which all three ran.
  const run = <T>(
    step: (ids: Int32Array, start: Int32Array, count: Int32Array, temperature: Float32Array) => T,
  ) => {
    let kept: T | undefined;
    for (let t = 0; t < sequences[2].length; t++) {
      const ids = new Int32Array(rows);
      const start = new Int32Array(rows);
      const count = new Int32Array(rows);
      const temperature = new Float32Array(rows).fill(1);
      busy.forEach((b, i) => {
        if (t >= sequences[i].length) return;
        ids[b] = sequences[i][t];
        start[b] = t;
        count[b] = 1;
        temperature[b] = temperatures[i];
      });
      const out = step(ids, start, count, temperature);
      if (t === sequences[0].length - 1) kept = out;
    }
    return kept!;
  };
  const reference = new HostKvCache(plain, rows);
  const normalising = new HostKvCache(model, rows);
  const want = run((ids, start, count) => reference.step(ids, start, count, true)!);
  const got = run((ids, start, count, temperature) => normalising.decode(ids, start, count, temperature));
  busy.forEach((b, i) => {
    const logits = got.logits.subarray(b * V, (b + 1) * V);
    for (let v = 0; v < V; v++)
      assert.ok(Math.abs(logits[v] - want[b * V + v]) < 1e-5, `row ${b} logit ${v}`);
    const scaled = Array.from(logits, (x) => x / temperatures[i]);
    const max = Math.max(...scaled);
    const logZ = max + Math.log(scaled.reduce((sum, x) => sum + Math.exp(x - max), 0));
    assert.ok(Math.abs(got.logZ[b] - logZ) < 1e-5, `row ${b}: logZ ${got.logZ[b]} vs ${logZ}`);
    scaled.forEach((x, v) => {
      assert.ok(Math.abs(got.probs[b * V + v] - Math.exp(x - logZ)) < 1e-6, `row ${b} prob ${v}`);
    });
  });
  // Idle rows: nothing ran for them.
  assert.ok(got.probs.subarray(0, 3 * V).every((x) => x === 0));
  assert.throws(
    () =>
      new HostKvCache(plain, 1).decode(
        new Int32Array(1),
        new Int32Array(1),
        Int32Array.of(1),
        Float32Array.of(1),
      ),
    /does not normalise/,
  );
  disposeTree(params);
});

test("baked decode programs: at most three per weights as the cache grows through its capacities, none after release or when turned off", () => {
  const wide: GptConfig = { ...config, maxLen: 600 };
  const params = initGpt(wide, keyFromSeed(9));
  const plain = gptKvModel(params, wide);
  const fixedParams = { id: "host-kv-capacities", leaves: plain.paramData.map(() => true) };
  const cache = new HostKvCache({ ...plain, fixedParams }, 1);
  const reference = new HostKvCache(plain, 1);
  const capacities = new Set<number>();
  for (let t = 0; t < 520; t++) {
    const args = [Int32Array.of(t % wide.vocabSize), Int32Array.of(t), Int32Array.of(1), true] as const;
    const logits = cache.step(...args)!;
    const want = reference.step(...args)!;
    capacities.add(cache.capacity);
    // Equal up to rounding (constant weights take other kernels: last-bit differences).
    if (t % 97 === 0)
      for (let v = 0; v < wide.vocabSize; v++)
        assert.ok(Math.abs(logits[v] - want[v]) < 1e-6, `step ${t}: logit ${v} ${logits[v]} vs ${want[v]}`);
    assert.ok(bakedProgramsOpen(fixedParams.id) <= 3, `step ${t}: ${bakedProgramsOpen(fixedParams.id)} open`);
  }
  assert.deepEqual([...capacities], [64, 128, 256, 512, 600]);
  assert.equal(bakedProgramsOpen(fixedParams.id), 3);
  releaseFixedParams(fixedParams.id);
  assert.equal(bakedProgramsOpen(fixedParams.id), 0);
  process.env.AGENTRL_ORT_CONSTANT_WEIGHTS = "0";
  try {
    cache.reset(0);
    cache.step(Int32Array.of(1), Int32Array.of(0), Int32Array.of(1), true);
    assert.equal(bakedProgramsOpen(fixedParams.id), 0);
  } finally {
    delete process.env.AGENTRL_ORT_CONSTANT_WEIGHTS;
  }
  disposeTree(params);
});
