import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { register as registerTrain } from "../cli/commands/train.ts";
import { runCli } from "../cli/testing.ts";
import { collectDataset } from "../data/collect.ts";
import { loadDataset } from "../data/dataset.ts";
import { stitchDataset } from "../data/stitch.ts";
import { keyFromSeed } from "../engine/init.ts";
import { runEpisodes } from "../env/run-episodes.ts";
import { rolloutTasks, worldToolsFor } from "../env/task-set.ts";
import { makeTokenBatches } from "../policy/embedded/batch.ts";
import { saveModelCheckpoint } from "../policy/embedded/checkpoint.ts";
import { initGpt } from "../policy/embedded/model.ts";
import { createWordTokenizer } from "../policy/embedded/tokenizer.ts";
import { resolvePolicy } from "../policy/resolve.ts";
import { embeddedVocabulary, encodeEpisode } from "../pretrain/corpus.ts";
import { createRunDirectory } from "../store/index.ts";
import { checkAnswer } from "../world/index.ts";
import { parseSftConfig } from "./config.ts";
import { isHeldoutTask, loadSftData, sftBatchPlan } from "./data.ts";
import { interruptAndResume } from "./testing.ts";
import { trainSft } from "./train.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-sft-"));
after(() => rmSync(root, { recursive: true, force: true }));
const tokenizer = createWordTokenizer(embeddedVocabulary());
const modelConfig = {
  vocabSize: tokenizer.vocabSize,
  dModel: 32,
  nLayers: 1,
  nHeads: 2,
  dFF: 64,
  maxLen: 128,
};
const base = join(root, "base");
await saveModelCheckpoint(base, {
  config: modelConfig,
  tokenizer,
  params: initGpt(modelConfig, keyFromSeed(1)),
  metadata: { name: "tiny-base" },
});
const real = join(root, "real");
await collectDataset({ tasks: { count: 60, seed: 1, family: "lookup" }, seed: 1, noise: 0.3, out: real });
const stitched = join(root, "stitched");
stitchDataset({ tasks: { count: 30, seed: 2, family: "bridge" }, out: stitched });

test("the SFT loss mask covers exactly the policy's tokens, and so do the batch weights", async () => {
  const { trajectories } = loadDataset(real);
  const withFailure = trajectories.filter((t) => t.turns.some((turn) => turn.toolResult?.status !== "ok"));
  assert.ok(withFailure.length > 0, "noisy data has failed calls whose error observations must be masked");
  for (const trajectory of trajectories) {
    const encoded = encodeEpisode(trajectory, tokenizer, 1024)!;
    // Rebuild the expected mask piece by piece: prompt 0, each turn's text 1, its observation 0.
    const expected: number[] = [...tokenizer.encode(trajectory.prompt.text).map(() => 0)];
    for (const turn of trajectory.turns) {
      expected.push(...tokenizer.encode(turn.text).map(() => 1));
      if (turn.observation) expected.push(...tokenizer.encode(turn.observation.text).map(() => 0));
    }
    assert.deepEqual(encoded.mask, expected);
    assert.ok(!encoded.ids.includes(tokenizer.unkId), "every word of the data is in the base's vocabulary");
    const policyText = tokenizer.decode(encoded.ids.filter((_, i) => encoded.mask[i] === 1));
    assert.equal(
      policyText,
      tokenizer.decode(trajectory.turns.flatMap((turn) => tokenizer.encode(turn.text))),
    );
    assert.ok(
      !policyText.includes("<obs>") && !policyText.includes("<q>"),
      "no prompt or tool output in the loss",
    );
  }
  const episodes = trajectories.slice(0, 5).map((t) => encodeEpisode(t, tokenizer, 128)!);
  const [batch] = makeTokenBatches(episodes, { maxLen: 128, microBatchSize: 5, lengthMultiple: 128 });
  const weights = await batch.weights.data();
  batch.ids.dispose();
  episodes.forEach((episode, row) => {
    for (let t = 0; t < 128; t++) {
      const policy = t > 0 && t < episode.ids.length && episode.mask[t] === 1;
      assert.equal(weights[row * 128 + t] > 0, policy, `row ${row} position ${t}`);
    }
  });
});

test("held-out split is by task and the batch plan is a pure function of the step", () => {
  const data = loadSftData({
    data: [real, stitched],
    tokenizer,
    maxLen: 128,
    correctOnly: true,
    heldoutFraction: 0.2,
    seed: 3,
  });
  const trainTasks = new Set(data.train.map((e) => e.taskId));
  assert.ok(data.heldout.length > 0 && data.heldout.every((e) => !trainTasks.has(e.taskId)));
  assert.ok(data.heldout.every((e) => isHeldoutTask(e.taskId, 3, 0.2)));
  assert.equal(
    data.counts.trajectories,
    data.train.length + data.heldout.length + data.counts.droppedTooLong,
  );
  const lengths = data.train.map((e) => e.ids.length);
  const options = { buckets: [64, 128], tokensPerStep: 512, seed: 5 };
  const plan = sftBatchPlan(lengths, options);
  const again = sftBatchPlan(lengths, options);
  const seen: number[] = [];
  for (let step = 0; step < plan.batchesPerEpoch; step++) {
    const batch = plan.batch(step);
    assert.equal(batch.epoch, 0);
    assert.ok(batch.indices.length <= Math.floor(512 / batch.length));
    assert.ok(
      batch.indices.every((i) => lengths[i] <= batch.length && (batch.length === 64 || lengths[i] > 64)),
    );
    seen.push(...batch.indices);
  }
  assert.deepEqual(
    [...seen].sort((a, b) => a - b),
    lengths.map((_, i) => i),
    "every episode exactly once per epoch",
  );
  const later = plan.batchesPerEpoch + 2;
  assert.deepEqual(plan.batch(later), again.batch(later), "same step, same batch, whatever came before");
  assert.equal(plan.batch(later).epoch, 1);
});

test("sft config: defaults, and errors that name the field and the valid values", () => {
  const config = parseSftConfig({ data: ["runs/x"] });
  assert.equal(config.base, "models/base-strong");
  assert.throws(() => parseSftConfig({ data: [] }), /data: Too small/i);
  assert.throws(() => parseSftConfig({ data: ["x"], steps: 0 }), /steps:/);
  assert.throws(
    () => parseSftConfig({ data: ["x"], lr: 1 }),
    /unrecognized key.*"lr".*valid fields: name, base, data/is,
  );
  assert.throws(
    () => parseSftConfig({ data: ["x"], buckets: [128, 64] }),
    /buckets: must be strictly ascending/,
  );
});

test("SFT smoke: loss falls, held-out loss reported, the model loads as a policy, resume continues exactly", async () => {
  const config = parseSftConfig({
    name: "tiny-sft",
    base,
    data: [real, stitched],
    steps: 12,
    tokensPerStep: 1024,
    microBatchTokens: 512,
    buckets: [64, 128],
    learningRate: 3e-3,
    warmupSteps: 2,
    heldoutEvery: 6,
    checkpointEvery: 100,
    seed: 1,
  });
  // Straight run.
  const straight = createRunDirectory({ kind: "sft", root, id: "straight", config });
  const result = await trainSft({
    config,
    runDir: straight.directory,
    store: straight.store,
    runId: straight.run.id,
  });
  const losses = straight.store.metrics(straight.run.id, "loss/train").map((m) => m.value);
  const heldout = straight.store.metrics(straight.run.id, "loss/heldout");
  straight.store.close();
  assert.equal(losses.length, 12);
  assert.ok(losses.every(Number.isFinite));
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  assert.ok(
    mean(losses.slice(-3)) < mean(losses.slice(0, 3)) - 0.3,
    `loss ${losses.map((x) => x.toFixed(2))}`,
  );
  assert.deepEqual(
    heldout.map((m) => m.step),
    [0, 6, 12],
  );
  assert.ok(result.initialHeldoutLoss !== null && result.finalHeldoutLoss! < result.initialHeldoutLoss);
  assert.equal(result.startStep, 0);

  // The fine-tuned model is a policy.
  const policy = await resolvePolicy(result.modelDir, { temperature: 1 });
  const [episode] = await runEpisodes({
    policy,
    episodes: [{ task: rolloutTasks({ split: "test", count: 1, seed: 1 })[0], seed: 1 }],
    tools: worldToolsFor(),
    verify: checkAnswer,
  });
  assert.ok(episode.turns.length > 0);
  await policy.close?.();

  // Interrupted at step 5 (the signal saves a checkpoint), then resumed: same losses as straight.
  const { resumed, store } = await interruptAndResume(root, "interrupted", config, 5);
  assert.equal(resumed.initialHeldoutLoss, result.initialHeldoutLoss, "carried over in the checkpoint");
  const resumedLosses = store.metrics("interrupted", "loss/train").map((m) => m.value);
  store.close();
  assert.equal(resumedLosses.length, 12);
  for (const [i, loss] of resumedLosses.entries()) {
    assert.ok(Math.abs(loss - losses[i]) < 1e-5, `step ${i + 1}: ${loss} vs ${losses[i]}`);
  }
});

test("agentrl train sft: flags over the config, JSON result, a bad flag named", async () => {
  const { out } = await runCli(registerTrain, [
    "train",
    "sft",
    "--data",
    real,
    "--base",
    base,
    "--steps",
    "2",
    "--name",
    "cli-sft",
    "--runs",
    root,
    "--run-id",
    "cli",
    "--json",
  ]);
  const result = JSON.parse(out.join("\n"));
  assert.equal(result.steps, 2);
  assert.equal(result.modelDir, join(root, "cli", "model"));
  assert.ok(existsSync(join(result.modelDir, "checkpoint.json")));
  await assert.rejects(
    runCli(registerTrain, ["train", "sft", "--data", real, "--steps", "0"]),
    /--steps must be an integer >= 1/,
  );
});
