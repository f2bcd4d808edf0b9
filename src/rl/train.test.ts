import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createTrainer } from "../engine/train.ts";
import { disposeTree, treeToHost } from "../engine/tree.ts";
import { runEpisodes } from "../env/run-episodes.ts";
import { rolloutTasks, worldToolsFor } from "../env/task-set.ts";
import { makeTokenBatches } from "../policy/embedded/batch.ts";
import { loadModelCheckpoint } from "../policy/embedded/checkpoint.ts";
import { EmbeddedPolicy } from "../policy/embedded/embedded-policy.ts";
import type { TokenBatch } from "../policy/embedded/losses.ts";
import { tokenLoss } from "../policy/embedded/losses.ts";
import type { GptParams } from "../policy/embedded/model.ts";
import { scoreTokens } from "../policy/embedded/score.ts";
import { createRunDirectory, openRunDirectory, type Store } from "../store/index.ts";
import { flattenTrajectory } from "../types/trajectory.ts";
import { checkAnswer } from "../world/index.ts";
import { assembleSequences } from "./assemble.ts";
import { ppoLoss } from "./loss.ts";
import { saveTinyBase, stallResumeChild, tinyRlConfig } from "./testing.ts";
import { type RlUpdateBatch, trainRl } from "./train.ts";

async function hostParams(dir: string): Promise<Map<string, Float32Array>> {
  const checkpoint = await loadModelCheckpoint(dir);
  const host = await treeToHost(checkpoint.params);
  disposeTree(checkpoint.params);
  if (checkpoint.training) disposeTree(checkpoint.training.opt as never);
  return new Map(Object.entries(host).map(([path, tensor]) => [path, tensor.data as Float32Array]));
}

function changedLeaves(a: Map<string, Float32Array>, b: Map<string, Float32Array>): number {
  let changed = 0;
  for (const [path, values] of a) if (values.some((value, i) => value !== b.get(path)![i])) changed++;
  return changed;
}

function metricAt(store: Store, runId: string, key: string, step: number): number | undefined {
  return store.metrics(runId, key).find((point) => point.step === step)?.value;
}

/** ±1 advantages on the policy tokens (so every update moves the params), NaN on one token at `nanStep`. */
function forceAdvantages(nanStep: number) {
  return (batch: RlUpdateBatch) => {
    batch.advantages = batch.trajectories.map((trajectory, i) => {
      const flat = flattenTrajectory(trajectory);
      return Float32Array.from(flat.lossMask, (m) => (m ? (i % 2 === 0 ? 1 : -1) : 0));
    });
    if (batch.step === nanStep)
      batch.advantages[0][flattenTrajectory(batch.trajectories[0]).lossMask.indexOf(1)] = Number.NaN;
  };
}

test("a NaN advantage undoes the step: params unchanged, logged, the good checkpoint untouched", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-rl-nan-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const config = tinyRlConfig(await saveTinyBase(3, root), {
    steps: 3,
    checkpointEvery: 1,
    keepCheckpoints: 0,
  });
  const { directory, store, run } = createRunDirectory({ kind: "rl", root, config, id: "nan" });
  const checkpoint = (step: number) => join(directory, "checkpoints", `step-00000${step}`);
  let afterStep1: { sums: string; mtime: number } | null = null;
  const result = await trainRl({
    config,
    runDir: directory,
    store,
    runId: run.id,
    transformBatch: forceAdvantages(2),
    onProgress: ({ step }) => {
      if (step !== 1) return;
      const sums = join(checkpoint(1), "SHA256SUMS");
      afterStep1 = { sums: readFileSync(sums, "utf8"), mtime: statSync(sums).mtimeMs };
    },
  });
  assert.deepEqual(result.skipped.nonfinite, [2]);
  assert.deepEqual(
    [1, 2, 3].map((step) => metricAt(store, run.id, "train/skipped_nonfinite", step)),
    [0, 1, 0],
  );
  const [base, one, two, three] = await Promise.all([
    hostParams(config.base),
    hostParams(checkpoint(1)),
    hostParams(checkpoint(2)),
    hostParams(checkpoint(3)),
  ]);
  assert.equal(changedLeaves(base, one), base.size, "step 1 moved every parameter");
  assert.equal(changedLeaves(one, two), 0, "the NaN step left the params exactly as they were");
  assert.ok(changedLeaves(two, three) > 0, "step 3 trained again");
  const sums = join(checkpoint(1), "SHA256SUMS");
  assert.deepEqual({ sums: readFileSync(sums, "utf8"), mtime: statSync(sums).mtimeMs }, afterStep1);
  // The optimizer state was restored too: step 2's checkpoint counts one update, like step 1's.
  const [opt1, opt2] = await Promise.all([
    loadModelCheckpoint(checkpoint(1)),
    loadModelCheckpoint(checkpoint(2)),
  ]);
  assert.equal(opt2.training!.step, opt1.training!.step);
  for (const loaded of [opt1, opt2]) {
    disposeTree(loaded.params);
    disposeTree(loaded.training!.opt as never);
  }
  store.close();
});

test("dynamic sampling: groups without signal are dropped, refilled up to the cap, and no update happens", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-rl-dyn-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  // A random tiny model never answers: every group's rewards tie (all format failures).
  const config = tinyRlConfig(await saveTinyBase(4, root), {
    steps: 1,
    reward: "exact-match",
    estimator: "grpo",
    dynamicSampling: true,
    maxExtraRollouts: 8,
  });
  const { directory, store, run } = createRunDirectory({ kind: "rl", root, config, id: "dyn" });
  const result = await trainRl({ config, runDir: directory, store, runId: run.id });
  assert.equal(store.countTrajectories(run.id, { step: 1 }), 16, "8 episodes, then 8 extra (the cap)");
  assert.equal(metricAt(store, run.id, "rollout/extra_rollouts", 1), 8);
  assert.equal(metricAt(store, run.id, "rollout/kept_groups", 1), 0);
  assert.equal(metricAt(store, run.id, "rollout/zero_variance_group_fraction", 1), 1);
  assert.equal(metricAt(store, run.id, "train/skipped_no_signal", 1), 1);
  assert.deepEqual(result.skipped.noSignal, [1]);
  assert.equal(changedLeaves(await hostParams(config.base), await hostParams(result.modelDir)), 0);
  store.close();
});

test("kill -9 mid-step, then resume: every step's trajectories stored once, none lost, same episodes", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-rl-resume-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const config = tinyRlConfig(await saveTinyBase(5, root), {
    steps: 4,
    checkpointEvery: 2,
    evalEvery: 2,
    evalTasks: 2,
    evalSamples: 2,
  });
  const created = createRunDirectory({ kind: "rl", root, config, id: "resume" });
  created.store.close();
  const directory = created.directory;

  // The child stalls inside step 3, after storing its trajectories and before updating.
  const child = await stallResumeChild(directory, 3);
  const peek = openRunDirectory(directory);
  assert.equal(peek.countTrajectories("resume", { step: 3 }), 8, "step 3's trajectories are stored");
  assert.equal(peek.latestArtifact("resume", "checkpoint")?.step, 2);
  const killedStep3 = peek.trajectories("resume", { step: 3 });
  const killedSeqs = [...peek.iterateTrajectories("resume", { step: 3 })].map((stored) => stored.seq);
  peek.close();
  await child.kill();

  const store = openRunDirectory(directory);
  const result = await trainRl({ config, runDir: directory, store, runId: "resume" });
  assert.equal(result.startStep, 2);
  assert.deepEqual(
    [1, 2, 3, 4].map((step) => store.countTrajectories("resume", { step })),
    [8, 8, 8, 8],
  );
  const ids = store.trajectories("resume").map((trajectory) => trajectory.id);
  assert.equal(ids.length, 32);
  assert.equal(new Set(ids).size, 32, "no duplicate episode");
  // Steps draw the same tasks and seeds, and the checkpoint restores the params exactly: the
  // re-run step 3 sampled the very episodes the killed process had stored.
  const rerun = store.trajectories("resume", { step: 3 });
  // …and those are the stored ones: the killed process's rows were truncated and written anew
  // (an idempotent insert alone would have kept the dead process's rows).
  const rerunSeqs = [...store.iterateTrajectories("resume", { step: 3 })].map((stored) => stored.seq);
  assert.ok(Math.min(...rerunSeqs) > Math.max(...killedSeqs));
  assert.deepEqual(
    rerun.map((t) => [t.id, t.taskId, ...t.turns.flatMap((turn) => turn.tokenIds)]),
    killedStep3.map((t) => [t.id, t.taskId, ...t.turns.flatMap((turn) => turn.tokenIds)]),
  );
  assert.deepEqual(
    store.metrics("resume", "reward/mean").map((point) => point.step),
    [1, 2, 3, 4],
  );
  assert.deepEqual(
    store.metrics("resume", "eval/pass@1").map((point) => point.step),
    [0, 2, 4],
  );
  assert.deepEqual(
    result.boundary.map((point) => point.step),
    [0, 2, 4],
  );
  store.close();
});

test("log-probs recorded at sampling equal the trainer's recomputed ones at the same temperature", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-rl-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const base = await saveTinyBase(6, root);
  const model = await loadModelCheckpoint(base);
  const temperature = 0.7;
  const policy = new EmbeddedPolicy(model, { temperature, capacity: 8, seed: 1 });
  const tasks = rolloutTasks({ split: "train", count: 4, seed: 2, family: "lookup" });
  const trajectories = await runEpisodes({
    policy,
    episodes: tasks.flatMap((task, i) => [0, 1].map((e) => ({ task, seed: 10 * i + e }))),
    tools: worldToolsFor(),
    verify: checkAnswer,
    budgets: { maxTurns: 3, maxTokens: 24, maxTurnTokens: 8 },
  });
  await policy.close();
  let compared = 0;
  const scored = await scoreTokens(
    model.params,
    model.config,
    trajectories.map((t) => flattenTrajectory(t).tokenIds),
    { temperature },
  );
  trajectories.forEach((trajectory, i) => {
    const flat = flattenTrajectory(trajectory);
    flat.lossMask.forEach((m, t) => {
      if (!m) return;
      compared++;
      assert.ok(
        Math.abs(flat.logprobs[t] - scored.logprobs[i][t]) < 1e-4,
        `token ${t}: sampled ${flat.logprobs[t]}, scored ${scored.logprobs[i][t]}`,
      );
    });
  });
  assert.ok(compared > 50);
  // Through the PPO loss itself: before any update every ratio is 1 and KL(old‖new) is 0.
  const trainer = createTrainer<GptParams, TokenBatch>({
    loss: tokenLoss(model.config, ppoLoss(), { temperature, entropy: true }),
  });
  const sequences = assembleSequences(
    trajectories,
    trajectories.map((t) => new Float32Array(flattenTrajectory(t).tokenIds.length)),
    { aggregation: "token-mean", normLength: 24, maxLen: model.config.maxLen },
  );
  const { metrics, grads } = await trainer.gradients(
    model.params,
    makeTokenBatches(sequences, { maxLen: model.config.maxLen, normalization: "sum" }),
  );
  disposeTree(grads);
  trainer.dispose();
  assert.ok(Math.abs(metrics["policy/ratio"] - 1) < 1e-4, `mean ratio ${metrics["policy/ratio"]}`);
  assert.ok(Math.abs(metrics["policy/kl_old"]) < 1e-6, `kl_old ${metrics["policy/kl_old"]}`);
  disposeTree(model.params);
});

test("several PPO epochs and mini-batches, with a KL penalty to the frozen base", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-rl-ppo-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const config = tinyRlConfig(await saveTinyBase(7, root), {
    steps: 1,
    ppoEpochs: 2,
    miniBatches: 2,
    klCoef: 0.1,
    klEstimator: "k3",
    aggregation: "seq-mean-token-sum-norm",
  });
  const { directory, store, run } = createRunDirectory({ kind: "rl", root, config, id: "ppo" });
  await trainRl({ config, runDir: directory, store, runId: run.id, transformBatch: forceAdvantages(-1) });
  const at = (key: string) => metricAt(store, run.id, key, 1)!;
  assert.equal(at("optim/updates"), 4);
  // The first update sees the sampling policy itself; the later ones a moved policy.
  assert.ok(Math.abs(at("policy/kl_sampler")) < 1e-6, `kl_sampler ${at("policy/kl_sampler")}`);
  assert.ok(at("policy/kl_old") > 0, "the policy moved between updates");
  assert.ok(at("policy/kl_ref") > 0, "and away from the reference");
  assert.ok(Number.isFinite(at("loss/total")));
  store.close();
});

test("MT-PPO (estimator gae) end to end: the base gets a value head, the critic trains and resumes", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-rl-gae-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  // DemyAgent's reward: a random tiny model never answers right, so every return is −1 + 0.1·calls,
  // far from the fresh head's 0: the critic has something to learn.
  const config = tinyRlConfig(await saveTinyBase(8, root), {
    steps: 2,
    estimator: "gae",
    reward: "demyagent",
    ppoEpochs: 2,
    miniBatches: 2,
    valueCoef: 0.5,
    checkpointEvery: 1,
    keepCheckpoints: 0,
  });
  assert.equal((await loadModelCheckpoint(config.base)).params.value, undefined, "the base has no head");
  const { directory, store, run } = createRunDirectory({ kind: "rl", root, config, id: "gae" });
  const result = await trainRl({ config, runDir: directory, store, runId: run.id });
  for (const step of [1, 2]) {
    for (const key of [
      "value/loss",
      "value/explained_variance",
      "value/mean",
      "value/return_mean",
      "loss/total",
    ]) {
      const value = metricAt(store, run.id, key, step);
      assert.ok(value !== undefined && Number.isFinite(value), `${key} at step ${step}: ${value}`);
    }
  }
  assert.ok(metricAt(store, run.id, "value/return_mean", 1)! < -0.5, "wrong answers: returns near −1");
  // The head moved toward the negative returns between step 1 and step 2 (V_old of step 2 is lower).
  assert.ok(
    metricAt(store, run.id, "value/mean", 2)! < metricAt(store, run.id, "value/mean", 1)!,
    `value/mean ${metricAt(store, run.id, "value/mean", 1)} → ${metricAt(store, run.id, "value/mean", 2)}`,
  );
  // The step-1 checkpoint carries the head and its optimizer moments; the final model the head.
  const checkpoint = await loadModelCheckpoint(join(directory, "checkpoints", "step-000001"));
  assert.ok(checkpoint.params.value && checkpoint.training);
  const opt = await treeToHost(checkpoint.training.opt as never);
  assert.ok(
    opt["mu.value.w"].data.some((v) => v !== 0),
    "Adam moments of the head are saved",
  );
  const final = await hostParams(result.modelDir);
  assert.ok(
    final.get("value.w")!.some((v) => v !== 0),
    "the final model's head was trained",
  );
  disposeTree(checkpoint.params);
  disposeTree(checkpoint.training.opt as never);
  // Resume from the step-2 checkpoint for a third step: the head comes back from the checkpoint.
  const resumed = await trainRl({ config: { ...config, steps: 3 }, runDir: directory, store, runId: run.id });
  assert.equal(resumed.startStep, 2);

  assert.ok(Number.isFinite(metricAt(store, run.id, "value/loss", 3)!));
  // The values keep falling from where step 2 left them (a fresh zero head would start over near
  // step 1's value/mean, above step 2's).
  assert.ok(
    metricAt(store, run.id, "value/mean", 3)! < metricAt(store, run.id, "value/mean", 2)!,
    "the resumed head is the trained one, not a fresh zero head",
  );
  store.close();
});
