import assert from "node:assert/strict";
import { test } from "node:test";
import { keyFromSeed } from "../engine/init.ts";
import { adamw } from "../engine/optim.ts";
import { createTrainer } from "../engine/train.ts";
import { disposeTree, refTree, treeToHost } from "../engine/tree.ts";
import { makeTokenBatches } from "../policy/embedded/batch.ts";
import type { GptConfig } from "../policy/embedded/config.ts";
import { crossEntropy, type TokenBatch, tokenLoss } from "../policy/embedded/losses.ts";
import { type GptParams, initGpt } from "../policy/embedded/model.ts";

const config: GptConfig = { vocabSize: 20, dModel: 16, nLayers: 1, nHeads: 2, dFF: 32, maxLen: 32 };

// The RL update runs the engine trainer's step over micro-batches (src/rl/ppo-update.ts).
test("the micro-batched step equals the fused whole-batch step on the GPT loss", async () => {
  const sequences = Array.from({ length: 6 }, (_, row) => ({
    ids: Array.from({ length: 10 + row }, (_, t) => (row * 5 + t * 3) % config.vocabSize),
    mask: Array.from({ length: 10 + row }, (_, t) => (t > 3 ? 1 : 0)),
  }));
  const batches = (rows: number) =>
    makeTokenBatches(sequences, { maxLen: config.maxLen, microBatchSize: rows, normalization: "token-mean" });
  const options = {
    loss: tokenLoss(config, crossEntropy),
    optimizer: adamw({ weightDecay: 0.1 }),
    maxGradNorm: 0.5,
  };
  const params = initGpt(config, keyFromSeed(2));
  const engine = createTrainer<GptParams, TokenBatch>(options);
  const [whole, wholeResult] = await engine.step(engine.init(refTree(params)), batches(6), 1e-2);
  const [micro, microResult] = await engine.step(engine.init(params), batches(2), 1e-2); // 3 micro-batches
  assert.ok(Math.abs(wholeResult.loss - microResult.loss) < 1e-6);
  assert.ok(Math.abs(wholeResult.gradNorm - microResult.gradNorm) < 1e-5);
  assert.ok(wholeResult.gradNorm > 0.5, "clipping was active");
  const [a, b] = [await treeToHost(whole.params), await treeToHost(micro.params)];
  let worst = 0;
  for (const [path, tensor] of Object.entries(a)) {
    tensor.data.forEach((value, i) => {
      worst = Math.max(worst, Math.abs(value - b[path].data[i]));
    });
  }
  assert.ok(worst < 1e-6, `params differ by ${worst}`);
  assert.equal(micro.step, 1);
  for (const state of [whole, micro]) {
    disposeTree(state.params);
    disposeTree(state.opt as never);
  }
  engine.dispose();
});
