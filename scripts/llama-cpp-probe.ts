/**
 * llama.cpp's speed on a GGUF file (the prebuilt CPU build of the `node-llama-cpp` dev dependency,
 * 2 threads, its default F16 KV cache): prefill of a 256-token prompt, then 64 greedy tokens for
 * 1 sequence and for 8 at once (one context, 8 sequences, evaluated together). The same work as
 * scripts/real-size-probe.ts on our engine:
 *
 *     node scripts/llama-cpp-probe.ts <file.gguf>
 */
import { getLlama, LlamaLogLevel, type Token } from "node-llama-cpp";

const llama = await getLlama({ build: "never", gpu: false, logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath: process.argv[2] });
const prompt = (row: number) => Array.from({ length: 256 }, (_, i) => (100 + i * 7 + row * 13) as Token);
for (const rows of [1, 8]) {
  const context = await model.createContext({
    sequences: rows,
    contextSize: rows * 512,
    batchSize: 512,
    threads: 2,
  });
  const sequences = Array.from({ length: rows }, () => context.getSequence());
  let t = performance.now();
  const runs = sequences.map(async (sequence, row) => {
    const tokens = sequence.evaluate(prompt(row), { temperature: 0 });
    let n = 0;
    for await (const _ of tokens) {
      if (n === 0 && row === 0) {
        const prefill = (performance.now() - t) / 1000;
        console.log(
          `rows ${rows}: prefill ${((rows * 256) / prefill).toFixed(0)} tok/s (first token after ${prefill.toFixed(2)} s)`,
        );
        t = performance.now();
      }
      if (++n >= 65) break;
    }
  });
  await Promise.all(runs);
  const decode = (performance.now() - t) / 1000;
  console.log(
    `rows ${rows}: decode ${((rows * 64) / decode).toFixed(1)} tok/s (${((decode / 64) * 1000).toFixed(0)} ms a step)`,
  );
  await context.dispose();
}
await model.dispose();
