/**
 * `train sft` on a Hugging Face checkpoint with LoRA (hf-model.ts), on fixtures/qwen3-chat: stored
 * episodes become chat examples through the checkpoint's template (the loss on what the assistant
 * wrote, tool calls included), a few steps lower the held-out loss, the adapter and the merged
 * folder load, and a run interrupted after a checkpoint resumes to the same adapter. With full
 * fine-tuning (`lora: false`) the saved checkpoint folder has the engine's logits and a resumed
 * run ends at the straight run's weights.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { collectDataset } from "../data/collect.ts";
import { loadDataset } from "../data/dataset.ts";
import { treeToHost } from "../engine/tree.ts";
import { HfEngineModel } from "../policy/hf/engine.ts";
import { loadHfPolicy, loadHfTextSide } from "../policy/hf/load.ts";
import { loadFullCheckpoint } from "../policy/hf/lora-checkpoint.ts";
import { readPeftAdapter } from "../policy/hf/peft.ts";
import { encodeChatEpisode } from "../policy/hf/sft-encode.ts";
import { CHAT_FOLDER } from "../policy/hf/testing-chat-task.ts";
import { maxAbsDiff } from "../policy/hf/testing-fixtures.ts";
import { loadHfCheckpoint } from "../policy/hf/weights.ts";
import { chatTools } from "../policy/openai/messages.ts";
import { createRunDirectory } from "../store/index.ts";
import { parseSftConfig } from "./config.ts";
import { SFT_ADAPTER } from "./model.ts";
import { interruptAndResume } from "./testing.ts";
import { trainSft } from "./train.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-hf-sft-"));
after(() => rmSync(root, { recursive: true, force: true }));
const data = join(root, "data");
await collectDataset({ tasks: { count: 24, seed: 1, family: "lookup" }, seed: 1, noise: 0, out: data });

const config = (overrides: Record<string, unknown> = {}) =>
  parseSftConfig({
    name: "hf-sft",
    base: `hf:${CHAT_FOLDER}`,
    data: [data],
    steps: 6,
    tokensPerStep: 1024,
    microBatchTokens: 2048,
    learningRate: 1e-2,
    warmupSteps: 0,
    heldoutFraction: 0.25,
    heldoutEvery: 6,
    checkpointEvery: 3,
    lora: { rank: 4, alpha: 8, targets: ["q_proj", "v_proj", "gate_proj", "up_proj", "down_proj"] },
    ...overrides,
  });

test("episodes become chat examples: the loss covers the assistant's rendered turns, not the prompt or tool results", async () => {
  const { trajectories, tools } = loadDataset(data);
  const text = await loadHfTextSide(CHAT_FOLDER, "qwen3");
  const withCall = trajectories.find((t) => t.turns.length > 1)!;
  const examples = encodeChatEpisode(withCall, { question: "q" }, text, {
    tools: chatTools(tools!),
    maxLen: 4096,
  })!;
  assert.ok(examples.length >= 1);
  const decode = (ids: number[]) => text.tokenizer.decode(ids, { skipSpecialTokens: false });
  const trained = examples.map(({ ids, mask }) => decode(ids.filter((_, i) => mask[i] === 1)));
  for (const [i, { ids, mask }] of examples.entries()) {
    const context = decode(ids.filter((_, i) => mask[i] === 0));
    assert.ok(
      trained[i].trimEnd().endsWith("<|im_end|>"),
      "each trained turn ends with the end-of-turn token",
    );
    assert.doesNotMatch(trained[i], /<tool_response>|<\|im_start\|>user|<\|im_start\|>system/);
    assert.match(context, /<\|im_start\|>system[\s\S]*<tools>/, "the prompt renders the tools");
  }
  assert.ok(
    trained.some((part) => part.includes("<tool_call>")),
    "the tool call the model must write is trained",
  );
  // Qwen3's template writes an empty <think> block into the last assistant message only, so each
  // turn is its own example; the later ones read the tool result in their context.
  assert.equal(examples.length, withCall.turns.length);
  assert.match(decode(examples.at(-1)!.ids), /<tool_response>/);
});

test("train sft on hf: with LoRA lowers the held-out loss, writes loadable adapter and merged folders, and resumes", async () => {
  const straight = createRunDirectory({ kind: "sft", root, id: "straight", config: config() });
  const result = await trainSft({
    config: config(),
    runDir: straight.directory,
    store: straight.store,
    runId: "straight",
  });
  assert.ok(result.data.trainEpisodes > 0 && result.data.heldoutEpisodes > 0);
  assert.ok(
    result.finalHeldoutLoss! < result.initialHeldoutLoss! - 0.1,
    `held-out ${result.initialHeldoutLoss} → ${result.finalHeldoutLoss}`,
  );
  assert.ok(straight.store.metrics("straight", "memory/peak_rss_mb").length === 6);
  straight.store.close();
  const base = loadHfCheckpoint(CHAT_FOLDER);
  const adapter = await readPeftAdapter(join(straight.directory, SFT_ADAPTER), base.config);
  const merged = await loadHfPolicy(result.modelDir);
  const viaAdapter = await loadHfPolicy(join(straight.directory, SFT_ADAPTER));
  try {
    const ids = Int32Array.from({ length: 64 }, (_, i) => (i * 37) % base.config.vocabSize);
    const a = merged.model.logits(ids, 1);
    const b = viaAdapter.model.logits(ids, 1);
    assert.ok(a.every((x, i) => Math.abs(x - b[i]) < 1e-4));
  } finally {
    for (const policy of [merged, viaAdapter]) {
      policy.model.dispose();
      await policy.close();
    }
  }

  // Interrupted after step 3's checkpoint, then resumed: the same adapter as the straight run.
  const interrupted = await interruptAndResume(root, "interrupted", config(), 3);
  interrupted.store.close();
  const again = await readPeftAdapter(join(interrupted.directory, SFT_ADAPTER), base.config);
  for (const [path, tensor] of Object.entries(adapter.tensors)) {
    const other = again.tensors[path].data;
    assert.ok(
      tensor.data.every((x, i) => Math.abs(x - other[i]) < 1e-5),
      path,
    );
  }
});

test("train sft on hf: with full fine-tuning (lora: false) writes a checkpoint folder with the engine's logits, and resumes", async () => {
  const full = () => config({ lora: false, learningRate: 3e-3 });
  const straight = createRunDirectory({ kind: "sft", root, id: "full-straight", config: full() });
  const result = await trainSft({
    config: full(),
    runDir: straight.directory,
    store: straight.store,
    runId: "full-straight",
  });
  straight.store.close();
  assert.ok(
    result.finalHeldoutLoss! < result.initialHeldoutLoss! - 0.1,
    `held-out ${result.initialHeldoutLoss} → ${result.finalHeldoutLoss}`,
  );
  // No adapter: the model folder is the trained checkpoint, with the base's tokenizer and template.
  assert.ok(!existsSync(join(straight.directory, SFT_ADAPTER)));
  for (const file of ["config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja"])
    assert.ok(existsSync(join(result.modelDir, file)), file);
  // The saved folder through hf: against the engine over the trainer's last weights (the final
  // checkpoint's state), and against the base it moved away from.
  const base = loadHfCheckpoint(CHAT_FOLDER);
  const last = await loadFullCheckpoint(join(straight.directory, "checkpoint"));
  assert.equal(last.state.step, 6);
  const engine = new HfEngineModel(
    { ...base, tensors: await treeToHost(last.state.params) },
    { trainedWeights: true },
  );
  const saved = await loadHfPolicy(result.modelDir);
  const plain = new HfEngineModel(base);
  const ids = Int32Array.from({ length: 64 }, (_, i) => (i * 37) % base.config.vocabSize);
  try {
    const expected = engine.logits(ids, 1);
    assert.ok(maxAbsDiff(saved.model.logits(ids, 1), expected) <= 1e-5);
    assert.ok(maxAbsDiff(plain.logits(ids, 1), expected) > 1e-2, "training changed the model");
  } finally {
    for (const model of [engine, saved.model, plain]) model.dispose();
    await saved.close();
  }

  // Interrupted after step 3's checkpoint, then resumed: the straight run's weights.
  const { resumed, store } = await interruptAndResume(root, "full-interrupted", full(), 3);
  store.close();
  const a = loadHfCheckpoint(result.modelDir).tensors;
  const b = loadHfCheckpoint(resumed.modelDir).tensors;
  for (const [path, tensor] of Object.entries(a))
    assert.ok(maxAbsDiff(tensor.data, b[path].data) < 1e-5, path);
});
