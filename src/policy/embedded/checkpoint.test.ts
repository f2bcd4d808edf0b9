import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { CheckpointError, saveCheckpoint } from "../../engine/checkpoint.ts";
import { keyFromSeed, keyFromWords, keyToWords } from "../../engine/init.ts";
import { np } from "../../engine/jax.ts";
import { createTrainer } from "../../engine/train.ts";
import { disposeTree, type HostTensor, treeToHost } from "../../engine/tree.ts";
import { makeTokenBatches } from "./batch.ts";
import { loadModelCheckpoint, saveModelCheckpoint } from "./checkpoint.ts";
import type { GptConfig } from "./config.ts";
import { crossEntropy, type TokenBatch, tokenLoss } from "./losses.ts";
import { type GptParams, initGpt, initValueHead, tokenStats, withoutValueHead } from "./model.ts";
import { createWordTokenizer } from "./tokenizer.ts";

const root = await mkdtemp(join(tmpdir(), "agentrl-ckpt-"));
after(() => rm(root, { recursive: true, force: true }));

const tokenizer = createWordTokenizer(["alpha", "beta", "gamma"]);
const config: GptConfig = {
  vocabSize: tokenizer.vocabSize,
  dModel: 8,
  nLayers: 1,
  nHeads: 2,
  dFF: 16,
  maxLen: 16,
};
const sequences = Array.from({ length: 6 }, (_, i) => ({
  ids: [i + 1, i + 2, i + 3, i + 4, 2],
  mask: [0, 0, 1, 1, 1],
}));

function assertSameTensors(a: Record<string, HostTensor>, b: Record<string, HostTensor>) {
  assert.deepEqual(Object.keys(a).sort(), Object.keys(b).sort());
  for (const name of Object.keys(a)) {
    assert.deepEqual(b[name].shape, a[name].shape, name);
    assert.deepEqual(
      new Uint8Array(b[name].data.buffer),
      new Uint8Array(a[name].data.buffer),
      `${name} differs`,
    );
  }
}

test("round trip is bit-exact and resuming continues exactly", async () => {
  const trainer = createTrainer({ loss: tokenLoss(config, crossEntropy) });
  const batches = () => makeTokenBatches(sequences, { maxLen: 16 });
  // Three uninterrupted steps…
  let straight = trainer.init(initGpt(config, keyFromSeed(1)));
  for (let i = 0; i < 3; i++) [straight] = await trainer.step(straight, batches(), 1e-2);
  // …versus two steps, a save and load, and a third step.
  let resumed = trainer.init(initGpt(config, keyFromSeed(1)));
  for (let i = 0; i < 2; i++) [resumed] = await trainer.step(resumed, batches(), 1e-2);
  const dir = join(root, "resume");
  const rngKey = await keyToWords(keyFromSeed(42));
  await saveModelCheckpoint(dir, {
    config,
    tokenizer,
    params: resumed.params,
    training: { step: resumed.step, opt: resumed.opt, rngKey, state: { cursor: 12, note: "x" } },
    metadata: { corpus: "test" },
  });
  const loaded = await loadModelCheckpoint(dir);
  assert.deepEqual(loaded.config, config);
  assert.deepEqual(loaded.tokenizer.tokens, tokenizer.tokens);
  assert.deepEqual(loaded.metadata, { corpus: "test" });
  assert.ok(loaded.training);
  assert.equal(loaded.training.step, 2);
  assert.deepEqual(loaded.training.rngKey, rngKey);
  assert.deepEqual(await keyToWords(keyFromWords(loaded.training.rngKey!)), rngKey);
  assert.deepEqual(loaded.training.state, { cursor: 12, note: "x" });
  assertSameTensors(await treeToHost(resumed.params), await treeToHost(loaded.params));
  assertSameTensors(await treeToHost(resumed.opt as never), await treeToHost(loaded.training.opt as never));
  disposeTree(resumed.params);
  disposeTree(resumed.opt as never);
  let continued = { params: loaded.params, opt: loaded.training.opt, step: loaded.training.step };
  [continued] = await trainer.step(continued, batches(), 1e-2);
  assertSameTensors(await treeToHost(straight.params), await treeToHost(continued.params));
  for (const state of [straight, continued]) {
    disposeTree(state.params);
    disposeTree(state.opt as never);
  }
  trainer.dispose();
});

test("corrupted, truncated, missing or mismatched files are rejected with the file named", async () => {
  const dir = join(root, "damaged");
  const params = initGpt(config, keyFromSeed(2));
  const save = () => saveModelCheckpoint(dir, { config, tokenizer, params });
  const expectError = async (pattern: RegExp) => {
    await assert.rejects(loadModelCheckpoint(dir), (error: Error) => {
      assert.ok(error instanceof CheckpointError, `${error.name}: ${error.message}`);
      assert.match(error.message, pattern);
      return true;
    });
  };

  await save();
  const weights = join(dir, "model.safetensors");
  const bytes = await readFile(weights);
  bytes[bytes.length - 5] ^= 0x40;
  await writeFile(weights, bytes);
  await expectError(/model\.safetensors is corrupted or truncated/);

  await save();
  await truncate(weights, 100);
  await expectError(/model\.safetensors is corrupted or truncated/);

  await save();
  const manifest = join(dir, "checkpoint.json");
  await writeFile(manifest, (await readFile(manifest, "utf8")).replace('"dModel": 8', '"dModel": 16'));
  await expectError(/checkpoint\.json is corrupted/);

  await save();
  await rm(join(dir, "SHA256SUMS"));
  await expectError(/cannot read SHA256SUMS/);

  await save();
  await rm(weights);
  await expectError(/cannot read model\.safetensors/);

  // Valid checksums but a tensor of the wrong shape (written by hand) is caught by the shape check.
  const host = await treeToHost(params);
  host.wte = { dtype: "float32", shape: [3, 8], data: new Float32Array(24) };
  await saveCheckpoint(dir, {
    manifest: {
      kind: "agentrl-gpt",
      config: { ...config },
      tokenizer: tokenizer.toJSON() as never,
      metadata: {},
    },
    tensors: { model: host },
  });
  await expectError(/"wte" has shape \[3,8\]/);
  disposeTree(params);
});

test("the optional value head round-trips with its optimizer state; a checkpoint without one loads without", async () => {
  // A value-head model trained two steps so the head and its Adam moments are not zero.
  const trainer = createTrainer({
    loss: (params: GptParams, batch: TokenBatch) => {
      const stats = tokenStats(params, batch.ids, config, { values: true, valueGradient: true });
      stats.logprobs.dispose();
      return { loss: np.square(stats.values!.sub(1)).mul(batch.weights).sum(), metrics: {} };
    },
  });
  let state = trainer.init({ ...initGpt(config, keyFromSeed(2)), value: initValueHead(config) });
  for (let i = 0; i < 2; i++)
    [state] = await trainer.step(state, makeTokenBatches(sequences, { maxLen: 16 }), 1e-2);
  const dir = join(root, "value-head");
  await saveModelCheckpoint(dir, {
    config,
    tokenizer,
    params: state.params,
    training: { step: state.step, opt: state.opt },
  });
  const loaded = await loadModelCheckpoint(dir);
  assert.ok(loaded.params.value, "the value head is loaded");
  const saved = await treeToHost(state.params);
  assert.ok(
    saved["value.w"].data.some((v) => v !== 0),
    "the head was trained",
  );
  assertSameTensors(saved, await treeToHost(loaded.params));
  assertSameTensors(await treeToHost(state.opt as never), await treeToHost(loaded.training!.opt as never));
  // A wrong head shape is refused like any other tensor.
  const bad = join(root, "value-head-bad");
  await saveModelCheckpoint(bad, {
    config,
    tokenizer,
    params: { ...state.params, value: { w: np.zeros([config.dModel + 1]), b: np.zeros([1]) } },
  });
  await assert.rejects(loadModelCheckpoint(bad), /tensor "value.w" has shape \[9\], expected \[8\]/);
  // Without a head: no `value` in the params (a shipped base).
  const plain = join(root, "value-head-none");
  await saveModelCheckpoint(plain, { config, tokenizer, params: withoutValueHead(state.params) });
  const base = await loadModelCheckpoint(plain);
  assert.equal(base.params.value, undefined);
  for (const tree of [
    state.params,
    state.opt as never,
    loaded.params,
    loaded.training!.opt as never,
    base.params,
  ])
    disposeTree(tree);
  trainer.dispose();
});
