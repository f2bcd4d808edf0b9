/**
 * LoRA training against TRL (docs/real-checkpoints.md), generated from a committed record of one
 * `npm run bench -- --only trl --json` run (`docs/results/bench-trl.json`, written by
 * `npm run docs:bench -- --record-trl <output>`): per checkpoint the GRPO step and SFT throughput of
 * each side with its threads and peak memory, then our GRPO step's profile against the machine's
 * sampling limit, and the load the run was taken under.
 */
import type { BenchRecord } from "./bench-table.ts";

export const TRL_BENCH_RECORD = "docs/results/bench-trl.json";

const SIZES = [
  ["30m", "Qwen3, 28M parameters"],
  ["135m", "SmolLM2-135M shape (Llama)"],
] as const;

type Figures = BenchRecord["figures"];
const missing = (value: number | null | undefined): value is null | undefined =>
  value === null || value === undefined;

function fixed(value: number | null | undefined, digits: number, unit = ""): string {
  return missing(value) ? "–" : `${value.toFixed(digits)}${unit}`;
}

function whole(value: number | null | undefined): string {
  return missing(value) ? "–" : Math.round(value).toLocaleString("en-US");
}

function ratio(value: number | null | undefined): string {
  return fixed(value, 2, "x");
}

/** A figure with the thread count it was taken at: `1.23 s (2 thr.)`. */
function withThreads(value: string, threads: number | null | undefined): string {
  return `${value} (${missing(threads) ? "–" : threads} thr.)`;
}

function speedTable(f: Figures): string[] {
  const lines = [
    "| checkpoint | GRPO step, ours | TRL | ratio | SFT tokens/s, ours | TRL | ratio | peak RSS GRPO, ours / TRL | peak RSS SFT, ours / TRL |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const [size, label] of SIZES) {
    const g = (key: string) => f[`${key}_${size}`];
    lines.push(
      `| ${label} | ${withThreads(fixed(g("grpo_step_s"), 2, " s"), g("grpo_threads"))} | ${withThreads(fixed(g("trl_grpo_step_s"), 2, " s"), g("trl_grpo_threads"))} | ${ratio(g("grpo_step_vs_trl"))} | ${withThreads(whole(g("sft_tokens_per_s")), g("sft_threads"))} | ${withThreads(whole(g("trl_sft_tokens_per_s")), g("trl_sft_threads"))} | ${ratio(g("sft_tokens_vs_trl"))} | ${whole(g("grpo_peak_rss_mb"))} / ${whole(g("trl_grpo_peak_rss_mb"))} MB | ${whole(g("sft_peak_rss_mb"))} / ${whole(g("trl_sft_peak_rss_mb"))} MB |`,
    );
  }
  return lines;
}

function profileTable(f: Figures): string[] {
  const lines = [
    "| checkpoint | adapter to engine | sampling | rewards, batch | update | a forward alone | sampling tokens/s | machine limit | work per step, ours / TRL |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const [size, label] of SIZES) {
    const g = (key: string) => f[`${key}_${size}`];
    const sample = g("grpo_profile_sample_s");
    const tokens = g("grpo_generated_tokens");
    const rate = missing(sample) || missing(tokens) ? null : tokens / sample;
    lines.push(
      `| ${label} | ${fixed(g("grpo_profile_adapter_s"), 3, " s")} | ${fixed(sample, 3, " s")} | ${fixed(g("grpo_profile_reward_s"), 3, " s")} | ${fixed(g("grpo_profile_update_s"), 3, " s")} | ${fixed(g("grpo_profile_forward_s"), 3, " s")} | ${whole(rate)} | ${whole(g("grpo_sample_limit_tokens_per_s"))} | ${whole(tokens)} / ${whole(g("trl_grpo_generated_tokens"))} tokens, ${whole(g("lora_trainable_params"))} / ${whole(g("trl_lora_trainable_params"))} trainable |`,
    );
  }
  return lines;
}

/** Both tables and the line saying where the figures come from and under what load (Markdown). */
export function trlBenchTable(record: BenchRecord): string {
  const f = record.figures;
  return [
    ...speedTable(f),
    "",
    ...profileTable(f),
    "",
    `\`grpo_step_vs_trl\` ${ratio(f.grpo_step_vs_trl)}, \`sft_tokens_vs_trl\` ${ratio(f.sft_tokens_vs_trl)}; ` +
      `the machine: ${whole(f.trl_machine_gflops)} GFLOP/s sgemm, ${fixed(f.trl_machine_read_gbps, 1)} GB/s read; ` +
      `load average ${fixed(f.trl_load_1m_start, 1)} at the start, ${fixed(f.trl_load_1m_end, 1)} at the end. ` +
      `Measured ${record.measured} on commit ${record.commit.slice(0, 7)}, ${record.machine}; generated from \`${TRL_BENCH_RECORD}\` by \`npm run docs:bench\`.`,
  ].join("\n");
}
