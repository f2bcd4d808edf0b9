/**
 * Our side of the TRL bench (bench/trl.ts), one checkpoint per process: a GRPO step and a LoRA SFT
 * step on a Hugging Face checkpoint, as TRL's GRPOTrainer and SFTTrainer do them
 * (bench/torch/trl_reference.py), timed phase by phase.
 *
 * GRPO step: the adapter is copied to host memory and served unmerged on the engine (HfEngineModel
 * with `lora`: the programs are built once and reused, the adapter being an input); P prompts × G
 * completions of exactly C tokens are sampled (no stop token, temperature 1, top-p 1) on the host
 * KV caches; rewards (the fraction of even completion ids) and group-normalised advantages
 * ((r − mean) / (std + 1e-4), std unbiased, as TRL's scale_rewards "group"); one compiled PPO-clip
 * update of the adapter (ε 0.2 both ways, β 0, token-mean, entropy computed as TRL does) whose old
 * log-probs are the sampler's (TRL, on policy with num_iterations 1, takes the detached current
 * ones: neither side runs a separate scoring pass). AdamW (0.9, 0.999, 1e-8, no weight decay),
 * grad norm clipped to 1.
 *
 * SFT step: B rows of T tokens, cross-entropy on every token (token mean), one compiled update.
 */
import { readFileSync } from "node:fs";
import { createRng } from "../src/core/random.ts";
import { np, random } from "../src/engine/jax.ts";
import type { Trainer } from "../src/engine/train.ts";
import { countParams, disposeTree, treeToHost } from "../src/engine/tree.ts";
import { DecodeSession } from "../src/policy/embedded/decode-session.ts";
import { crossEntropy, type PerTokenLoss, type TokenBatch } from "../src/policy/embedded/losses.ts";
import { HfEngineModel } from "../src/policy/hf/engine.ts";
import { initLora, type LoraConfig, type LoraParams, resolveLoraConfig } from "../src/policy/hf/lora.ts";
import { createLoraTrainer } from "../src/policy/hf/lora-trainer.ts";
import { type HfCheckpoint, loadHfCheckpoint } from "../src/policy/hf/weights.ts";
import { ppoLoss } from "../src/rl/loss.ts";
import { createLoraMerger } from "./lora-merger.ts";

/** What both sides are given (bench/trl.ts writes it as JSON for the Python side too). */
export interface TrlBenchSettings {
  group: number;
  completion: number;
  rank: number;
  alpha: number;
  targets: string[];
  lr: number;
  steps: number;
  warmup: number;
  /** GRPO prompts, token ids. */
  prompts: number[][];
  /** SFT rows, token ids (all the same length). */
  sftRows: number[][];
  /**
   * Sample from the base with the adapter merged in (W + s·B·A each step, lora-merger.ts) rather than
   * unmerged (the adapter's two small products per projection as extra nodes of every decode step).
   */
  merge: boolean;
}

/** The bench's reward: the fraction of even ids in a completion (deterministic, same on both sides). */
export function evenFraction(ids: readonly number[]): number {
  return ids.length === 0 ? 0 : ids.filter((id) => id % 2 === 0).length / ids.length;
}

/**
 * GRPO's group-normalised advantages as TRL computes them: rewards in consecutive groups of `group`,
 * each (r − group mean) / (group std + 1e-4), std unbiased (torch.std's default).
 * [1, 0, 1, 0] in groups of 2: mean ½, std √½ → ±0.7070.
 */
export function groupAdvantages(rewards: readonly number[], group: number): number[] {
  if (group < 2 || rewards.length % group !== 0)
    throw new Error(`groupAdvantages: ${rewards.length} rewards in groups of ${group}`);
  const out: number[] = [];
  for (let i = 0; i < rewards.length; i += group) {
    const g = rewards.slice(i, i + group);
    const mean = g.reduce((a, b) => a + b, 0) / group;
    const std = Math.sqrt(g.reduce((a, b) => a + (b - mean) ** 2, 0) / (group - 1));
    for (const r of g) out.push((r - mean) / (std + 1e-4));
  }
  return out;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function peakRssMb(): number {
  return process.resourceUsage().maxRSS / 1024;
}

interface Setup {
  checkpoint: HfCheckpoint;
  lora: LoraConfig;
  trainer: Trainer<LoraParams, TokenBatch>;
}

function setup(folder: string, settings: TrlBenchSettings, perToken: PerTokenLoss, entropy: boolean): Setup {
  const checkpoint = loadHfCheckpoint(folder);
  const lora = resolveLoraConfig(
    { rank: settings.rank, alpha: settings.alpha, targets: settings.targets },
    checkpoint.config,
  );
  // The trainer `train rl` / `train sft --policy hf:` use (its memory settings included).
  const trainer = createLoraTrainer(checkpoint, lora, {
    loss: perToken,
    lossOptions: { entropy },
    optimizer: { b1: 0.9, b2: 0.999, eps: 1e-8, weightDecay: 0 },
    maxGradNorm: 1,
  });
  return { checkpoint, lora, trainer };
}

const f32 = (data: ArrayLike<number>, shape: number[]) => np.array(Float32Array.from(data), { shape });

export interface GrpoFigures {
  step_s: number;
  /** Median seconds of each phase of a step. */
  profile: { adapter_s: number; sample_s: number; reward_s: number; update_s: number; forward_s: number };
  generated_tokens_per_step: number;
  trainable_params: number;
  peak_rss_mb: number;
}

export async function grpoFigures(folder: string, settings: TrlBenchSettings): Promise<GrpoFigures> {
  const { checkpoint, lora, trainer } = setup(
    folder,
    settings,
    ppoLoss({ clipLow: 0.2, clipHigh: 0.2 }),
    true,
  );
  const { group: G, completion: C } = settings;
  const prompts = settings.prompts.flatMap((p) => Array.from({ length: G }, () => p));
  const B = prompts.length;
  const P = prompts[0].length;
  const T = P + C;
  let state = trainer.init(initLora(lora, checkpoint.config, random.key(0)));
  const trainable = countParams(state.params);
  const merger = settings.merge ? createLoraMerger(lora, checkpoint.config, checkpoint.tensors) : null;
  const phases: Record<keyof GrpoFigures["profile"], number[]> = {
    adapter_s: [],
    sample_s: [],
    reward_s: [],
    update_s: [],
    forward_s: [],
  };
  const steps: number[] = [];
  let generated = 0;
  let lastIds: Int32Array | null = null;
  try {
    for (let step = 0; step < settings.warmup + settings.steps; step++) {
      const t0 = performance.now();
      const adapter = await treeToHost(state.params);
      const engine = merger
        ? new HfEngineModel(
            { ...checkpoint, tensors: merger.merge(checkpoint.tensors, adapter) },
            { maxLen: T },
          )
        : new HfEngineModel(checkpoint, { maxLen: T, lora: { config: lora, tensors: adapter } });
      const session = new DecodeSession(engine.kvModel, null, { rows: B });
      const t1 = performance.now();
      let results: Awaited<ReturnType<DecodeSession["generate"]>>;
      try {
        prompts.forEach((prompt, row) => {
          session.reset(row);
          session.feed(row, prompt);
        });
        results = await session.generate(
          prompts.map((_, slot) => ({
            slot,
            maxNew: C,
            stop: [],
            rng: createRng(1000 * step + slot),
            sampling: { temperature: 1, topP: 1 },
          })),
        );
      } finally {
        session.dispose();
      }
      const t2 = performance.now();
      generated = results.reduce((n, r) => n + r.ids.length, 0);
      if (generated !== B * C) throw new Error(`grpo: ${generated} tokens generated, expected ${B * C}`);
      const advantages = groupAdvantages(
        results.map((r) => evenFraction(r.ids)),
        G,
      );
      const ids = new Int32Array(B * T);
      const mask = new Float32Array(B * T);
      const old = new Float32Array(B * T);
      const adv = new Float32Array(B * T);
      prompts.forEach((prompt, row) => {
        ids.set(prompt, row * T);
        ids.set(results[row].ids, row * T + P);
        for (let c = 0; c < C; c++) {
          const at = row * T + P + c;
          mask[at] = 1;
          old[at] = results[row].logprobs[c];
          adv[at] = advantages[row];
        }
      });
      const scale = Float32Array.from(mask, (m) => m / (B * C));
      const batch: TokenBatch = {
        ids: np.array(ids, { shape: [B, T], dtype: np.int32 }),
        weights: f32(mask, [B, T]),
        extra: {
          oldLogprobs: f32(old, [B, T]),
          advantages: f32(adv, [B, T]),
          lossScale: f32(scale, [B, T]),
          metricScale: f32(scale, [B, T]),
        },
      };
      const t3 = performance.now();
      const [next] = await trainer.step(state, [batch], settings.lr);
      state = next;
      const t4 = performance.now();
      lastIds = ids;
      if (step >= settings.warmup) {
        steps.push((t4 - t0) / 1000);
        phases.adapter_s.push((t1 - t0) / 1000);
        phases.sample_s.push((t2 - t1) / 1000);
        phases.reward_s.push((t3 - t2) / 1000);
        phases.update_s.push((t4 - t3) / 1000);
      }
      // The forward alone (log-probs of the step's sequences, no gradient) on the engine: what
      // the update's forward half costs, to split the update into forward and backward + AdamW.
      if (step >= settings.warmup - 1) {
        const f0 = performance.now();
        engine.tokenLogprobs(lastIds, B);
        if (step >= settings.warmup) phases.forward_s.push((performance.now() - f0) / 1000);
      }
      engine.dispose();
    }
  } finally {
    merger?.dispose();
    trainer.dispose();
    disposeTree(state.params as never);
  }
  if (process.env.AGENTRL_TRL_BENCH_DEBUG) process.stderr.write(`${JSON.stringify({ steps, ...phases })}\n`);
  return {
    step_s: median(steps),
    profile: Object.fromEntries(
      Object.entries(phases).map(([k, v]) => [k, median(v)]),
    ) as GrpoFigures["profile"],
    generated_tokens_per_step: generated,
    trainable_params: trainable,
    peak_rss_mb: peakRssMb(),
  };
}

export interface SftFigures {
  step_s: number;
  tokens_per_s: number;
  trainable_params: number;
  peak_rss_mb: number;
}

export async function sftFigures(folder: string, settings: TrlBenchSettings): Promise<SftFigures> {
  const { checkpoint, lora, trainer } = setup(folder, settings, crossEntropy, false);
  const rows = settings.sftRows;
  const [B, T] = [rows.length, rows[0].length];
  // Every token but the first (it has no prediction), token mean: TRL's loss over the same rows.
  const weights = Float32Array.from({ length: B * T }, (_, i) => (i % T === 0 ? 0 : 1 / (B * (T - 1))));
  let state = trainer.init(initLora(lora, checkpoint.config, random.key(0)));
  const trainable = countParams(state.params);
  const steps: number[] = [];
  try {
    for (let step = 0; step < settings.warmup + settings.steps; step++) {
      const start = performance.now();
      const batch: TokenBatch = {
        ids: np.array(Int32Array.from(rows.flat()), { shape: [B, T], dtype: np.int32 }),
        weights: f32(weights, [B, T]),
        extra: {},
      };
      const [next] = await trainer.step(state, [batch], settings.lr);
      state = next;
      if (step >= settings.warmup) steps.push((performance.now() - start) / 1000);
    }
  } finally {
    trainer.dispose();
    disposeTree(state.params as never);
  }
  const step = median(steps);
  return {
    step_s: step,
    tokens_per_s: (B * T) / step,
    trainable_params: trainable,
    peak_rss_mb: peakRssMb(),
  };
}

// `node bench/trl-step.ts grpo|sft <checkpoint folder> <settings.json>`: one JSON line.
if (process.argv[1] === new URL(import.meta.url).pathname) {
  const [kind, folder, settingsPath] = process.argv.slice(2);
  const settings = JSON.parse(readFileSync(settingsPath, "utf8")) as TrlBenchSettings;
  const figures = kind === "grpo" ? await grpoFigures(folder, settings) : await sftFigures(folder, settings);
  console.log(JSON.stringify(figures));
}
