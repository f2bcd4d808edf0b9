/**
 * LoRA training on Hugging Face checkpoints against TRL, in one run on the same random checkpoints
 * as the hf bench (Qwen3 ~28M, SmolLM2-135M's Llama shape; bench/torch/trl_reference.py writes
 * them with a word-level tokenizer so TRL's text prompts are exactly the ids we feed):
 *
 * - GRPO: one optimizer step = 2 prompts of 16 tokens × G 4 completions of exactly 32 tokens
 *   (no EOS: TRL with min_new_tokens, ours without a stop token), temperature 1, the same reward
 *   (fraction of even ids), group-normalised advantages, PPO-clip ε 0.2, β 0, token mean, LoRA
 *   r 16 / alpha 32 on q,k,v,o_proj, AdamW lr 1e-5 without weight decay, grad norm 1. Ours:
 *   bench/trl-step.ts (engine sampling with the unmerged adapter, one compiled update on ONNX
 *   Runtime); theirs: GRPOTrainer + PEFT on PyTorch CPU (no vLLM, gradient checkpointing off as
 *   ours has none).
 * - SFT: 4 rows × 128 tokens, cross-entropy on every token; ours a compiled LoRA step, theirs
 *   SFTTrainer + PEFT on pre-tokenised rows.
 *
 * Each side runs each figure in its own process at 1 and 2 threads and keeps the faster; the
 * median of 3 steps after a warm-up step. Keys: `grpo_step_vs_trl` (TRL's step time / ours: > 1
 * means we are faster) and `sft_tokens_vs_trl` (our tokens/s / TRL's), the lower of the two sizes'
 * ratios; per size the times, peak RSS of each side, the work done (tokens generated per step,
 * trainable parameters: both sides must agree) and our step's profile. `trl_machine_*` are the
 * cores' measured limits (PyTorch sgemm GFLOP/s, memory read GB/s) and `grpo_sample_limit_*` the
 * sampling rate they allow (each decode step reads every weight once and does 2·params FLOPs per
 * row). Without Python with torch, transformers, peft, trl and datasets the keys are null.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createRng } from "../src/core/random.ts";
import { benchPython, runTorchReference } from "./torch-reference.ts";
import type { GrpoFigures, SftFigures, TrlBenchSettings } from "./trl-step.ts";

const SIZES = { "qwen3-30m": "30m", "smollm2-135m": "135m" } as const;
const PROMPTS = 2;
const PROMPT_LEN = 16;
const SFT_ROWS = 4;
const SFT_LEN = 128;
/** Smaller than both vocabularies, above the special ids 0–2. */
const ID_RANGE = 30_000;
const THREADS = [1, 2];

export const TRL_INSTALL_HINT =
  "bench trl: Python with torch, transformers, peft, trl and datasets is missing, so the trl figures " +
  "are null. Install them with `pip install torch transformers peft trl datasets` " +
  "(torch from https://download.pytorch.org/whl/cpu for CPU only), or point AGENTRL_BENCH_PYTHON at a Python that has them.";

export const PROFILE_PHASES = ["adapter", "sample", "reward", "update", "forward"] as const;

/** Every key the suite reports (all null without TRL). */
export function trlKeys(): string[] {
  const perSize = [
    "grpo_step_vs_trl",
    "sft_tokens_vs_trl",
    "grpo_step_s",
    "trl_grpo_step_s",
    "grpo_threads",
    "trl_grpo_threads",
    "grpo_peak_rss_mb",
    "trl_grpo_peak_rss_mb",
    "grpo_generated_tokens",
    "trl_grpo_generated_tokens",
    "lora_trainable_params",
    "trl_lora_trainable_params",
    "sft_tokens_per_s",
    "trl_sft_tokens_per_s",
    "sft_threads",
    "trl_sft_threads",
    "sft_peak_rss_mb",
    "trl_sft_peak_rss_mb",
    "grpo_sample_limit_tokens_per_s",
    ...PROFILE_PHASES.map((phase) => `grpo_profile_${phase}_s`),
  ];
  return [
    "grpo_step_vs_trl",
    "sft_tokens_vs_trl",
    "trl_machine_gflops",
    "trl_machine_read_gbps",
    "trl_load_1m_start",
    "trl_load_1m_end",
    ...Object.values(SIZES).flatMap((size) => perSize.map((key) => `${key}_${size}`)),
  ];
}

/** The shared settings: random prompts and SFT rows from a fixed seed. */
export function trlSettings(): TrlBenchSettings {
  const rng = createRng(37);
  const ids = (n: number) => Array.from({ length: n }, () => 3 + rng.int(ID_RANGE - 3));
  return {
    group: 4,
    completion: 32,
    rank: 16,
    alpha: 32,
    targets: ["q_proj", "k_proj", "v_proj", "o_proj"],
    lr: 1e-5,
    steps: 3,
    warmup: 1,
    prompts: Array.from({ length: PROMPTS }, () => ids(PROMPT_LEN)),
    sftRows: Array.from({ length: SFT_ROWS }, () => ids(SFT_LEN)),
    // Unmerged, as TRL samples with its PEFT model. Sampling from merged weights (lora-merger.ts)
    // took the same time at both sizes: the adapter's nodes are not what decode spends its time on.
    merge: false,
  };
}

async function trlAvailable(): Promise<boolean> {
  try {
    await promisify(execFile)(benchPython(), ["-c", "import torch, transformers, peft, trl, datasets"]);
    return true;
  } catch {
    process.stderr.write(`${TRL_INSTALL_HINT}\n`);
    return false;
  }
}

const lastJson = <T>(stdout: string): T => JSON.parse(stdout.trim().split("\n").pop()!) as T;

/** Our figure for one kind at each thread count (a child process each), the faster kept. */
async function ours<T extends { step_s: number }>(
  kind: "grpo" | "sft",
  folder: string,
  settingsPath: string,
): Promise<T & { threads: number }> {
  let best: (T & { threads: number }) | null = null;
  for (const threads of THREADS) {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [fileURLToPath(new URL("./trl-step.ts", import.meta.url)), kind, folder, settingsPath],
      {
        env: { ...process.env, AGENTRL_ORT_THREADS: String(threads) },
        timeout: 20 * 60 * 1000,
        maxBuffer: 64 * 2 ** 20,
      },
    );
    const figures = lastJson<T>(stdout);
    if (!best || figures.step_s < best.step_s) best = { ...figures, threads };
  }
  return best!;
}

interface TrlGrpo {
  step_s: number;
  generated_tokens_per_step: number;
  trainable_params: number;
  peak_rss_mb: number;
  threads: number;
}
type TrlSft = TrlGrpo & { tokens_per_s: number };

/** TRL's figure for one kind at each thread count (a process each), the faster kept. */
async function theirs<T extends { step_s: number }>(
  kind: "grpo" | "sft",
  folder: string,
  settingsPath: string,
  work: string,
): Promise<T> {
  let best: T | null = null;
  for (const threads of THREADS) {
    const stdout = await runTorchReference(
      "trl_reference.py",
      [kind, "--model", folder, "--settings", settingsPath, "--work", work, "--threads", String(threads)],
      30,
    );
    const figures = lastJson<T>(stdout);
    if (!best || figures.step_s < best.step_s) best = figures;
  }
  return best!;
}

/**
 * Decode-rate bound of B rows on a model of `params` float32 parameters: each step reads the
 * weights once (4·params bytes) and does 2·params FLOPs per row, so it takes at least
 * max(4·params / bandwidth, 2·params·B / flops) seconds for B tokens. 28M params, 8 rows,
 * 10 GB/s, 50 GFLOP/s: max(11.2 ms, 9.0 ms) → 714 tokens/s.
 */
export function decodeLimit(params: number, rows: number, gflops: number, readGbps: number): number {
  const seconds = Math.max((4 * params) / (readGbps * 1e9), (2 * params * rows) / (gflops * 1e9));
  return rows / seconds;
}

export async function benchTrl(): Promise<Record<string, number | null>> {
  const figures: Record<string, number | null> = Object.fromEntries(trlKeys().map((key) => [key, null]));
  if (!(await trlAvailable())) return figures;
  figures.trl_load_1m_start = loadavg()[0];
  const dir = await mkdtemp(join(tmpdir(), "agentrl-bench-trl-"));
  try {
    const settings = trlSettings();
    const settingsPath = join(dir, "settings.json");
    await writeFile(settingsPath, JSON.stringify(settings));
    const made = (await runTorchReference("trl_reference.py", ["make", "--out", dir], 10))
      .trim()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as { name: string; params: number });
    const params = new Map(made.map((m) => [m.name, m.params]));
    const machine = lastJson<{ gflops: number; read_gbps: number }>(
      await runTorchReference("trl_reference.py", ["limits"], 5),
    );
    figures.trl_machine_gflops = machine.gflops;
    figures.trl_machine_read_gbps = machine.read_gbps;
    const ratios = { grpo: [] as number[], sft: [] as number[] };
    for (const [name, size] of Object.entries(SIZES)) {
      const folder = join(dir, name);
      const log = (line: string) => process.stderr.write(`bench trl ${size}: ${line}\n`);
      const grpo = await ours<GrpoFigures>("grpo", folder, settingsPath);
      const trlGrpo = await theirs<TrlGrpo>("grpo", folder, settingsPath, join(dir, "work"));
      const sft = await ours<SftFigures>("sft", folder, settingsPath);
      const trlSft = await theirs<TrlSft>("sft", folder, settingsPath, join(dir, "work"));
      const put = (key: string, value: number) => {
        figures[`${key}_${size}`] = value;
      };
      put("grpo_step_s", grpo.step_s);
      put("trl_grpo_step_s", trlGrpo.step_s);
      put("grpo_threads", grpo.threads);
      put("trl_grpo_threads", trlGrpo.threads);
      put("grpo_peak_rss_mb", grpo.peak_rss_mb);
      put("trl_grpo_peak_rss_mb", trlGrpo.peak_rss_mb);
      put("grpo_generated_tokens", grpo.generated_tokens_per_step);
      put("trl_grpo_generated_tokens", trlGrpo.generated_tokens_per_step);
      put("lora_trainable_params", grpo.trainable_params);
      put("trl_lora_trainable_params", trlGrpo.trainable_params);
      put("sft_tokens_per_s", sft.tokens_per_s);
      put("trl_sft_tokens_per_s", trlSft.tokens_per_s);
      put("sft_threads", sft.threads);
      put("trl_sft_threads", trlSft.threads);
      put("sft_peak_rss_mb", sft.peak_rss_mb);
      put("trl_sft_peak_rss_mb", trlSft.peak_rss_mb);
      for (const phase of PROFILE_PHASES) put(`grpo_profile_${phase}_s`, grpo.profile[`${phase}_s`]);
      const rows = PROMPTS * settings.group;
      put(
        "grpo_sample_limit_tokens_per_s",
        decodeLimit(params.get(name)!, rows, machine.gflops, machine.read_gbps),
      );
      ratios.grpo.push(trlGrpo.step_s / grpo.step_s);
      ratios.sft.push(sft.tokens_per_s / trlSft.tokens_per_s);
      put("grpo_step_vs_trl", ratios.grpo.at(-1)!);
      put("sft_tokens_vs_trl", ratios.sft.at(-1)!);
      // Both sides must have done the same work for the ratio to mean anything.
      if (
        grpo.generated_tokens_per_step !== trlGrpo.generated_tokens_per_step ||
        grpo.trainable_params !== trlGrpo.trainable_params
      )
        log(
          `the two sides differ: generated ${grpo.generated_tokens_per_step} vs ${trlGrpo.generated_tokens_per_step} tokens, ` +
            `trainable ${grpo.trainable_params} vs ${trlGrpo.trainable_params} parameters`,
        );
      const p = grpo.profile;
      log(
        `GRPO step ${grpo.step_s.toFixed(2)} s (${grpo.threads} thr.) vs TRL ${trlGrpo.step_s.toFixed(2)} s ` +
          `(${trlGrpo.threads} thr.); ${grpo.generated_tokens_per_step} tokens generated, ${grpo.trainable_params} ` +
          `trainable parameters each side; profile: adapter ${p.adapter_s.toFixed(3)} s, sampling ${p.sample_s.toFixed(3)} s, ` +
          `rewards+batch ${p.reward_s.toFixed(3)} s, update ${p.update_s.toFixed(3)} s (a forward alone ${p.forward_s.toFixed(3)} s)`,
      );
    }
    figures.grpo_step_vs_trl = Math.min(...ratios.grpo);
    figures.sft_tokens_vs_trl = Math.min(...ratios.sft);
    figures.trl_load_1m_end = loadavg()[0];
    return figures;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
