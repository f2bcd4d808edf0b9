/**
 * The adapter and merged-checkpoint files against the real libraries (scripts/hf-lora-fixtures.py):
 * the files our writers make are byte for byte the ones PEFT's `PeftModel.from_pretrained` and
 * transformers' `AutoModelForCausalLM.from_pretrained` loaded, and the engine's logits (adapter
 * unmerged, and the merged folder through the ordinary loader) equal theirs within 1e-4. An adapter
 * PEFT saved itself reads back with its weights and PeftModel's logits.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { cp, mkdtemp, readdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createRng } from "../../core/random.ts";
import { DecodeSession } from "../embedded/decode-session.ts";
import { HfEngineModel } from "./engine.ts";
import { readPeftAdapter } from "./peft.ts";
import { maxAbsDiff, readReference } from "./testing-fixtures.ts";
import {
  LORA_FIXTURE_NAMES,
  LORA_FIXTURES,
  readLoraReference,
  readLoraWritten,
  writeLoraFixtureFolders,
} from "./testing-lora.ts";
import { loadHfCheckpoint } from "./weights.ts";

const TOLERANCE = 1e-4;

async function sha256s(folder: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const file of (await readdir(folder)).sort())
    out[file] = createHash("sha256")
      .update(await readFile(join(folder, file)))
      .digest("hex");
  return out;
}

function engineLogits(model: HfEngineModel, ids: number[][]): Float32Array {
  try {
    return model.logits(Int32Array.from(ids.flat()), ids.length);
  } finally {
    model.dispose();
  }
}

for (const name of LORA_FIXTURE_NAMES) {
  test(`${name}: the adapter and merged folders we write are the files PEFT and transformers loaded, with their logits`, async (t) => {
    const written = readLoraWritten(name);
    const out = await mkdtemp(join(tmpdir(), `agentrl-lora-${name}-`));
    const reference = await writeLoraFixtureFolders(name, out);
    assert.deepEqual(await sha256s(join(out, "adapter")), written.adapter_sha256);
    assert.deepEqual(await sha256s(join(out, "merged")), written.merged_sha256);
    assert.equal(written.merged_dtype, "torch.float32", "a plain from_pretrained keeps float32");

    // Our reader takes our adapter back, and the engine serves it unmerged.
    const adapter = await readPeftAdapter(join(out, "adapter"), reference.base.config);
    assert.deepEqual(adapter.config, reference.config);
    const withAdapter = engineLogits(new HfEngineModel(reference.base, { lora: adapter }), reference.ids);
    const adapterError = maxAbsDiff(withAdapter, written.adapter_logits);
    assert.ok(adapterError <= TOLERANCE, `engine + adapter vs PeftModel: ${adapterError}`);
    // The merged folder through the ordinary checkpoint loader.
    const merged = engineLogits(HfEngineModel.load(join(out, "merged")), reference.ids);
    const mergedError = maxAbsDiff(merged, written.merged_logits);
    assert.ok(mergedError <= TOLERANCE, `merged folder vs transformers: ${mergedError}`);
    // The adapter changes the model: the comparison is not with the base's logits.
    const base = engineLogits(new HfEngineModel(reference.base), reference.ids);
    assert.ok(maxAbsDiff(base, written.adapter_logits) > 100 * TOLERANCE, "the adapter moves the logits");
    t.diagnostic(
      `${name}: max |Δlogit| adapter ${adapterError.toExponential(2)}, merged ${mergedError.toExponential(2)}`,
    );
  });

  test(`${name}: an adapter saved by PEFT itself reads back with its weights, PeftModel's logits and greedy decode`, async (t) => {
    const reference = readLoraReference(name);
    const adapter = await readPeftAdapter(join(LORA_FIXTURES, name, "peft-adapter"), reference.base.config);
    assert.deepEqual(adapter.config, reference.config);
    assert.deepEqual(Object.keys(adapter.tensors).sort(), Object.keys(reference.adapter).sort());
    for (const [path, tensor] of Object.entries(reference.adapter))
      assert.deepEqual(adapter.tensors[path], tensor, path);
    const logits = engineLogits(new HfEngineModel(reference.base, { lora: adapter }), reference.ids);
    const error = maxAbsDiff(logits, reference.peftLogits);
    assert.ok(error <= TOLERANCE, `engine + PEFT's adapter vs PeftModel: ${error}`);
    t.diagnostic(`${name}: max |Δlogit| ${error.toExponential(2)}`);
    // The KV-cache decode with the adapter (the rollout path) continues as PeftModel.generate does.
    const model = new HfEngineModel(reference.base, { lora: adapter });
    const session = new DecodeSession(model.kvModel, null, { rows: 1 });
    try {
      session.feed(0, reference.prompt);
      const [result] = await session.generate([
        {
          slot: 0,
          maxNew: reference.peftGreedy.length,
          stop: [],
          rng: createRng(0),
          sampling: { temperature: 0, topP: 1 },
        },
      ]);
      assert.deepEqual(result.ids, reference.peftGreedy);
      const baseGreedy = readReference(name).greedy.slice(0, reference.peftGreedy.length);
      assert.notDeepEqual(baseGreedy, reference.peftGreedy, "the adapter changes the continuation");
    } finally {
      session.dispose();
      model.dispose();
    }
  });
}

test("adapters this forward cannot compute are refused by field name", async () => {
  const name = "qwen3-tied";
  const model = loadHfCheckpoint(join(LORA_FIXTURES, "..", name)).config;
  const source = join(LORA_FIXTURES, name, "peft-adapter");
  const config = JSON.parse(await readFile(join(source, "adapter_config.json"), "utf8"));
  const refused = async (change: Record<string, unknown>, pattern: RegExp) => {
    const folder = await mkdtemp(join(tmpdir(), "agentrl-peft-"));
    await cp(source, folder, { recursive: true });
    await writeFile(join(folder, "adapter_config.json"), JSON.stringify({ ...config, ...change }));
    await assert.rejects(readPeftAdapter(folder, model), pattern);
  };
  await refused({ use_dora: true }, /use_dora is true; must be false \(DoRA is not supported\)/);
  await refused({ peft_type: "IA3" }, /peft_type is "IA3"; must be "LORA"/);
  await refused({ rank_pattern: { q_proj: 8 } }, /rank_pattern is .*one rank for every module/);
  await refused({ target_modules: ".*proj" }, /target_modules must be a list .*\(a regex is not read\)/);
  await refused({ target_modules: ["q_proj", "c_attn"] }, /"c_attn" is not a projection of qwen3's layers/);
  await refused(
    { r: 8 },
    /"base_model\.model\.model\.layers\.0\.self_attn\.q_proj\.lora_A\.weight" has shape \[4,32\], expected \[8,32\]/,
  );
  await refused(
    { target_modules: ["q_proj"] },
    /24 tensors that adapter_config.json does not describe: .*layers\.0\.mlp\.down_proj\.lora_A/,
  );
});
