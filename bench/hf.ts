/**
 * Hugging Face checkpoints on the engine against transformers, in one run on the same random
 * checkpoints (bench/torch/hf_reference.py writes them with save_pretrained, float32): a ~28M
 * Qwen3 (vocab 32000, hidden 384, 10 layers, GQA 6/2) and SmolLM2-135M's Llama shape. Sampling:
 * 8 rows, 32-token prompts, 64 greedy tokens each on the host KV caches (transformers: generate()
 * with its KV cache). Scoring: the log-probs of 4 rows of 128 tokens (one full forward each side).
 * transformers runs on PyTorch CPU with SDPA attention, the engine on ONNX Runtime, each at its
 * faster of 1 and 2 threads; each side's best of 3 timed runs after a warm-up (the best, not the
 * median: on a shared machine the other processes only ever slow a run down). Keys: `hf_sample_vs_transformers` and
 * `hf_score_vs_transformers` (the lower of the two sizes' ratios; per size in
 * `hf_{sample,score}_vs_transformers_{30m,135m}`), null when Python with transformers is missing.
 */

import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createRng } from "../src/core/random.ts";
import { DecodeSession } from "../src/policy/embedded/decode-session.ts";
import { HfEngineModel } from "../src/policy/hf/engine.ts";
import { benchPython, runTorchReference } from "./torch-reference.ts";

const ROWS = 8;
const PROMPT = 32;
const NEW = 64;
const SCORE_ROWS = 4;
const SCORE_LEN = 128;
const SIZES = { "qwen3-30m": "30m", "smollm2-135m": "135m" } as const;

async function timed(fn: () => Promise<unknown> | unknown, runs = 3): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    times.push((performance.now() - start) / 1000);
  }
  return Math.min(...times);
}

async function engineFigures(folder: string): Promise<{ sample: number; score: number }> {
  const model = HfEngineModel.load(folder, { maxLen: 512 });
  const V = model.config.vocabSize;
  const rng = createRng(1);
  const prompts = Array.from({ length: ROWS }, () =>
    Array.from({ length: PROMPT }, () => 3 + rng.int(V - 3)),
  );
  const scored = Int32Array.from({ length: SCORE_ROWS * SCORE_LEN }, () => 3 + rng.int(V - 3));
  const session = new DecodeSession(model.kvModel, null, { rows: ROWS });
  const sample = async () => {
    prompts.forEach((prompt, row) => {
      session.reset(row);
      session.feed(row, prompt);
    });
    await session.generate(
      prompts.map((_, slot) => ({
        slot,
        maxNew: NEW,
        stop: [],
        rng: createRng(slot),
        sampling: { temperature: 0, topP: 1 },
      })),
    );
  };
  try {
    const sampleSeconds = await timed(sample);
    const scoreSeconds = await timed(() => model.tokenLogprobs(scored, SCORE_ROWS));
    return { sample: (ROWS * NEW) / sampleSeconds, score: (SCORE_ROWS * SCORE_LEN) / scoreSeconds };
  } finally {
    session.dispose();
    model.dispose();
  }
}

/**
 * The engine's figures at its faster of 1 and 2 ORT threads, each setting in a child process
 * (sessions are built per process with AGENTRL_ORT_THREADS), as transformers gets its faster of
 * 1 and 2 torch threads: on a busy machine spinning threads can cost either side severalfold.
 */
async function bestEngineFigures(
  folder: string,
): Promise<{ sample: number; score: number; sampleThreads: number; scoreThreads: number }> {
  const best = { sample: 0, score: 0, sampleThreads: 0, scoreThreads: 0 };
  for (const threads of [1, 2]) {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [fileURLToPath(import.meta.url), "engine", folder],
      { env: { ...process.env, AGENTRL_ORT_THREADS: String(threads) }, timeout: 20 * 60 * 1000 },
    );
    const figures = JSON.parse(stdout.trim().split("\n").pop()!) as { sample: number; score: number };
    if (figures.sample > best.sample) Object.assign(best, { sample: figures.sample, sampleThreads: threads });
    if (figures.score > best.score) Object.assign(best, { score: figures.score, scoreThreads: threads });
  }
  return best;
}

async function transformersAvailable(): Promise<boolean> {
  try {
    await promisify(execFile)(benchPython(), ["-c", "import torch, transformers"]);
    return true;
  } catch {
    process.stderr.write(
      "bench hf: Python with torch and transformers is missing, so the hf_* figures are null " +
        "(point AGENTRL_BENCH_PYTHON at a Python that has them).\n",
    );
    return false;
  }
}

export async function benchHf(): Promise<Record<string, number | null>> {
  const keys = ["sample", "score"].flatMap((kind) => [
    `hf_${kind}_vs_transformers`,
    ...Object.values(SIZES).map((size) => `hf_${kind}_vs_transformers_${size}`),
  ]);
  if (!(await transformersAvailable())) return Object.fromEntries(keys.map((key) => [key, null]));
  const dir = await mkdtemp(join(tmpdir(), "agentrl-bench-hf-"));
  try {
    await runTorchReference("hf_reference.py", ["make", "--out", dir], 10);
    const stdout = await runTorchReference(
      "hf_reference.py",
      [
        "time",
        "--out",
        dir,
        ...[
          "--rows",
          ROWS,
          "--prompt",
          PROMPT,
          "--new",
          NEW,
          "--score-rows",
          SCORE_ROWS,
          "--score-len",
          SCORE_LEN,
        ].map(String),
      ],
      40,
    );
    const torch = new Map(
      stdout
        .trim()
        .split("\n")
        .map(
          (line) =>
            JSON.parse(line) as {
              name: string;
              sample_tokens_per_s: number;
              score_tokens_per_s: number;
              sample_threads: number;
              score_threads: number;
            },
        )
        .map((row) => [row.name, row]),
    );
    const figures: Record<string, number | null> = {};
    const ratios = { sample: [] as number[], score: [] as number[] };
    for (const [name, size] of Object.entries(SIZES)) {
      const ours = await bestEngineFigures(join(dir, name));
      const theirs = torch.get(name)!;
      figures[`hf_sample_tokens_per_s_${size}`] = ours.sample;
      figures[`hf_score_tokens_per_s_${size}`] = ours.score;
      figures[`hf_sample_threads_${size}`] = ours.sampleThreads;
      figures[`hf_score_threads_${size}`] = ours.scoreThreads;
      figures[`transformers_sample_tokens_per_s_${size}`] = theirs.sample_tokens_per_s;
      figures[`transformers_score_tokens_per_s_${size}`] = theirs.score_tokens_per_s;
      figures[`transformers_sample_threads_${size}`] = theirs.sample_threads;
      figures[`transformers_score_threads_${size}`] = theirs.score_threads;
      ratios.sample.push(ours.sample / theirs.sample_tokens_per_s);
      ratios.score.push(ours.score / theirs.score_tokens_per_s);
      figures[`hf_sample_vs_transformers_${size}`] = ratios.sample.at(-1)!;
      figures[`hf_score_vs_transformers_${size}`] = ratios.score.at(-1)!;
    }
    figures.hf_sample_vs_transformers = Math.min(...ratios.sample);
    figures.hf_score_vs_transformers = Math.min(...ratios.score);
    return figures;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// `node bench/hf.ts engine <folder>`: the engine's figures on one checkpoint, as one JSON line.
if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === "engine") {
  console.log(JSON.stringify(await engineFigures(process.argv[3])));
}
