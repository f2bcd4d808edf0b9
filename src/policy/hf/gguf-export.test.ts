/**
 * `export gguf` of hf: checkpoints, read back by real llama.cpp (node-llama-cpp's prebuilt CPU
 * build; F32 KV cache, flash attention off: testing-gguf.ts) on the committed tiny checkpoints:
 *
 * - f32: llama.cpp's logits at every position within 1e-4 of the engine's (HfEngineModel, itself
 *   within 1e-4 of transformers: engine.test.ts), and the same 64-token greedy continuation as the
 *   engine's KV-cache decode. GPT-2 is the exception, measured: ggml's CPU GELU reads a table of
 *   float16 results (testing-gpt2-reference.ts), which moves its logits by up to 3.6e-3 here; a
 *   float64 forward with that table comes within 1e-3 of llama.cpp (measured 5.1e-4, inputs on
 *   the other side of a float16 rounding boundary) and one without it does not.
 * - f16 and q8_0: the argmax at every position is the engine's, and the largest logit difference
 *   is within a bound relative to the largest logit. ggml's CPU matrix product rounds the
 *   activations to the weights' format too, so both sides are rounded: float16 keeps 11
 *   significant bits (a relative step of 2^-11 ≈ 4.9e-4), Q8_0 8 bits per block of 32 (a step of
 *   1/127 of the block's largest value). Measured on these checkpoints: f16 up to 2.0e-3 of the
 *   largest logit, q8_0 up to 6.9e-2 (both on qwen2.5); the bounds are 1e-2 and 0.15. Greedy
 *   decoding follows its own path where these random models have near ties (measured: f16 the
 *   engine's 64 tokens on 2 of these 3, the first 24 on qwen2.5; q8_0 the first 4 to 45), each of
 *   whose tokens the engine, fed that path, rates within twice the bound of its best.
 * - The tokenizer (qwen3-chat's small BPE tokenizer.json in Qwen's format; the real Qwen3 and
 *   Llama 3.1 ones: gguf-tokenizer.test.ts) and chat template, and a LoRA adapter merged in.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { cp, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { HfEngineModel } from "./engine.ts";
import { exportGguf } from "./gguf-export.ts";
import type { GgufFileType } from "./gguf-tensors.ts";
import { readPeftAdapter } from "./peft.ts";
import { FIXTURES, maxAbsDiff, readReference } from "./testing-fixtures.ts";
import { engineGreedy, llamaGreedy, llamaLogits, loadGguf, withByteTokenizer } from "./testing-gguf.ts";
import { ggmlGelu, gpt2ReferenceLogits } from "./testing-gpt2-reference.ts";
import { loadHfTokenizer } from "./tokenizer.ts";
import { loadHfCheckpoint } from "./weights.ts";

const dir = await mkdtemp(join(tmpdir(), "agentrl-gguf-export-"));
/** Bounds on max |Δlogit| relative to the largest logit, for the rounded types (see above). */
const RELATIVE_BOUND: Record<Exclude<GgufFileType, "f32">, number> = { f16: 1e-2, q8_0: 0.15 };

const argmax = (row: ArrayLike<number>) => {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
  return best;
};
const rows = (logits: Float32Array, V: number) =>
  Array.from({ length: logits.length / V }, (_, t) => logits.subarray(t * V, (t + 1) * V));

/** The engine's and llama.cpp's logits on `ids`, and the largest |Δ|. */
async function compare(folder: string, gguf: string, engine: HfEngineModel, ids: number[]) {
  const V = engine.config.vocabSize;
  const ours = engine.logits(Int32Array.from(ids), 1);
  const model = await loadGguf(gguf);
  const theirs = await llamaLogits(model, ids, V);
  return {
    model,
    ours,
    theirs,
    diff: maxAbsDiff(ours, theirs),
    scale: Math.max(...ours.map(Math.abs)),
    folder,
  };
}

for (const name of ["llama3-bf16", "qwen2.5", "qwen3-untied-sharded"] as const) {
  test(`${name}: f32 through llama.cpp gives the engine's logits within 1e-4 and its 64-token greedy continuation`, async (t) => {
    const folder = await withByteTokenizer(join(FIXTURES, name));
    const out = join(dir, `${name}.gguf`);
    const summary = await exportGguf(folder, out, { type: "f32" });
    const reference = readReference(name);
    const engine = HfEngineModel.load(folder);
    try {
      const { model, diff } = await compare(folder, out, engine, reference.ids[0]!);
      assert.ok(diff <= 1e-4, `${name}: max |Δlogit| ${diff}`);
      const ours = await engineGreedy(engine, reference.prompt, 64);
      assert.deepEqual(await llamaGreedy(model, reference.prompt, 64), ours);
      await model.dispose();
      t.diagnostic(`${name} (${summary.architecture}): max |Δlogit| ${diff.toExponential(2)}`);
    } finally {
      engine.dispose();
    }
  });

  test(`${name}: f16 and q8_0 through llama.cpp keep the engine's argmax, within the measured bounds`, async (t) => {
    const folder = await withByteTokenizer(join(FIXTURES, name));
    const reference = readReference(name);
    const engine = HfEngineModel.load(folder);
    const V = engine.config.vocabSize;
    try {
      for (const type of ["f16", "q8_0"] as const) {
        const out = join(dir, `${name}-${type}.gguf`);
        await exportGguf(folder, out, { type });
        const { model, ours, theirs, diff, scale } = await compare(folder, out, engine, reference.ids[0]!);
        assert.ok(
          diff <= RELATIVE_BOUND[type] * scale,
          `${name} ${type}: max |Δlogit| ${diff} (largest ${scale})`,
        );
        assert.deepEqual(rows(theirs, V).map(argmax), rows(ours, V).map(argmax), `${name} ${type}: argmax`);
        const path = await llamaGreedy(model, reference.prompt, 64);
        // The engine on llama.cpp's own path: each token it chose is near the engine's best.
        const fed = rows(engine.logits(Int32Array.from([...reference.prompt, ...path]), 1), V);
        path.forEach((token, i) => {
          const row = fed[reference.prompt.length - 1 + i]!;
          const gap = row[argmax(row)]! - row[token]!;
          assert.ok(
            gap <= 2 * RELATIVE_BOUND[type] * scale,
            `${name} ${type}: step ${i} is ${gap} below the best`,
          );
        });
        await model.dispose();
        const engineTokens = await engineGreedy(engine, reference.prompt, 64);
        const same = path.findIndex((token, i) => token !== engineTokens[i]);
        t.diagnostic(
          `${name} ${type}: max |Δlogit| ${diff.toExponential(2)} = ${(diff / scale).toExponential(2)} of the largest; greedy ${same < 0 ? "all 64" : `${same} of 64`} equal`,
        );
      }
    } finally {
      engine.dispose();
    }
  });
}

test("gpt2: f32 through llama.cpp differs by ggml's float16 GELU table, and by little else", async (t) => {
  const folder = await withByteTokenizer(join(FIXTURES, "gpt2"));
  const out = join(dir, "gpt2.gguf");
  await exportGguf(folder, out, { type: "f32" });
  const reference = readReference("gpt2");
  const ids = reference.ids[0]!;
  const engine = HfEngineModel.load(folder);
  try {
    const { model, theirs, diff } = await compare(folder, out, engine, ids);
    const { config, tensors } = loadHfCheckpoint(folder);
    const withTable = maxAbsDiff(theirs, gpt2ReferenceLogits(config, tensors, ids, ggmlGelu));
    assert.ok(diff <= 1e-2, `gpt2: max |Δlogit| ${diff}`);
    assert.ok(withTable <= 1e-3, `gpt2: ${withTable} from the forward with ggml's GELU table`);
    assert.ok(withTable < diff / 3, `the table accounts for most of it: ${withTable} vs ${diff}`);
    assert.deepEqual(
      await llamaGreedy(model, reference.prompt, 64),
      await engineGreedy(engine, reference.prompt, 64),
    );
    await model.dispose();
    t.diagnostic(
      `gpt2: max |Δlogit| ${diff.toExponential(2)}, ${withTable.toExponential(2)} from ggml's GELU`,
    );
  } finally {
    engine.dispose();
  }
});

test("qwen3-chat: llama.cpp tokenizes as tokenizer.json does, holds the chat template, and continues a chat as the engine", async (t) => {
  const folder = join(FIXTURES, "qwen3-chat");
  const out = join(dir, "qwen3-chat.gguf");
  const summary = await exportGguf(`hf:${folder}`, out, { type: "f32" });
  assert.equal(summary.tokenizer, "gpt2/qwen2");
  const model = await loadGguf(out);
  const tokenizer = await loadHfTokenizer(folder);
  const texts = [
    "Hello, world! The quick brown fox.",
    "numbers 1234567890 3.14159 and  two  spaces\n\nnewlines\ttabs",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    '<tool_call>\n{"name": "search", "arguments": {"query": "capital"}}\n</tool_call>',
    "Unicode: café naïve — “quotes” 中文",
  ];
  for (const text of texts) assert.deepEqual([...model.tokenize(text, true)], tokenizer.encode(text), text);
  // llama.cpp applies no normalizer: text not in NFC (e + a combining accent) is the one difference.
  const decomposed = "combining e\u0301";
  assert.notDeepEqual([...model.tokenize(decomposed, true)], tokenizer.encode(decomposed));
  assert.deepEqual([...model.tokenize(decomposed.normalize("NFC"), true)], tokenizer.encode(decomposed));
  const metadata = model.fileInfo.metadata.tokenizer as unknown as Record<string, unknown>;
  assert.equal(metadata.chat_template, readFileSync(join(folder, "chat_template.jinja"), "utf8"));
  assert.equal(model.tokens.eos, tokenizer.tokenId("<|im_end|>"));
  assert.equal(model.tokens.bos, 400); // config.json's bos_token_id: tokenizer_config.json names none
  // generation_config.json's sampling defaults (temperature 0.6, top-k 20, top-p 0.95), as float32.
  const sampling = (model.fileInfo.metadata.general as unknown as { sampling: Record<string, number> })
    .sampling;
  assert.deepEqual(sampling, { temp: Math.fround(0.6), top_k: 20, top_p: Math.fround(0.95) });
  const engine = HfEngineModel.load(folder);
  try {
    const prompt = tokenizer.encode(texts[2]!);
    const V = engine.config.vocabSize;
    const diff = maxAbsDiff(engine.logits(Int32Array.from(prompt), 1), await llamaLogits(model, prompt, V));
    assert.ok(diff <= 1e-4, `qwen3-chat: max |Δlogit| ${diff}`);
    assert.deepEqual(await llamaGreedy(model, prompt, 32), await engineGreedy(engine, prompt, 32));
    t.diagnostic(`qwen3-chat: max |Δlogit| ${diff.toExponential(2)} over ${prompt.length} positions`);
  } finally {
    engine.dispose();
    await model.dispose();
  }
});

test("a LoRA adapter folder is merged into its base: llama.cpp gives the adapted engine's logits and continuation", async (t) => {
  const base = await withByteTokenizer(join(FIXTURES, "qwen3-tied"));
  const adapterFolder = join(await mkdtemp(join(tmpdir(), "agentrl-gguf-lora-")), "adapter");
  await cp(join(FIXTURES, "lora", "qwen3-tied", "peft-adapter"), adapterFolder, { recursive: true });
  // PEFT saved the base as "qwen3-tied", a name not found from here: --base says where it is.
  const out = join(dir, "lora.gguf");
  await assert.rejects(
    exportGguf(adapterFolder, out, { type: "f32" }),
    /base_model_name_or_path "qwen3-tied"/,
  );
  const summary = await exportGguf(adapterFolder, out, { type: "f32", base });
  assert.equal(summary.source, "hf+lora");
  const reference = readReference("qwen3-tied");
  const checkpoint = loadHfCheckpoint(base);
  const adapter = await readPeftAdapter(adapterFolder, checkpoint.config);
  const adapted = new HfEngineModel(checkpoint, { lora: adapter });
  const plain = new HfEngineModel(checkpoint);
  try {
    const ids = reference.ids[0]!;
    const { model, theirs, diff } = await compare(base, out, adapted, ids);
    assert.ok(diff <= 1e-4, `merged: max |Δlogit| ${diff}`);
    const moved = maxAbsDiff(theirs, plain.logits(Int32Array.from(ids), 1));
    assert.ok(moved > 100 * 1e-4, `the adapter moves the logits (${moved})`);
    assert.deepEqual(
      await llamaGreedy(model, reference.prompt, 64),
      await engineGreedy(adapted, reference.prompt, 64),
    );
    await model.dispose();
    t.diagnostic(
      `merged adapter: max |Δlogit| ${diff.toExponential(2)} (the adapter moves them by ${moved.toFixed(2)})`,
    );
  } finally {
    adapted.dispose();
    plain.dispose();
  }
  // Named in adapter_config.json, the base is found without --base.
  const config = JSON.parse(readFileSync(join(adapterFolder, "adapter_config.json"), "utf8"));
  await writeFile(
    join(adapterFolder, "adapter_config.json"),
    JSON.stringify({ ...config, base_model_name_or_path: base }),
  );
  assert.equal(
    (await exportGguf(adapterFolder, join(dir, "lora-named.gguf"), { type: "f16" })).source,
    "hf+lora",
  );
});

test("what llama.cpp could not run is refused by name: no tokenizer, an unknown pre-tokenizer, no model", async () => {
  const out = join(dir, "refused.gguf");
  await assert.rejects(
    exportGguf(join(FIXTURES, "qwen2.5"), out, { type: "f32" }),
    /qwen2\.5 has no tokenizer\.json; llama\.cpp needs the model's tokenizer/,
  );
  const folder = await withByteTokenizer(join(FIXTURES, "qwen2.5"));
  const tokenizer = JSON.parse(readFileSync(join(folder, "tokenizer.json"), "utf8"));
  tokenizer.pre_tokenizer = { type: "ByteLevel", add_prefix_space: false, use_regex: true };
  await writeFile(join(folder, "tokenizer.json"), JSON.stringify(tokenizer));
  await assert.rejects(
    exportGguf(folder, out, { type: "f32" }),
    /pre_tokenizer .* recognised: .*qwen2 or llama-bpe/,
  );
  await assert.rejects(
    exportGguf(dir, out, { type: "f32" }),
    /is not a lab model directory \(checkpoint\.json\), a Hugging Face checkpoint folder \(config\.json\) or a PEFT adapter folder/,
  );
});
