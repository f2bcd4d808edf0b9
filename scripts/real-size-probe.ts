/**
 * Memory and speed of one checkpoint folder on the engine, phase by phase (the process's resident
 * set after each): load, prefill of a 256-token prompt, greedy decode of 64 tokens at 1 row and at
 * 8 rows. For measuring at real sizes (scripts/hf-train-memory-checkpoint.py 0.6b|1.7b):
 *
 *     node scripts/real-size-probe.ts <folder>
 */
import { createRng } from "../src/core/random.ts";
import { DecodeSession } from "../src/policy/embedded/decode-session.ts";
import { HfEngineModel } from "../src/policy/hf/engine.ts";

const rss = () =>
  `${(process.memoryUsage().rss / 1e9).toFixed(2)} GB (peak ${(process.resourceUsage().maxRSS / 1e6).toFixed(2)})`;
const folder = process.argv[2];
let t = performance.now();
const model = HfEngineModel.load(folder, { maxLen: 1024 });
console.log(`load ${((performance.now() - t) / 1000).toFixed(1)} s, ${rss()}`);
const V = model.config.vocabSize;
const rng = createRng(1);
const prompt = (n: number) => Array.from({ length: n }, () => 3 + rng.int(Math.min(V, 150000) - 3));
for (const rows of [1, 8, 1]) {
  const session = new DecodeSession(model.kvModel, null, { rows });
  for (let row = 0; row < rows; row++) session.feed(row, prompt(256));
  t = performance.now();
  await session.generate([
    { slot: 0, maxNew: 1, stop: [], rng: createRng(0), sampling: { temperature: 0, topP: 1 } },
  ]);
  const prefill = (performance.now() - t) / 1000;
  console.log(`rows ${rows}: prefill ${((rows * 256) / prefill).toFixed(0)} tok/s, ${rss()}`);
  t = performance.now();
  await session.generate(
    Array.from({ length: rows }, (_, slot) => ({
      slot,
      maxNew: 64,
      stop: [],
      rng: createRng(slot),
      sampling: { temperature: 0, topP: 1 },
    })),
  );
  const decode = (performance.now() - t) / 1000;
  console.log(
    `rows ${rows}: decode ${((rows * 64) / decode).toFixed(1)} tok/s (${((decode / 64) * 1000).toFixed(0)} ms a step), ${rss()}`,
  );
  session.dispose();
}
model.dispose();
