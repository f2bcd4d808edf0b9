/**
 * The Hugging Face checkpoints' speed against transformers (docs/real-checkpoints.md), generated
 * from a committed record of one `npm run bench -- --only hf --json` run
 * (`docs/results/bench-hf.json`, written by `npm run docs:bench -- --record-hf <output>`).
 */
import type { BenchRecord } from "./bench-table.ts";

export const HF_BENCH_RECORD = "docs/results/bench-hf.json";

const SIZES = [
  ["30m", "Qwen3, 28M parameters"],
  ["135m", "SmolLM2-135M shape (Llama)"],
] as const;

function number(value: number | null | undefined): string {
  return value === null || value === undefined ? "–" : Math.round(value).toLocaleString("en-US");
}

/** The thread count a figure was taken at. */
function threads(value: number | null | undefined): string {
  return value === null || value === undefined ? "– thr." : `${value} thr.`;
}

function ratio(value: number | null | undefined): string {
  return value === null || value === undefined ? "–" : `${value.toFixed(2)}x`;
}

/** The table of both sizes and the line saying where the figures come from (Markdown). */
export function hfBenchTable(record: BenchRecord): string {
  const f = record.figures;
  const lines = [
    "| checkpoint | sampling, engine tokens/s | transformers | ratio | scoring, engine tokens/s | transformers | ratio |",
    "| --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const [size, label] of SIZES) {
    lines.push(
      `| ${label} | ${number(f[`hf_sample_tokens_per_s_${size}`])} (${threads(f[`hf_sample_threads_${size}`])}) | ${number(f[`transformers_sample_tokens_per_s_${size}`])} (${threads(f[`transformers_sample_threads_${size}`])}) | ${ratio(f[`hf_sample_vs_transformers_${size}`])} | ${number(f[`hf_score_tokens_per_s_${size}`])} (${threads(f[`hf_score_threads_${size}`])}) | ${number(f[`transformers_score_tokens_per_s_${size}`])} (${threads(f[`transformers_score_threads_${size}`])}) | ${ratio(f[`hf_score_vs_transformers_${size}`])} |`,
    );
  }
  lines.push(
    "",
    `\`hf_sample_vs_transformers\` ${ratio(f.hf_sample_vs_transformers)}, \`hf_score_vs_transformers\` ${ratio(f.hf_score_vs_transformers)}. ` +
      `Measured ${record.measured} on commit ${record.commit.slice(0, 7)}, ${record.machine}; generated from \`${HF_BENCH_RECORD}\` by \`npm run docs:bench\`.`,
  );
  return lines.join("\n");
}
