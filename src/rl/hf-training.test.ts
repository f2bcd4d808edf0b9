/**
 * `train rl` on a Hugging Face checkpoint with LoRA (hf-training.ts), on fixtures/qwen3-chat (a
 * tiny Qwen3 trained on one tool-calling conversation, with the real Qwen3 chat template): the
 * lab's loop samples through the checkpoint's template and tool-call parser, trains the adapter on
 * the ids the model read, and writes a PEFT adapter and a merged folder that load with equal
 * logits; a run killed mid-step resumes from its last adapter checkpoint. With full fine-tuning
 * (`lora: false`) every step samples with the previous step's weights, the checkpoint folders
 * load with the trained logits, and a killed run resumes to the very episodes it had sampled.
 * With `--estimator gae` (MT-PPO) a value head is trained beside the adapter or the weights: the
 * value loss is recorded, GAE reads the values the engine scored with the params the episodes were
 * sampled with, the head lives in the checkpoints' `value_head.safetensors` (not in the adapter
 * or model folders), and a killed run resumes with it.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type TestContext, test } from "node:test";
import { readSafetensorsFile } from "../engine/safetensors.ts";
import { HfEngineModel } from "../policy/hf/engine.ts";
import { loadHfPolicy, loadHfTextSide } from "../policy/hf/load.ts";
import { readPeftAdapter } from "../policy/hf/peft.ts";
import { CHAT_FOLDER } from "../policy/hf/testing-chat-task.ts";
import { maxAbsDiff } from "../policy/hf/testing-fixtures.ts";
import { readValueHead, VALUE_HEAD_FILE } from "../policy/hf/value-head.ts";
import { type HfCheckpoint, loadHfCheckpoint } from "../policy/hf/weights.ts";
import { createRunDirectory, openRunDirectory } from "../store/index.ts";
import { flattenTrajectory, type Trajectory } from "../types/trajectory.ts";
import { computeAdvantages, toAdvantageBatch } from "./advantages/index.ts";
import { trainingIds } from "./assemble.ts";
import { RL_ADAPTER } from "./checkpoints.ts";
import { parseRlConfig, type RlConfig } from "./config.ts";
import { stallResumeChild } from "./testing.ts";
import { chatEnvironment, hfConfig } from "./testing-hf.ts";
import { type RlUpdateBatch, type TrainRlOptions, trainRl } from "./train.ts";

/**
 * A 3-step run of `config` killed inside step 3 (after storing its trajectories, before updating)
 * and resumed: the resume starts after the step-2 checkpoint, stores every step's episodes once,
 * and re-samples the killed step's very episodes. Returns the resumed run's store (open) and
 * directory, and what the killed process had left (`readKilled` reads it before the kill).
 */
async function killAndResume<T>(
  t: TestContext,
  config: RlConfig,
  readKilled: (directory: string) => T,
  options: { transformBatch?: TrainRlOptions["transformBatch"] } = {},
) {
  const root = mkdtempSync(join(tmpdir(), "agentrl-hf-resume-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const created = createRunDirectory({ kind: "rl", root, config, id: "resume" });
  created.store.close();
  const directory = created.directory;
  const child = await stallResumeChild(directory, 3, "hf-chat");
  const left = readKilled(directory);
  const peek = openRunDirectory(directory);
  assert.equal(peek.latestArtifact("resume", "checkpoint")?.step, 2);
  const killed = peek.trajectories("resume", { step: 3 });
  assert.equal(killed.length, 4);
  peek.close();
  await child.kill();

  const store = openRunDirectory(directory);
  const result = await trainRl({
    config,
    runDir: directory,
    store,
    runId: "resume",
    env: chatEnvironment(),
    ...options,
  });
  assert.equal(result.startStep, 2);
  assert.deepEqual(
    [1, 2, 3].map((step) => store.countTrajectories("resume", { step })),
    [4, 4, 4],
  );
  const tokens = (episodes: typeof killed) =>
    episodes.map((e) => [e.id, ...e.turns.flatMap((turn) => turn.tokenIds)]);
  assert.deepEqual(tokens(store.trajectories("resume", { step: 3 })), tokens(killed));
  return { store, directory, left };
}

test("train rl on hf: with LoRA trains the adapter on the template's ids and writes loadable PEFT and merged folders", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-hf-rl-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const config = hfConfig();
  const { directory, store } = createRunDirectory({ kind: "rl", root, config, id: "hf" });
  const result = await trainRl({ config, runDir: directory, store, runId: "hf", env: chatEnvironment() });

  // Episodes went through the template: tool calls parsed, observations as the template rendered them.
  const episodes = store.trajectories("hf");
  assert.equal(episodes.length, 8);
  const text = await loadHfTextSide(CHAT_FOLDER, "qwen3");
  // An episode broken by the template keeps the ids up to the break (fed-ids.ts); the others carry
  // the template's observation ids: a tool response after a call, the loop's error (a user
  // message) after a call the parser could not read (kept as the text the model wrote).
  const unbroken = episodes.filter((episode) => episode.turns.length > 1 && !episode.info?.prefixBreaks);
  const continued = unbroken.filter((episode) => episode.turns[0].action.type === "tool-call");
  assert.ok(continued.length > 0, "some episode called the tool and went on");
  for (const episode of unbroken.filter((e) => e.turns[0].action.type === "format-error")) {
    const observed = text.tokenizer.decode(episode.turns[0].observation!.tokenIds, {
      skipSpecialTokens: false,
    });
    assert.match(observed, /^\n<\|im_start\|>user\nerror : /);
  }
  for (const episode of continued) {
    const observed = text.tokenizer.decode(episode.turns[0].observation!.tokenIds, {
      skipSpecialTokens: false,
    });
    assert.match(observed, /<tool_response>\n.*\n<\/tool_response>/s);
  }
  // The trainer recomputed the sampler's log-probs on those ids: KL(old‖new) before any change ≈ 0.
  for (const point of store.metrics("hf", "policy/kl_sampler"))
    assert.ok(Math.abs(point.value) < 1e-4, `step ${point.step}: kl_sampler ${point.value}`);
  assert.ok(store.metrics("hf", "optim/grad_norm").some((point) => point.value > 0));
  assert.ok(store.metrics("hf", "memory/peak_rss_mb").every((point) => point.value > 0));
  assert.ok(result.peakRssMb > 0);

  // The adapter: PEFT's files naming the base folder; B left PEFT's zero init.
  const adapterDir = join(directory, RL_ADAPTER);
  const adapterConfig = JSON.parse(readFileSync(join(adapterDir, "adapter_config.json"), "utf8"));
  assert.equal(adapterConfig.base_model_name_or_path, CHAT_FOLDER);
  assert.deepEqual(adapterConfig.target_modules, ["down_proj", "q_proj", "v_proj"]);
  const base = loadHfCheckpoint(CHAT_FOLDER);
  const adapter = await readPeftAdapter(adapterDir, base.config);
  assert.ok(
    Object.entries(adapter.tensors).some(
      ([path, tensor]) => path.endsWith(".b") && tensor.data.some((x) => x !== 0),
    ),
  );
  // The last checkpoint is the same adapter.
  const last = await readPeftAdapter(join(directory, "checkpoints", "step-000002"), base.config);
  for (const [path, tensor] of Object.entries(adapter.tensors))
    assert.deepEqual(last.tensors[path].data, tensor.data);

  // Logits: base + adapter unmerged (the engine), the merged folder through hf:, and hf:<adapter folder>.
  const ids = Int32Array.from(flattenTrajectory(continued[0]).tokenIds.slice(0, 48));
  const adapted = new HfEngineModel(base, { lora: adapter });
  const merged = await loadHfPolicy(result.modelDir);
  const viaAdapter = await loadHfPolicy(adapterDir);
  const plain = new HfEngineModel(base);
  try {
    const expected = adapted.logits(ids, 1);
    assert.ok(maxAbsDiff(merged.model.logits(ids, 1), expected) < 1e-4);
    assert.ok(maxAbsDiff(viaAdapter.model.logits(ids, 1), expected) < 1e-4);
    assert.ok(maxAbsDiff(plain.logits(ids, 1), expected) > 1e-4, "training changed the model");
    assert.equal(viaAdapter.id, `hf:${adapterDir}`);
  } finally {
    for (const model of [adapted, merged.model, viaAdapter.model, plain]) model.dispose();
    await merged.close();
    await viaAdapter.close();
  }
  assert.ok(
    existsSync(join(result.modelDir, "tokenizer.json")) &&
      existsSync(join(result.modelDir, "chat_template.jinja")),
  );
  store.close();
});

test("train rl on hf: with a KL term the reference is the base: KL 0 before the adapter moves, above 0 after", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-hf-rl-kl-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const config = hfConfig({ klCoef: 0.1, klEstimator: "k3" });
  const { directory, store } = createRunDirectory({ kind: "rl", root, config, id: "kl" });
  await trainRl({ config, runDir: directory, store, runId: "kl", env: chatEnvironment() });
  const kl = store.metrics("kl", "policy/kl_ref");
  assert.deepEqual(
    kl.map((point) => point.step),
    [1, 2],
  );
  // Step 1 updates from PEFT's init (B = 0): the policy is the base, token for token, and the
  // reference scored the ids the model read at the run's temperature.
  assert.ok(Math.abs(kl[0].value) < 1e-6, `step 1: kl_ref ${kl[0].value}`);
  assert.ok(kl[1].value > 1e-6, `step 2: kl_ref ${kl[1].value}`);
  store.close();
});

test("train rl on hf: killed mid-step resumes from its last adapter checkpoint, episodes stored once and re-sampled alike", async (t) => {
  // The child (the lab's resume child, in the chat environment) stalls inside step 3. The
  // checkpoint restores the adapter exactly (and the seeds are the step's): the re-run step 3
  // samples the very episodes the killed process had.
  const config = loadHfCheckpoint(CHAT_FOLDER).config;
  const { store, left } = await killAndResume(t, hfConfig({ steps: 3 }), (directory) =>
    readPeftAdapter(join(directory, "checkpoints", "step-000002"), config),
  );
  // Steps 1–2 moved the adapter off PEFT's zero B: restoring it matters for what step 3 samples.
  const saved = await left;
  assert.ok(
    Object.entries(saved.tensors).some(
      ([path, tensor]) => path.endsWith(".b") && tensor.data.some((x) => x !== 0),
    ),
  );
  assert.deepEqual(
    store.metrics("resume", "reward/mean").map((point) => point.step),
    [1, 2, 3],
  );
  store.close();
});

test("an hf: base refuses what it does not have, naming the field", () => {
  // gae trains a value head beside the adapter or the weights; a critic without a value loss is refused.
  assert.equal(hfConfig({ estimator: "gae" }).estimator, "gae");
  assert.equal(hfConfig({ estimator: "gae", lora: false }).estimator, "gae");
  assert.throws(
    () => hfConfig({ estimator: "gae", valueCoef: 0 }),
    /valueCoef: estimator "gae" trains a critic: valueCoef must be > 0, got 0/,
  );
  assert.throws(
    () => hfConfig({ estimator: "ppo" as never }),
    /estimator: unknown estimator "ppo"; valid: "grpo", .*"gae"/,
  );
  assert.throws(
    () => parseRlConfig({ base: "models/base-strong", lora: { rank: 4 } }),
    /lora: LoRA needs an hf:<folder> base/,
  );
  assert.throws(() => hfConfig({ lora: { rank: 0 } }), /lora\.rank/);
  assert.throws(() => hfConfig({ lora: { dropout: 1 } }), /lora\.dropout/);
});

test("train rl on hf: with full fine-tuning (lora: false) each step samples with the last step's weights and writes a checkpoint folder with the engine's logits", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-hf-rl-full-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const config = hfConfig({ lora: false, learningRate: 2e-3 });
  const { directory, store } = createRunDirectory({ kind: "rl", root, config, id: "full" });
  const result = await trainRl({ config, runDir: directory, store, runId: "full", env: chatEnvironment() });
  assert.equal(store.trajectories("full").length, 8);
  // Step 2's episodes were sampled after step 1's update: the trainer's log-probs on them (the
  // updated weights) equal the sampler's, so the rollout engine served the updated weights.
  const klSampler = store.metrics("full", "policy/kl_sampler");
  assert.deepEqual(
    klSampler.map((point) => point.step),
    [1, 2],
  );
  for (const point of klSampler)
    assert.ok(Math.abs(point.value) < 1e-4, `step ${point.step}: kl_sampler ${point.value}`);
  assert.ok(store.metrics("full", "optim/grad_norm").every((point) => point.value > 0));
  store.close();

  // No adapter; the model folder and the last checkpoint (the same weights) load through hf:.
  assert.ok(!existsSync(join(directory, RL_ADAPTER)));
  const saved = await loadHfPolicy(result.modelDir);
  const last = await loadHfPolicy(join(directory, "checkpoints", "step-000002"));
  const plain = new HfEngineModel(loadHfCheckpoint(CHAT_FOLDER));
  try {
    const ids = Int32Array.from({ length: 48 }, (_, i) => (i * 37) % saved.model.config.vocabSize);
    const expected = last.model.logits(ids, 1);
    assert.ok(maxAbsDiff(saved.model.logits(ids, 1), expected) <= 1e-6);
    assert.ok(maxAbsDiff(plain.logits(ids, 1), expected) > 1e-3, "training changed the model");
  } finally {
    for (const model of [saved.model, last.model, plain]) model.dispose();
    await saved.close();
    await last.close();
  }
  assert.ok(existsSync(join(result.modelDir, "chat_template.jinja")));
});

test("train rl on hf: fully fine-tuned, killed mid-step, resumes with its weights and AdamW state: the re-run step samples alike", async (t) => {
  const config = hfConfig({ steps: 3, lora: false, learningRate: 2e-3 });
  const { store } = await killAndResume(t, config, () => null);
  // The step after the resume updated from the restored state: its sampler KL is ≈ 0 again.
  const kl = store.metrics("resume", "policy/kl_sampler").find((point) => point.step === 3);
  assert.ok(kl && Math.abs(kl.value) < 1e-4, `step 3: kl_sampler ${kl?.value}`);
  store.close();
});

/** A gae run's update batches, copied as `transformBatch` saw them (before the update). */
function recordBatches(): { batches: RlUpdateBatch[]; transformBatch: (batch: RlUpdateBatch) => void } {
  const batches: RlUpdateBatch[] = [];
  return { batches, transformBatch: (batch) => void batches.push(structuredClone(batch)) };
}

/** Each episode's values by the engine on a checkpoint folder's weights (and adapter) and value head. */
async function checkpointValues(
  dir: string,
  base: HfCheckpoint,
  episodes: readonly Trajectory[],
  lora: boolean,
): Promise<Float32Array[]> {
  const head = readValueHead(dir, base.config);
  assert.ok(head, `${dir} has a value head`);
  const engine = lora
    ? new HfEngineModel(base, { lora: await readPeftAdapter(dir, base.config) })
    : new HfEngineModel(loadHfCheckpoint(dir));
  try {
    return engine.sequenceValues(
      episodes.map((episode) => trainingIds(episode, engine.maxLen)),
      { w: head["value.w"].data as Float32Array, b: head["value.b"].data as Float32Array },
    );
  } finally {
    engine.dispose();
  }
}

/**
 * The checks of a 2-step gae run shared by LoRA and full fine-tuning: the value loss recorded and
 * finite; step 1's values 0 (the fresh head), step 2's the head after step 1 scored by the engine
 * on the step-1 checkpoint (the params the episodes were sampled with); the advantages GAE's on
 * those values, unlike grpo's or GAE's without a critic; the head moved, in value_head.safetensors
 * and nowhere in the model (or adapter) folder.
 */
async function checkGaeRun(directory: string, modelDir: string, batches: RlUpdateBatch[], config: RlConfig) {
  const lora = config.lora !== false;
  const store = openRunDirectory(directory);
  const runId = store.listRuns()[0].id;
  const valueLoss = store.metrics(runId, "value/loss");
  assert.deepEqual(
    valueLoss.map((point) => point.step),
    [1, 2],
  );
  for (const point of valueLoss)
    assert.ok(
      Number.isFinite(point.value) && point.value > 0,
      `step ${point.step}: value/loss ${point.value}`,
    );
  const valueMean = store.metrics(runId, "value/mean");
  assert.equal(valueMean[0].value, 0, "step 1: the fresh head's values are 0");
  assert.ok(Math.abs(valueMean[1].value) > 1e-3, `step 2: value/mean ${valueMean[1].value}`);
  for (const point of store.metrics(runId, "policy/kl_sampler"))
    assert.ok(Math.abs(point.value) < 1e-4, `step ${point.step}: kl_sampler ${point.value}`);
  store.close();

  assert.deepEqual(
    batches.map((batch) => batch.step),
    [1, 2],
  );
  const base = loadHfCheckpoint(CHAT_FOLDER);
  const [first, second] = batches;
  for (const row of first.critic!.oldValues) assert.ok(row.every((v) => v === 0));
  // V_old of step 2: the engine's values with step 1's adapter (or weights) and head.
  const expected = await checkpointValues(
    join(directory, "checkpoints", "step-000001"),
    base,
    second.trajectories,
    lora,
  );
  second.critic!.oldValues.forEach((row, i) => {
    const error = maxAbsDiff(row.subarray(0, expected[i].length), expected[i]);
    assert.ok(error < 1e-5, `episode ${i}: |V_old − the step-1 head's values| ${error}`);
  });
  const policyValues = second.trajectories.flatMap((trajectory, i) =>
    Array.from(second.critic!.oldValues[i]).filter((_, t) => flattenTrajectory(trajectory).lossMask[t]),
  );
  assert.ok(Math.max(...policyValues.map(Math.abs)) > 1e-3, "step 2's policy tokens have values");
  // The advantages are GAE's on those values: not grpo's, nor GAE's with a zero critic.
  const advantagesWith = (name: string, values?: Float32Array[]) =>
    computeAdvantages(name, toAdvantageBatch(second.trajectories, { anchors: "observation", values }), {})
      .advantages;
  const gap = (a: Float32Array[], b: Float32Array[]) => Math.max(...a.map((row, i) => maxAbsDiff(row, b[i])));
  assert.ok(gap(second.advantages, advantagesWith("gae", second.critic!.oldValues)) < 1e-6);
  assert.ok(gap(second.advantages, advantagesWith("grpo")) > 1e-2, "gae's advantages are not grpo's");
  const zeros = second.trajectories.map((t) => new Float32Array(flattenTrajectory(t).tokenIds.length));
  assert.ok(gap(second.advantages, advantagesWith("gae", zeros)) > 1e-2, "the critic's values change them");

  // The head moved, and is a checkpoint file only.
  const heads = [1, 2].map(
    (step) => readValueHead(join(directory, "checkpoints", `step-00000${step}`), base.config)!,
  );
  assert.ok(maxAbsDiff(heads[1]["value.w"].data, heads[0]["value.w"].data) > 1e-4, "step 2 moved the head");
  // The head's learning rate is valueLearningRateScale × the policy's: AdamW's first step moves
  // each weight of the zero head by about that rate (m/√v = ±1), the policy's by the plain one.
  const headRate = config.learningRate * config.valueLearningRateScale;
  const firstStep = Math.max(...Array.from(heads[0]["value.w"].data, Math.abs));
  assert.ok(
    Math.abs(firstStep - headRate) < 0.01 * headRate,
    `step 1 moved the head by ${firstStep}, not ${headRate}`,
  );
  for (const dir of [modelDir, ...(lora ? [join(directory, RL_ADAPTER)] : [])]) {
    assert.ok(!existsSync(join(dir, VALUE_HEAD_FILE)), `${dir} has no value head`);
    for (const file of ["model.safetensors", "adapter_model.safetensors"].filter((f) =>
      existsSync(join(dir, f)),
    ))
      assert.ok(
        !Object.keys(readSafetensorsFile(join(dir, file)).tensors).some((key) => key.includes("v_head")),
      );
  }
}

/** Trains `config` (a gae run) in a fresh run directory, recording its update batches, and checks it with `checkGaeRun`. */
async function trainGaeRun(t: TestContext, config: RlConfig, id: string) {
  const root = mkdtempSync(join(tmpdir(), `agentrl-hf-rl-${id}-`));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const { directory, store } = createRunDirectory({ kind: "rl", root, config, id });
  const { batches, transformBatch } = recordBatches();
  const result = await trainRl({
    config,
    runDir: directory,
    store,
    runId: id,
    env: chatEnvironment(),
    transformBatch,
  });
  store.close();
  await checkGaeRun(directory, result.modelDir, batches, config);
  return { directory, result };
}

test("train rl on hf: gae with LoRA trains a value head beside the adapter, and GAE reads the values of the sampling params", async (t) => {
  const { directory, result } = await trainGaeRun(t, hfConfig({ estimator: "gae" }), "gae");
  // The adapter and the merged folder load as before.
  const merged = await loadHfPolicy(result.modelDir);
  const viaAdapter = await loadHfPolicy(join(directory, RL_ADAPTER));
  try {
    const ids = Int32Array.from({ length: 48 }, (_, i) => (i * 37) % merged.model.config.vocabSize);
    assert.ok(maxAbsDiff(merged.model.logits(ids, 1), viaAdapter.model.logits(ids, 1)) < 1e-4);
  } finally {
    for (const policy of [merged, viaAdapter]) {
      policy.model.dispose();
      await policy.close();
    }
  }
});

test("train rl on hf: gae fully fine-tuned (lora: false) trains a value head beside the weights", async (t) => {
  const config = hfConfig({ estimator: "gae", lora: false, learningRate: 2e-3 });
  const { result } = await trainGaeRun(t, config, "gae-full");
  assert.deepEqual(
    Object.keys(loadHfCheckpoint(result.modelDir).tensors).sort(),
    Object.keys(loadHfCheckpoint(CHAT_FOLDER).tensors).sort(),
  );
});

test("train rl on hf: gae killed mid-step resumes with its value head: the re-run step scores the killed one's values", async (t) => {
  const { batches, transformBatch } = recordBatches();
  const { store, left: killedValues } = await killAndResume(
    t,
    hfConfig({ steps: 3, estimator: "gae" }),
    (directory): number[][] => JSON.parse(readFileSync(join(directory, "stalled-values.json"), "utf8")),
    { transformBatch },
  );
  assert.ok(
    killedValues.flat().some((v) => Math.abs(v) > 1e-3),
    "the killed step's head was trained",
  );
  // The restored head (and adapter) score the re-sampled episodes exactly as the killed process did.
  assert.deepEqual(
    batches.map((batch) => batch.step),
    [3],
  );
  assert.deepEqual(
    batches[0].critic!.oldValues.map((row) => Array.from(row)),
    killedValues,
  );
  assert.ok(store.metrics("resume", "value/loss").every((point) => Number.isFinite(point.value)));
  store.close();
});
