/**
 * The dtype of a written model folder (peft.ts `writeHfCheckpoint`): by default the base's own, as
 * PEFT's `merge_and_unload` + `save_pretrained` gives (a bf16 base, a bf16 merged folder; a
 * float32 one, the same bytes as before), or the one asked for; the folder reloads through the
 * ordinary loader with logits within half precision's rounding of the float32 folder's.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { HfEngineModel } from "./engine.ts";
import { writeMergedCheckpoint } from "./peft.ts";
import { readLoraReference, readLoraWritten } from "./testing-lora.ts";
import { loadHfCheckpoint } from "./weights.ts";

function engineLogits(folder: string, ids: number[][]): Float32Array {
  const model = HfEngineModel.load(folder);
  try {
    return model.logits(Int32Array.from(ids.flat()), ids.length);
  } finally {
    model.dispose();
  }
}

function maxAbs(a: Float32Array, b?: Float32Array): number {
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i] - (b ? b[i] : 0)));
  return max;
}

async function headerCodes(folder: string): Promise<Set<string>> {
  const bytes = await readFile(join(folder, "model.safetensors"));
  const length = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + length).toString("utf8"));
  return new Set(
    Object.entries(header)
      .filter(([name]) => name !== "__metadata__")
      .map(([, info]) => (info as { dtype: string }).dtype),
  );
}

test("a bf16 base's merged folder is bf16 by default, half the size, and its logits are the f32 folder's within bf16 rounding", async (t) => {
  const out = await mkdtemp(join(tmpdir(), "agentrl-save-dtype-"));
  t.after(() => rm(out, { recursive: true, force: true }));
  const { base, config, adapter, ids } = readLoraReference("llama3-bf16");
  assert.equal(base.dtype, "bfloat16", "the loader records config.json's dtype");
  await writeMergedCheckpoint(base, adapter, config, join(out, "bf16"));
  await writeMergedCheckpoint(base, adapter, config, join(out, "f32"), { dtype: "float32" });
  const json = JSON.parse(await readFile(join(out, "bf16", "config.json"), "utf8"));
  assert.equal(json.dtype, "bfloat16");
  assert.deepEqual(await headerCodes(join(out, "bf16")), new Set(["BF16"]));
  assert.deepEqual(await headerCodes(join(out, "f32")), new Set(["F32"]));
  const reloaded = loadHfCheckpoint(join(out, "bf16"));
  assert.equal(reloaded.dtype, "bfloat16");
  const sizes = await Promise.all(["bf16", "f32"].map((d) => stat(join(out, d, "model.safetensors"))));
  const ratio = sizes[0].size / sizes[1].size;
  assert.ok(ratio > 0.49 && ratio < 0.52, `bf16 / f32 size ${ratio}`);
  const f32 = engineLogits(join(out, "f32"), ids);
  const bf16 = engineLogits(join(out, "bf16"), ids);
  // Each weight is rounded by at most 2^-9 of itself (8 bits of mantissa) and the errors add up
  // through the layers: measured 1.2% of the largest |logit| (0.16 of 13.2). The bound, 2^-5
  // (3.1%) of it, leaves a 2.5-fold margin; a wrong narrowing (swapped halves, the wrong format)
  // moves the logits by their own scale. The rounding itself is checked bit by bit in
  // engine/safetensors.test.ts.
  const error = maxAbs(bf16, f32);
  const bound = maxAbs(f32) * 2 ** -5;
  assert.ok(error <= bound, `bf16 vs f32 merged logits: ${error} > ${bound}`);
  assert.ok(error > 0, "the weights were rounded");
  t.diagnostic(
    `llama3-bf16 merged: ${sizes[0].size} B bf16, ${sizes[1].size} B f32; max |Δlogit| ${error.toExponential(2)} (bound ${bound.toExponential(2)}, max |logit| ${maxAbs(f32).toFixed(3)})`,
  );
});

test("a float32 base's merged folder stays float32, byte for byte what transformers loaded; float16 on request", async (t) => {
  const out = await mkdtemp(join(tmpdir(), "agentrl-save-dtype-"));
  t.after(() => rm(out, { recursive: true, force: true }));
  const { base, config, adapter, ids } = readLoraReference("qwen3-tied");
  assert.equal(base.dtype, "float32");
  await writeMergedCheckpoint(base, adapter, config, join(out, "default"));
  const written = readLoraWritten("qwen3-tied");
  for (const [file, sha] of Object.entries(written.merged_sha256)) {
    const bytes = await readFile(join(out, "default", file));
    assert.equal(createHash("sha256").update(bytes).digest("hex"), sha, file);
  }
  await writeMergedCheckpoint(base, adapter, config, join(out, "f16"), { dtype: "float16" });
  assert.equal(JSON.parse(await readFile(join(out, "f16", "config.json"), "utf8")).dtype, "float16");
  assert.deepEqual(await headerCodes(join(out, "f16")), new Set(["F16"]));
  const f32 = engineLogits(join(out, "default"), ids);
  // float16 keeps 11 bits, 8 times finer than bfloat16: the bound is 8 times tighter.
  const error = maxAbs(engineLogits(join(out, "f16"), ids), f32);
  assert.ok(error <= maxAbs(f32) * 2 ** -8, `f16 vs f32 merged logits: ${error}`);
  t.diagnostic(`qwen3-tied merged f16: max |Δlogit| ${error.toExponential(2)}`);
});
