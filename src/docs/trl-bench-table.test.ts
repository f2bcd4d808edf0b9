import assert from "node:assert/strict";
import { test } from "node:test";
import { trlBenchTable } from "./trl-bench-table.ts";

test("the trl bench table reads the record's keys; a figure not measured shows as –", () => {
  const table = trlBenchTable({
    measured: "2026-12-03",
    commit: "0123456789abcdef",
    machine: "2 × CPU, Node 24",
    figures: {
      grpo_step_s_30m: 1.234,
      grpo_threads_30m: 1,
      trl_grpo_step_s_30m: 2.5,
      trl_grpo_threads_30m: 2,
      grpo_step_vs_trl_30m: 2.5 / 1.234,
      sft_tokens_per_s_30m: 436.6,
      sft_threads_30m: 2,
      trl_sft_tokens_per_s_30m: null,
      grpo_peak_rss_mb_30m: 1578.9,
      trl_grpo_peak_rss_mb_30m: 876.9,
      grpo_profile_sample_s_30m: 0.5,
      grpo_generated_tokens_30m: 256,
      trl_grpo_generated_tokens_30m: 256,
      grpo_step_vs_trl: 2.5 / 1.234,
      sft_tokens_vs_trl: null,
      trl_load_1m_start: 4.56,
    },
  }).split("\n");
  assert.equal(
    table[2],
    "| Qwen3, 28M parameters | 1.23 s (1 thr.) | 2.50 s (2 thr.) | 2.03x | 437 (2 thr.) | – (– thr.) | – | 1,579 / 877 MB | – / – MB |",
  );
  // The sampling rate is the tokens generated over the sampling phase: 256 / 0.5 s.
  assert.match(
    table[7],
    /^\| Qwen3, 28M parameters \| – \| 0\.500 s \| – \| – \| – \| 512 \| – \| 256 \/ 256 tokens/,
  );
  assert.match(
    table.at(-1)!,
    /^`grpo_step_vs_trl` 2\.03x, `sft_tokens_vs_trl` –; .*load average 4\.6 at the start, – at the end\. Measured 2026-12-03 on commit 0123456/,
  );
});
