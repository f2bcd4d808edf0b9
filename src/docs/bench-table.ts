/**
 * The bench's published figures (docs/performance.md), generated from a committed record of one
 * `npm run bench -- --json` run (`docs/results/bench.json`: the figures with the date, commit and
 * machine they were taken on). `npm run docs:bench -- --record <bench output>` writes the record;
 * `npm run docs:bench` rewrites the table, and bench-table.test.ts fails when they disagree.
 */

export const BENCH_RECORD = "docs/results/bench.json";

export interface BenchRecord {
  /** ISO date of the run. */
  measured: string;
  /** Commit the run measured. */
  commit: string;
  /** CPU model and count, Node version. */
  machine: string;
  /** `npm run bench -- --json` as printed (null: not measured in that run, e.g. no PyTorch). */
  figures: Record<string, number | null>;
}

const ENGINE_ROWS = [
  ["train", "train step, B=32 T=64, tokens/s"],
  ["score", "scoring, B=64 T=64, tokens/s"],
  ["sample", "KV sampling, B=64, 48 new tokens, tokens/s"],
] as const;

const LOOP_ROWS = [
  ["eval", "eval, `models/base-strong`, episodes/s"],
  ["rl", "RL (GRPO steps), episodes/s"],
] as const;

function number(value: number | null | undefined, digits = 0): string {
  if (value === null || value === undefined) return "–";
  return value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function ratio(value: number | null | undefined): string {
  return value === null || value === undefined ? "–" : `${value.toFixed(2)}x`;
}

/** The figures table and the line saying where they come from (Markdown). */
export function benchTable(record: BenchRecord): string {
  const f = record.figures;
  const other = f.engine_onnx === 0 ? "onnx" : "jax";
  const engine = f.engine_onnx === 0 ? "jax-js" : "ONNX Runtime";
  const otherName = other === "jax" ? "jax-js" : "ONNX Runtime";
  const lines = [
    `| figure | ${engine} | vs PyTorch: median [min, max] of rounds | ${otherName} | PyTorch CPU |`,
    "| --- | --- | --- | --- | --- |",
  ];
  for (const [key, label] of ENGINE_ROWS) {
    const spread =
      f[`${key}_vs_torch`] === null || f[`${key}_vs_torch`] === undefined
        ? "–"
        : `${ratio(f[`${key}_vs_torch`])} [${ratio(f[`${key}_vs_torch_min`])}, ${ratio(f[`${key}_vs_torch_max`])}]`;
    lines.push(
      `| ${label} | ${number(f[`${key}_tokens_per_s`])} | ${spread} | ${number(f[`${other}_${key}_tokens_per_s`])} | ${number(f[`torch_${key}_tokens_per_s`])} |`,
    );
  }
  for (const [key, label] of LOOP_ROWS) {
    lines.push(
      `| ${label} | ${number(f[`${key}_episodes_per_s`], 1)} | ${ratio(f[`${key}_vs_agent_loop`])} the agent-loop reference | | ${number(f[`agent_loop_${key}_episodes_per_s`], 1)} (agent loop) |`,
    );
  }
  lines.push(
    "",
    `Measured ${record.measured} on commit ${record.commit.slice(0, 7)}, ${record.machine}, ${f.bench_rounds ?? 0} PyTorch rounds; ` +
      `generated from \`${BENCH_RECORD}\` by \`npm run docs:bench\`.`,
  );
  return lines.join("\n");
}
