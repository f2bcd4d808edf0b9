/**
 * Test-only entry point for scripts/hf-lora-fixtures.py: writes the adapter and merged folders of
 * one LoRA fixture (testing-lora.ts) for PEFT and transformers to load.
 *
 *   node src/policy/hf/testing-lora-write.ts <qwen3-tied|llama3-bf16> <out folder>
 */
import { LORA_FIXTURE_NAMES, type LoraFixtureName, writeLoraFixtureFolders } from "./testing-lora.ts";

const [name, out] = process.argv.slice(2);
if (!LORA_FIXTURE_NAMES.includes(name as LoraFixtureName) || !out) {
  console.error(`usage: testing-lora-write.ts <${LORA_FIXTURE_NAMES.join("|")}> <out folder>`);
  process.exit(2);
}
await writeLoraFixtureFolders(name as LoraFixtureName, out);
