/**
 * The ONNX Runtime engine against jax-js on the policy's whole programs: the fused train step
 * (loss, gradient norm, parameters and Adam moments after several steps, with and without
 * micro-batches), scoring (log-probs, entropies), KV-cache prefill and decode (logits and the
 * sampled tokens), a checkpoint trained on one engine scored on the other, and memory over many
 * steps. Tolerances: float32 with different reduction orders and kernels (notes/engine-onnx.md
 * measured ≤ 6.5e-5 on the reference model's step).
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { createRng } from "../../core/random.ts";
import { type EngineName, engineName, setEngine } from "../../engine/backend.ts";
import { wasmMemoryBytes } from "../../engine/diagnostics.ts";
import { keyFromSeed } from "../../engine/init.ts";
import { createTrainer } from "../../engine/train.ts";
import { disposeTree, type HostTensor, treeFromHost, treeToHost } from "../../engine/tree.ts";
import { makeTokenBatches } from "./batch.ts";
import { loadModelCheckpoint, saveModelCheckpoint } from "./checkpoint.ts";
import type { GptConfig } from "./config.ts";
import { DecodeSession } from "./decode-session.ts";
import { crossEntropy, tokenLoss } from "./losses.ts";
import { type GptParams, initGpt } from "./model.ts";
import { scoreTokens } from "./score.ts";
import { createWordTokenizer } from "./tokenizer.ts";

const config: GptConfig = { vocabSize: 24, dModel: 16, nLayers: 2, nHeads: 2, dFF: 32, maxLen: 32 };
const initial = engineName();
after(() => setEngine(initial));

function sequences(count: number, seed: number) {
  const rng = createRng(seed);
  return Array.from({ length: count }, () => {
    const length = 6 + rng.int(20);
    const ids = Array.from({ length }, () => 1 + rng.int(config.vocabSize - 1));
    return { ids, mask: ids.map((_, t) => (t >= 3 ? 1 : 0)) };
  });
}

async function withEngine<T>(engine: EngineName, run: () => Promise<T>): Promise<T> {
  setEngine(engine);
  try {
    return await run();
  } finally {
    setEngine(initial);
  }
}

function maxDifference(a: Record<string, HostTensor>, b: Record<string, HostTensor>): number {
  let worst = 0;
  for (const name of Object.keys(a)) {
    const [x, y] = [a[name].data, b[name].data];
    assert.equal(x.length, y.length, name);
    for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i] - y[i]));
  }
  return worst;
}

async function train(engine: EngineName, microBatchSize: number) {
  return withEngine(engine, async () => {
    const trainer = createTrainer({ loss: tokenLoss(config, crossEntropy) });
    let state = trainer.init(initGpt(config, keyFromSeed(3)));
    const results = [];
    for (let step = 0; step < 4; step++) {
      const batches = makeTokenBatches(sequences(8, step), { maxLen: config.maxLen, microBatchSize });
      const [next, result] = await trainer.step(state, batches, 3e-3);
      state = next;
      results.push(result);
    }
    const params = await treeToHost(state.params);
    const moments = await treeToHost({ mu: state.opt.mu, nu: state.opt.nu });
    disposeTree(state.opt.count);
    trainer.dispose();
    return { results, params, moments };
  });
}

test("train steps agree across engines: losses, gradient norms, parameters and Adam moments", async () => {
  for (const microBatchSize of [8, 3]) {
    const jax = await train("jax", microBatchSize);
    const onnx = await train("onnx", microBatchSize);
    jax.results.forEach((want, step) => {
      const got = onnx.results[step];
      assert.ok(
        Math.abs(got.loss - want.loss) < 1e-5 * Math.max(1, want.loss),
        `step ${step} loss ${got.loss} vs ${want.loss}`,
      );
      assert.ok(Math.abs(got.gradNorm - want.gradNorm) < 1e-4 * want.gradNorm, `step ${step} norm`);
    });
    assert.ok(maxDifference(jax.params, onnx.params) < 1e-4, `params (micro-batch ${microBatchSize})`);
    assert.ok(maxDifference(jax.moments, onnx.moments) < 1e-4, `moments (micro-batch ${microBatchSize})`);
    // The steps changed the parameters (the comparison is not between two initialisations).
    const init = await treeToHost(initGpt(config, keyFromSeed(3)));
    assert.ok(maxDifference(init, onnx.params) > 1e-3);
  }
});

async function scored(engine: EngineName, params: GptParams) {
  return withEngine(engine, () =>
    scoreTokens(
      params,
      config,
      sequences(5, 9).map((s) => s.ids),
      { entropy: true, temperature: 0.7 },
    ),
  );
}

test("scoring and KV-cache sampling agree across engines", async () => {
  const params = initGpt(config, keyFromSeed(5));
  const [a, b] = [await scored("jax", params), await scored("onnx", params)];
  a.logprobs.forEach((row, i) => {
    row.forEach((v, t) => {
      assert.ok(Math.abs(v - b.logprobs[i][t]) < 5e-5, `logprob ${i},${t}`);
      assert.ok(Math.abs(a.entropy![i][t] - b.entropy![i][t]) < 5e-5, `entropy ${i},${t}`);
    });
  });
  const sample = (engine: EngineName) =>
    withEngine(engine, async () => {
      const session = new DecodeSession(params, config, { rows: 3, prefillChunk: 4, recentSlots: 4 });
      const prompts = sequences(3, 11).map((s) => s.ids.slice(0, 5 + (s.ids.length % 7)));
      prompts.forEach((prompt, slot) => {
        session.feed(slot, prompt);
      });
      const results = await session.generate(
        prompts.map((_, slot) => ({
          slot,
          maxNew: 12,
          stop: [],
          rng: createRng(100 + slot),
          sampling: { temperature: 1, topP: 1 },
        })),
      );
      session.dispose();
      return results;
    });
  const [x, y] = [await sample("jax"), await sample("onnx")];
  x.forEach((want, slot) => {
    assert.deepEqual(y[slot].ids, want.ids, `slot ${slot} tokens`);
    want.logprobs.forEach((lp, t) => {
      assert.ok(Math.abs(lp - y[slot].logprobs[t]) < 2e-5, `slot ${slot} step ${t}`);
    });
  });
  disposeTree(params);
});

test("a checkpoint trained on ONNX Runtime scores the same on jax-js", async () => {
  const dir = await mkdtemp(join(tmpdir(), "agentrl-engines-"));
  try {
    const trained = await train("onnx", 8);
    const words = createWordTokenizer([]).vocabSize;
    const tokenizer = createWordTokenizer(
      Array.from({ length: config.vocabSize - words }, (_, i) => `w${i}`),
    );
    const params = treeFromHost<GptParams>(trained.params);
    await saveModelCheckpoint(join(dir, "ckpt"), { params, config, tokenizer });
    disposeTree(params);
    const loaded = await loadModelCheckpoint(join(dir, "ckpt"));
    const [a, b] = [await scored("jax", loaded.params), await scored("onnx", loaded.params)];
    a.logprobs.forEach((row, i) => {
      row.forEach((v, t) => {
        assert.ok(Math.abs(v - b.logprobs[i][t]) < 5e-5, `logprob ${i},${t}`);
      });
    });
    disposeTree(loaded.params);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("memory stays flat over many ONNX train steps and scoring calls", async () => {
  await withEngine("onnx", async () => {
    const trainer = createTrainer({ loss: tokenLoss(config, crossEntropy) });
    let state = trainer.init(initGpt(config, keyFromSeed(7)));
    const batches = () => makeTokenBatches(sequences(8, 1), { maxLen: config.maxLen, microBatchSize: 4 });
    const measure = () => {
      global.gc?.();
      return { wasm: wasmMemoryBytes(), rss: process.memoryUsage().rss };
    };
    let before = measure();
    for (let step = 0; step < 60; step++) {
      const [next] = await trainer.step(state, batches(), 1e-3);
      state = next;
      const out = await scoreTokens(state.params, config, [[1, 2, 3, 4]]); // does not consume
      assert.equal(out.logprobs.length, 1);
      if (step === 9) before = measure(); // after the sessions and arenas are built
    }
    const afterSteps = measure();
    assert.equal(afterSteps.wasm, before.wasm, "jax-js heap grew");
    assert.ok(
      afterSteps.rss - before.rss < 64 * 2 ** 20,
      `RSS grew by ${(afterSteps.rss - before.rss) / 2 ** 20} MiB`,
    );
    disposeTree(state.params);
    disposeTree(state.opt as never);
    trainer.dispose();
  });
});
