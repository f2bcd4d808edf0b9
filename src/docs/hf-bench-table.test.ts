import assert from "node:assert/strict";
import { test } from "node:test";
import { hfBenchTable } from "./hf-bench-table.ts";

test("the hf bench table reads the record's keys; a figure not measured shows as –", () => {
  const table = hfBenchTable({
    measured: "2026-12-02",
    commit: "0123456789abcdef",
    machine: "2 × CPU, Node 24",
    figures: {
      hf_sample_tokens_per_s_30m: 662.9,
      hf_sample_threads_30m: 2,
      transformers_sample_tokens_per_s_30m: 365.7,
      transformers_sample_threads_30m: 1,
      hf_sample_vs_transformers_30m: 1.8129,
      hf_score_vs_transformers_30m: null,
      hf_sample_vs_transformers: 1.8129,
      hf_score_vs_transformers: null,
    },
  }).split("\n");
  assert.equal(
    table[2],
    "| Qwen3, 28M parameters | 663 (2 thr.) | 366 (1 thr.) | 1.81x | – (– thr.) | – (– thr.) | – |",
  );
  assert.match(
    table.at(-1)!,
    /^`hf_sample_vs_transformers` 1\.81x, `hf_score_vs_transformers` –\. Measured 2026-12-02 on commit 0123456/,
  );
});
