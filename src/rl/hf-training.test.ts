/**
 * `train rl` on a Hugging Face checkpoint with LoRA (hf-training.ts), on fixtures/qwen3-chat (a
 * tiny Qwen3 trained on one tool-calling conversation, with the real Qwen3 chat template): the
 * lab's loop samples through the checkpoint's template and tool-call parser, trains the adapter on
 * the ids the model read, and writes a PEFT adapter and a merged folder that load with equal
 * logits; a run killed mid-step resumes from its last adapter checkpoint. With full fine-tuning
 * (`lora: false`) every step samples with the previous step's weights, the checkpoint folders
 * load with the trained logits, and a killed run resumes to the very episodes it had sampled.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { HfEngineModel } from "../policy/hf/engine.ts";
import { loadHfPolicy, loadHfTextSide } from "../policy/hf/load.ts";
import { readPeftAdapter } from "../policy/hf/peft.ts";
import { CHAT_FOLDER } from "../policy/hf/testing-chat-task.ts";
import { maxAbsDiff } from "../policy/hf/testing-fixtures.ts";
import { loadHfCheckpoint } from "../policy/hf/weights.ts";
import { createRunDirectory, openRunDirectory } from "../store/index.ts";
import { flattenTrajectory } from "../types/trajectory.ts";
import { RL_ADAPTER } from "./checkpoints.ts";
import { parseRlConfig } from "./config.ts";
import { stallResumeChild } from "./testing.ts";
import { chatEnvironment, hfConfig } from "./testing-hf.ts";
import { trainRl } from "./train.ts";

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
  const root = mkdtempSync(join(tmpdir(), "agentrl-hf-resume-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const config = hfConfig({ steps: 3 });
  const created = createRunDirectory({ kind: "rl", root, config, id: "resume" });
  created.store.close();
  const directory = created.directory;
  // The child (the lab's resume child, in the chat environment) stalls inside step 3, after
  // storing its trajectories and before updating.
  const child = await stallResumeChild(directory, 3, "hf-chat");
  const peek = openRunDirectory(directory);
  assert.equal(peek.latestArtifact("resume", "checkpoint")?.step, 2);
  // Steps 1–2 moved the adapter off PEFT's zero B: restoring it matters for what step 3 samples.
  const saved = await readPeftAdapter(
    join(directory, "checkpoints", "step-000002"),
    loadHfCheckpoint(CHAT_FOLDER).config,
  );
  assert.ok(
    Object.entries(saved.tensors).some(
      ([path, tensor]) => path.endsWith(".b") && tensor.data.some((x) => x !== 0),
    ),
  );
  const killed = peek.trajectories("resume", { step: 3 });
  assert.equal(killed.length, 4);
  peek.close();
  await child.kill();

  const store = openRunDirectory(directory);
  const result = await trainRl({ config, runDir: directory, store, runId: "resume", env: chatEnvironment() });
  assert.equal(result.startStep, 2);
  assert.deepEqual(
    [1, 2, 3].map((step) => store.countTrajectories("resume", { step })),
    [4, 4, 4],
  );
  // The checkpoint restored the adapter exactly (and the seeds are the step's): the re-run step 3
  // sampled the very episodes the killed process had.
  const tokens = (episodes: typeof killed) =>
    episodes.map((e) => [e.id, ...e.turns.flatMap((turn) => turn.tokenIds)]);
  assert.deepEqual(tokens(store.trajectories("resume", { step: 3 })), tokens(killed));
  assert.deepEqual(
    store.metrics("resume", "reward/mean").map((point) => point.step),
    [1, 2, 3],
  );
  store.close();
});

test("an hf: base refuses what it does not have, naming the field", () => {
  assert.throws(
    () => hfConfig({ estimator: "gae" }),
    /estimator: "gae" needs a value head.*valid with hf: .*"grpo"/,
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
  const root = mkdtempSync(join(tmpdir(), "agentrl-hf-full-resume-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const config = hfConfig({ steps: 3, lora: false, learningRate: 2e-3 });
  const created = createRunDirectory({ kind: "rl", root, config, id: "resume" });
  created.store.close();
  const directory = created.directory;
  const child = await stallResumeChild(directory, 3, "hf-chat");
  const peek = openRunDirectory(directory);
  assert.equal(peek.latestArtifact("resume", "checkpoint")?.step, 2);
  const killed = peek.trajectories("resume", { step: 3 });
  assert.equal(killed.length, 4);
  peek.close();
  await child.kill();

  const store = openRunDirectory(directory);
  const result = await trainRl({ config, runDir: directory, store, runId: "resume", env: chatEnvironment() });
  assert.equal(result.startStep, 2);
  assert.deepEqual(
    [1, 2, 3].map((step) => store.countTrajectories("resume", { step })),
    [4, 4, 4],
  );
  const tokens = (episodes: typeof killed) =>
    episodes.map((e) => [e.id, ...e.turns.flatMap((turn) => turn.tokenIds)]);
  assert.deepEqual(tokens(store.trajectories("resume", { step: 3 })), tokens(killed));
  // The step after the resume updated from the restored state: its sampler KL is ≈ 0 again.
  const kl = store.metrics("resume", "policy/kl_sampler").find((point) => point.step === 3);
  assert.ok(kl && Math.abs(kl.value) < 1e-4, `step 3: kl_sampler ${kl?.value}`);
  store.close();
});
