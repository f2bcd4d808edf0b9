/**
 * Writes a bf16 checkpoint folder the way a trained model is saved (`writeHfCheckpoint`, its default
 * dtype the base's: the bf16 Llama 3 fixture's), from the fixture's weights scaled by 1.01 so that
 * every value is rounded again, and writes the engine's logits of it on fixed ids to engine.json in
 * the working folder, for scripts/hf-save-dtype-check.py to compare with transformers'.
 *
 *   node scripts/hf-save-dtype-check.ts <out folder>
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { HfEngineModel } from "../src/policy/hf/engine.ts";
import { writeHfCheckpoint } from "../src/policy/hf/peft.ts";
import { loadHfCheckpoint } from "../src/policy/hf/weights.ts";

const out = process.argv[2];
const base = loadHfCheckpoint(join(import.meta.dirname, "../src/policy/hf/fixtures/llama3-bf16"));
const scaled = Object.fromEntries(
  Object.entries(base.tensors).map(([path, tensor]) => [
    path,
    { ...tensor, data: Float32Array.from(tensor.data, (x) => x * 1.01) },
  ]),
);
await writeHfCheckpoint(base, scaled, out);
const model = new HfEngineModel(loadHfCheckpoint(out));
const ids = Int32Array.from({ length: 48 }, (_, i) => (i * 37) % base.config.vocabSize);
writeFileSync("engine.json", JSON.stringify({ logits: Array.from(model.logits(ids, 1)) }));
console.log(`wrote ${out} (dtype ${base.dtype} by default) and engine.json`);
model.dispose();
