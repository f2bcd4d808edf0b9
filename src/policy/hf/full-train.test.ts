/**
 * Full fine-tuning through the lab's trainer (tuning.ts with `lora: false`, on the tiny Qwen3):
 * compiled AdamW steps over every weight lower the loss of a target continuation; the engine model
 * of the trained weights (what the next rollout samples with) decodes what they predict, not what
 * the checkpoint did, through the same KV-cache decode programs (nothing baked); the saved folder
 * loads through `hf:` with the engine's logits and greedy continuation; the checkpoint as loaded
 * is not touched; and a checkpoint's state (weights, AdamW moments, step) resumes exactly.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createRng } from "../../core/random.ts";
import { np } from "../../engine/jax.ts";
import { disposeTree, flattenTree, treeToHost } from "../../engine/tree.ts";
import { DecodeSession } from "../embedded/decode-session.ts";
import { crossEntropy, type TokenBatch } from "../embedded/losses.ts";
import { HfEngineModel } from "./engine.ts";
import { FIXTURES, maxAbsDiff, readReference } from "./testing-fixtures.ts";
import { openHfTuning } from "./tuning.ts";
import { loadHfCheckpoint } from "./weights.ts";

const NAME = "qwen3-tied";
const NEW = 12;

/** The greedy continuation of `prompt` through the model's KV-cache decode. */
async function greedy(model: HfEngineModel, prompt: readonly number[]): Promise<number[]> {
  const session = new DecodeSession(model.kvModel, null, { rows: 1 });
  try {
    session.feed(0, prompt);
    const [result] = await session.generate([
      { slot: 0, maxNew: NEW, stop: [], rng: createRng(0), sampling: { temperature: 0, topP: 1 } },
    ]);
    return result.ids;
  } finally {
    session.dispose();
  }
}

test("full fine-tuning: steps move every weight; rollouts, the saved folder and a resumed state see the trained weights", async (t) => {
  const folder = join(FIXTURES, NAME);
  const out = mkdtempSync(join(tmpdir(), "agentrl-hf-full-"));
  t.after(() => rmSync(out, { recursive: true, force: true }));
  const checkpoint = loadHfCheckpoint(folder);
  const original = Float32Array.from(checkpoint.tensors.embed.data as Float32Array);
  const reference = readReference(NAME);
  const prompt = reference.prompt;
  // A continuation the checkpoint does not predict: the next tokens of another fixture row.
  const target = reference.ids[1].slice(0, NEW);
  const tuning = openHfTuning(checkpoint, folder, false, { loss: crossEntropy });
  assert.equal(tuning.kind, "full");
  const ids = [...prompt, ...target];
  const batch = (): TokenBatch => ({
    ids: np.array(Int32Array.from(ids), { shape: [1, ids.length], dtype: np.int32 }),
    weights: np.array(
      Float32Array.from(ids, (_, i) => (i >= prompt.length ? 1 / NEW : 0)),
      { shape: [1, ids.length] },
    ),
    extra: {},
  });

  let state = tuning.init(0);
  const before = await tuning.engine(state.params, 64);
  // Fed, not baked: the engine model of trained weights has no fixed parameters.
  assert.equal(before.kvModel.fixedParams, undefined);
  const greedyBefore = await greedy(before, prompt);
  assert.deepEqual(
    greedyBefore,
    reference.greedy.slice(0, NEW),
    "the untrained engine decodes as transformers",
  );
  assert.notDeepEqual(greedyBefore, target);

  const losses: number[] = [];
  for (let step = 0; step < 12; step++) {
    const [next, result] = await tuning.trainer.step(state, [batch()], 1e-2);
    state = next;
    losses.push(result.loss);
    if (step === 5) await tuning.save(join(out, "checkpoint"), state, { step: state.step });
  }
  assert.ok(losses.at(-1)! < losses[0] / 4, `losses ${losses.map((l) => l.toFixed(3)).join(" ")}`);
  // Every weight moved (the embedding and the norms included), the loaded checkpoint's did not.
  const trained = await treeToHost(state.params);
  for (const [path, tensor] of Object.entries(checkpoint.tensors))
    assert.ok(maxAbsDiff(trained[path].data, tensor.data) > 1e-4, `${path} moved`);
  assert.deepEqual(checkpoint.tensors.embed.data, original);

  // The next rollout's model: the trained weights, through the same decode programs.
  const after = await tuning.engine(state.params, 64);
  const greedyAfter = await greedy(after, prompt);
  assert.deepEqual(greedyAfter, target, "the trained model continues the prompt with the target");
  // The first engine model still serves the checkpoint's weights (no program kept either's).
  assert.deepEqual(await greedy(before, prompt), greedyBefore);

  // The saved folder, loaded as any hf: checkpoint (its decode programs bake its weights in).
  const modelDir = join(out, "model");
  assert.equal(await tuning.saveModel(modelDir, state.params, join(out, "adapter")), false);
  const reloaded = HfEngineModel.load(modelDir);
  try {
    const row = Int32Array.from(ids);
    const diff = maxAbsDiff(reloaded.logits(row, 1), after.logits(row, 1));
    assert.ok(diff <= 1e-5, `saved folder's logits differ from the engine's by ${diff}`);
    assert.ok(maxAbsDiff(reloaded.logits(row, 1), before.logits(row, 1)) > 1e-2);
    assert.deepEqual(await greedy(reloaded, prompt), target);
  } finally {
    for (const model of [before, after, reloaded]) model.dispose();
  }

  // Resume: the state saved after step 6 continues as the run did (same loss at step 7).
  const resumed = await tuning.load(join(out, "checkpoint"));
  assert.equal(resumed.state.step, 6);
  assert.deepEqual(resumed.trainer, { step: 6 });
  const [, again] = await tuning.trainer.step(resumed.state, [batch()], 1e-2);
  assert.ok(Math.abs(again.loss - losses[6]) < 1e-5, `resumed step 7 loss ${again.loss}, run ${losses[6]}`);
  assert.equal(
    flattenTree(resumed.state.opt).length,
    1 + 2 * Object.keys(checkpoint.tensors).length,
    "AdamW's count and two moments per weight",
  );
  tuning.trainer.dispose();
  disposeTree(state.params as never);
  disposeTree(state.opt as never);
});
