/**
 * Engine throughput on the reference model (V=256, d=128, 4 layers, 4 heads, FF=512, pre-LN,
 * GELU, learned positions, the PyTorch reference's model): a fused AdamW train step (B=32, T=64),
 * per-token log-prob scoring (B=64, T=64) and KV-cache sampling (B=64, 16-token prompt, 48 new
 * tokens), on the default engine and, in a child process, on the other one (ONNX Runtime or
 * jax-js: `onnx_*` / `jax_*` keys, and `*_vs_jax` ratios). When PyTorch is installed, the same
 * model and workloads in eager PyTorch (bench/torch/engine_reference.py) run in the same process
 * tree right after, and the `*_vs_torch` keys are our throughput divided by its (null without
 * PyTorch; torch-reference.ts says how to install it).
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createRng } from "../src/core/random.ts";
import { type EngineName, engineName } from "../src/engine/backend.ts";
import { engineThreads } from "../src/engine/exec.ts";
import { keyFromSeed } from "../src/engine/init.ts";
import { defaultThreads } from "../src/engine/onnx/runtime.ts";
import { createTrainer } from "../src/engine/train.ts";
import { disposeTree } from "../src/engine/tree.ts";
import { makeTokenBatches } from "../src/policy/embedded/batch.ts";
import { REFERENCE_CONFIG } from "../src/policy/embedded/config.ts";
import { DecodeSession } from "../src/policy/embedded/decode-session.ts";
import { crossEntropy, tokenLoss } from "../src/policy/embedded/losses.ts";
import { initGpt } from "../src/policy/embedded/model.ts";
import { scoreTokens } from "../src/policy/embedded/score.ts";
import { runTorchReference, torchAvailable } from "./torch-reference.ts";

const V = REFERENCE_CONFIG.vocabSize;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** The reference's training data: x_{t+1} = 5·x_t + 3 mod V from a random start. */
function affineSequences(rows: number, length: number, seed: number): number[][] {
  const rng = createRng(seed);
  return Array.from({ length: rows }, () => {
    const sequence = [rng.int(V)];
    while (sequence.length < length) sequence.push((sequence[sequence.length - 1] * 5 + 3) % V);
    return sequence;
  });
}

export async function benchTrain(): Promise<number> {
  const config = { ...REFERENCE_CONFIG, maxLen: 64 };
  const trainer = createTrainer({ loss: tokenLoss(config, crossEntropy) });
  let state = trainer.init(initGpt(config, keyFromSeed(0)));
  const times: number[] = [];
  // The first 6 steps compile and let the execution site pick pool or main thread (exec.ts).
  for (let step = 0; step < 16; step++) {
    const batches = makeTokenBatches(
      affineSequences(32, 64, step).map((ids) => ({ ids })),
      { maxLen: 64, microBatchSize: 32 },
    );
    const start = performance.now();
    const [next] = await trainer.step(state, batches, 3e-3);
    if (step >= 6) times.push(performance.now() - start);
    state = next;
  }
  disposeTree(state.params);
  disposeTree(state.opt as never);
  trainer.dispose();
  return (32 * 64) / (median(times) / 1000);
}

export async function benchScore(): Promise<number> {
  const config = { ...REFERENCE_CONFIG, maxLen: 64 };
  const params = initGpt(config, keyFromSeed(1));
  const sequences = affineSequences(64, 64, 7);
  const times: number[] = [];
  for (let i = 0; i < 14; i++) {
    const start = performance.now();
    await scoreTokens(params, config, sequences, { rows: 64 });
    if (i >= 6) times.push(performance.now() - start);
  }
  disposeTree(params);
  return (64 * 64) / (median(times) / 1000);
}

export async function benchSample(): Promise<number> {
  const config = { ...REFERENCE_CONFIG, maxLen: 64 };
  const params = initGpt(config, keyFromSeed(2));
  const session = new DecodeSession(params, config, { rows: 64 });
  const rng = createRng(3);
  const times: number[] = [];
  for (let round = 0; round < 3; round++) {
    for (let slot = 0; slot < 64; slot++) {
      session.reset(slot);
      session.feed(
        slot,
        Array.from({ length: 16 }, () => rng.int(V)),
      );
    }
    const start = performance.now();
    const results = await session.generate(
      Array.from({ length: 64 }, (_, slot) => ({
        slot,
        maxNew: 48,
        stop: [],
        rng: rng.fork(slot),
        sampling: { temperature: 0.8, topP: 1 },
      })),
    );
    if (round >= 1) times.push(performance.now() - start);
    if (results.some((r) => r.ids.length !== 48)) throw new Error("benchSample: a row stopped early");
  }
  session.dispose();
  disposeTree(params);
  return (64 * 48) / (median(times) / 1000);
}

/** Runs the PyTorch reference; null without PyTorch. */
async function torchReference(): Promise<Record<string, number> | null> {
  if (!(await torchAvailable())) return null;
  const stdout = await runTorchReference("engine_reference.py", ["--threads", "1"], 15);
  return JSON.parse(stdout.trim().split("\n").pop() ?? "") as Record<string, number>;
}

/** The three figures on the engine this process runs (AGENTRL_ENGINE). */
async function engineFigures(): Promise<Figures> {
  return { train: await benchTrain(), score: await benchScore(), sample: await benchSample() };
}

/**
 * The figures on another engine, in a child process: the engine decides at start-up whether
 * jax-js runs its worker pool (only for jax), so each engine is measured as a user would run it.
 */
async function otherEngineFigures(engine: EngineName): Promise<Figures> {
  const script = fileURLToPath(import.meta.url);
  const { stdout } = await promisify(execFile)(process.execPath, [script, "--figures"], {
    env: { ...process.env, AGENTRL_ENGINE: engine },
    timeout: 15 * 60 * 1000,
  });
  return JSON.parse(stdout.trim().split("\n").pop() ?? "{}");
}

type Figures = { train: number; score: number; sample: number };
const FIGURES = ["train", "score", "sample"] as const;

/** Torch's three figures from one reference run, as tokens/s. */
function torchFigures(torch: Record<string, number>): Figures {
  return {
    train: torch.train_tok_per_s,
    score: (64 * 64) / (torch.logprobs_B64_T64_ms / 1000),
    sample: torch.sample_kvcache_tok_per_s,
  };
}

/**
 * Ours against PyTorch in `rounds` rounds (default 3): this machine's speed drifts by up to half
 * over minutes, so a PyTorch run and ours taken a minute apart can differ by that alone. Ours is
 * measured before the first PyTorch run and after each one; a round's ratio is ours (the mean of
 * the two measurements bracketing that PyTorch run) over PyTorch's. The `*_vs_torch` figures are
 * the rounds' median ratio, with `_min`/`_max` the spread; tokens/s are medians of the runs.
 */
export async function benchEngine(options: { rounds?: number } = {}): Promise<Record<string, number | null>> {
  const rounds = options.rounds ?? 3;
  const engine = engineName();
  const other: EngineName = engine === "onnx" ? "jax" : "onnx";
  const ours: Figures[] = [await engineFigures()];
  const theirs = await otherEngineFigures(other);
  const torch: Figures[] = [];
  for (let round = 0; round < rounds; round++) {
    process.stderr.write(`bench: engine round ${round + 1}/${rounds} (PyTorch reference, then ours)\n`);
    const reference = await torchReference();
    if (!reference) break;
    torch.push(torchFigures(reference));
    ours.push(await engineFigures());
  }
  const column = (runs: Figures[], key: keyof Figures) => runs.map((figures) => figures[key]);
  const out: Record<string, number | null> = {
    engine_onnx: engine === "onnx" ? 1 : 0,
    /** jax-js's worker threads (1: no pool, as under ONNX Runtime). */
    engine_threads: engineThreads(),
    ort_threads: engine === "onnx" ? defaultThreads() : null,
    bench_rounds: torch.length,
  };
  for (const key of FIGURES) {
    const mine = median(column(ours, key));
    const reference = torch.length > 0 ? median(column(torch, key)) : null;
    const ratios = torch.map((t, round) => (ours[round][key] + ours[round + 1][key]) / 2 / t[key]);
    out[`${key}_tokens_per_s`] = mine;
    out[`${key}_vs_torch`] = ratios.length > 0 ? median(ratios) : null;
    out[`${key}_vs_torch_min`] = ratios.length > 0 ? Math.min(...ratios) : null;
    out[`${key}_vs_torch_max`] = ratios.length > 0 ? Math.max(...ratios) : null;
    out[`${other}_${key}_tokens_per_s`] = theirs[key];
    out[`${other}_${key}_vs_torch`] = reference ? theirs[key] / reference : null;
    out[`${key}_vs_${other}`] = mine / theirs[key];
    out[`torch_${key}_tokens_per_s`] = reference;
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(
    JSON.stringify(process.argv.includes("--figures") ? await engineFigures() : await benchEngine()),
  );
}
