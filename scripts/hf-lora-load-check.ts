/**
 * The engine's logits of a `train rl --policy hf:` run's adapter (`hf:<run>/adapter`) and merged folder
 * against PEFT's and transformers' (torch.json from scripts/hf-lora-load-check.py, in the working folder).
 *
 *   node scripts/hf-lora-load-check.ts <run directory>
 */
import { readFileSync } from "node:fs";
import { loadHfPolicy } from "../src/policy/hf/load.ts";

const run = process.argv[2];
const ids = Int32Array.from({ length: 48 }, (_, i) => (i * 37) % 400);
const torch = JSON.parse(readFileSync("torch.json", "utf8"));
for (const folder of [`${run}/adapter`, `${run}/model`]) {
  const policy = await loadHfPolicy(folder);
  const logits = policy.model.logits(ids, 1);
  const max = (ref: number[]) => ref.reduce((m, x, i) => Math.max(m, Math.abs(x - logits[i])), 0);
  console.log(
    folder,
    "engine vs PeftModel",
    max(torch.peft),
    "engine vs transformers merged",
    max(torch.merged),
  );
  policy.model.dispose();
  await policy.close();
}
