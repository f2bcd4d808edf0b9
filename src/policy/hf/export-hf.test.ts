import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtemp, readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { engineName } from "../../engine/backend.ts";
import { np } from "../../engine/jax.ts";
import { refTree } from "../../engine/tree.ts";
import { loadModelCheckpoint } from "../embedded/checkpoint.ts";
import { textStopTokens } from "../embedded/embedded-policy.ts";
import { gptLogits } from "../embedded/model.ts";
import { scoreTokens } from "../embedded/score.ts";
import { createWordTokenizer } from "../embedded/tokenizer.ts";
import { type HfChatMessage, loadChatTemplate } from "./chat-template.ts";
import { HfEngineModel } from "./engine.ts";
import { EXPORTED_FILES, exportHfCheckpoint } from "./export-hf.ts";
import { maxAbsDiff } from "./testing-fixtures.ts";
import { readTestdata } from "./testing-hf.ts";
import { loadHfTokenizer } from "./tokenizer.ts";
import { wordLevelTokenizerJson } from "./word-level-export.ts";

interface ExportFixture {
  architecture: string;
  files_sha256: Record<string, string>;
  cases: { text: string; ids: number[]; logits_f32_base64: string; shape: [number, number] }[];
  /** transformers' apply_chat_template of a conversation with the exported template. */
  chat: { messages: HfChatMessage[]; text: string; ids: number[] };
}

const MODEL = new URL("../../../models/base-strong", import.meta.url).pathname;
const fixture = await readTestdata<ExportFixture>("export-base-strong.json");
const out = join(await mkdtemp(join(tmpdir(), "agentrl-export-hf-")), "base-strong-hf");
const summary = await exportHfCheckpoint(MODEL, out);

function logitsOf(base64: string): Float32Array {
  const bytes = Buffer.from(base64, "base64");
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}

test("the export writes byte for byte the files transformers' reference logits were computed from", async () => {
  assert.deepEqual(summary.files, [...EXPORTED_FILES]);
  assert.equal(fixture.architecture, "GPT2LMHeadModel");
  for (const file of EXPORTED_FILES) {
    const sha = createHash("sha256")
      .update(await readFile(join(out, file)))
      .digest("hex");
    assert.equal(sha, fixture.files_sha256[file], file);
  }
  await assert.rejects(exportHfCheckpoint(MODEL, out), /exists and is not empty/);
});

test("transformers' tokenizer and ours read the exported tokenizer.json with the lab tokenizer's ids", async () => {
  const lab = (await loadModelCheckpoint(MODEL)).tokenizer;
  const hf = await loadHfTokenizer(out);
  for (const { text, ids } of fixture.cases) {
    assert.deepEqual(lab.encode(text), ids, text);
    assert.deepEqual(hf.encode(text), ids, text);
  }
  // <eos>, then the closing tags that end the lab policy's turns (generation_config.json).
  const stops = textStopTokens(lab.tokens).map((token) => lab.requireId(token));
  assert.deepEqual(hf.eosTokenIds, [lab.eosId, ...stops]);
  assert.deepEqual(
    stops.map((id) => lab.tokenOf(id)),
    ["</search>", "</calc>", "</answer>"],
  );
});

test("the lab model's logits equal transformers' GPT-2 logits within 1e-4, and the engine's log-probs too", async () => {
  const { params, config } = await loadModelCheckpoint(MODEL);
  for (const { text, ids, logits_f32_base64, shape } of fixture.cases) {
    const expected = logitsOf(logits_f32_base64);
    assert.deepEqual(shape, [ids.length, config.vocabSize]);
    const input = np.array(Int32Array.from(ids), { shape: [1, ids.length], dtype: np.int32 });
    const actual = gptLogits(refTree(params), input, config).dataSync() as Float32Array;
    let worst = 0;
    for (let i = 0; i < expected.length; i++) worst = Math.max(worst, Math.abs(actual[i]! - expected[i]!));
    assert.ok(worst < 1e-4, `${text}: max |Δlogit| ${worst}`);
    // The serving engine's per-token log-probs against log-softmax of transformers' logits.
    const V = config.vocabSize;
    const { logprobs } = await scoreTokens(params, config, [ids]);
    for (let t = 1; t < ids.length; t++) {
      const row = expected.subarray((t - 1) * V, t * V);
      const max = Math.max(...row);
      const logZ = max + Math.log(row.reduce((sum, x) => sum + Math.exp(x - max), 0));
      const reference = row[ids[t]!]! - logZ;
      assert.ok(Math.abs(logprobs[0]![t]! - reference) < 1e-4, `${engineName()} ${text} t=${t}`);
    }
  }
});

test("the exported folder loads as hf: and the hf engine reproduces transformers' logits within 1e-4", () => {
  const model = HfEngineModel.load(out);
  try {
    assert.equal(model.config.block, "gpt2");
    for (const { text, ids, logits_f32_base64 } of fixture.cases) {
      const expected = logitsOf(logits_f32_base64);
      const diff = maxAbsDiff(model.logits(Int32Array.from(ids), 1), expected);
      assert.ok(diff < 1e-4, `${text}: max |Δlogit| ${diff}`);
    }
  } finally {
    model.dispose();
  }
});

test("the exported chat template renders as transformers renders it: the lab's protocol text, the same ids", async () => {
  const template = await loadChatTemplate(out);
  // The reference holds arguments as objects (transformers' convention); the OpenAI wire sends text.
  const messages = fixture.chat.messages.map((m) => ({
    ...m,
    ...(m.tool_calls
      ? {
          tool_calls: m.tool_calls.map((c) => ({
            ...c,
            function: { ...c.function, arguments: JSON.stringify(c.function.arguments) },
          })),
        }
      : {}),
  }));
  const text = template.render(messages, { addGenerationPrompt: true });
  assert.equal(text, fixture.chat.text);
  assert.match(text, /^<q> what is the population of notinia \? <\/q> <search> notinia <\/search> <obs> /);
  assert.deepEqual((await loadHfTokenizer(out)).encode(text, { addSpecialTokens: false }), fixture.chat.ids);
});

test("a vocabulary word mixing digits with letters is refused: WordLevel + Digits would split it", () => {
  assert.throws(() => wordLevelTokenizerJson(createWordTokenizer(["h2o", "water"])), /mixing digits.*h2o/);
});

test("a missing model directory fails with its path, and writes nothing", async () => {
  const root = await mkdtemp(join(tmpdir(), "agentrl-export-hf-"));
  await assert.rejects(exportHfCheckpoint(join(root, "no-such-model"), join(root, "x")), /no-such-model/);
  await assert.rejects(readdir(join(root, "x")), /ENOENT/);
});
