import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import type { RecipeReport } from "../recipe/report.ts";
import { type BenchRecord, benchTable } from "./bench-table.ts";
import { readBlock, writeBlock } from "./generated-block.ts";
import { expectedPage, generatedTexts } from "./pages.ts";
import { armsTable, formatEffect, resultsTable } from "./results-table.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

test("every generated page and block matches its source (run `npm run docs` after a change)", () => {
  for (const generated of generatedTexts(ROOT, ["cli", "results", "bench"])) {
    const text = readFileSync(`${ROOT}${generated.page}`, "utf8");
    assert.equal(text, expectedPage(ROOT, generated), `${generated.page} is stale: npm run docs`);
  }
});

test("generated blocks: replaced between their markers, the rest of the page kept", () => {
  const page = "intro\n<!-- generated:t -->\nold\n<!-- /generated:t -->\nend\n";
  const next = writeBlock(page, "t", "new | row", "page.md");
  assert.equal(next, "intro\n<!-- generated:t -->\nnew | row\n<!-- /generated:t -->\nend\n");
  assert.equal(readBlock(next, "t", "page.md"), "new | row");
  assert.throws(() => readBlock("no markers", "t", "page.md"), /page\.md: no <!-- generated:t -->/);
});

test("the results table shows each verdict's difference, else its evidence's first clause, the per-seed estimates, and names the run", () => {
  const report = {
    preset: "default",
    config: { seed: 1, seeds: 3 },
    machine: { cpus: 2, cpuModel: "AMD EPYC", memoryGiB: 8, node: "24.21.0", platform: "linux" },
    seconds: 385,
    createdAt: "2026-12-02T07:00:00.000Z",
    verdicts: [
      {
        id: "rl-raises-pass1",
        experiment: "boundary",
        claim: "RL raises pass@1",
        status: "reproduced",
        evidence: "ignored when a difference exists",
        difference: { mean: 0.048, interval: { lower: 0.013, upper: 0.083 }, tasks: 24 },
        seeds: [0.034, null, 0.065],
      },
      {
        experiment: "boundary",
        claim: "sum3 | stays 0",
        status: "reproduced",
        evidence: "pass@32 0 (base and RL)",
      },
      {
        id: "long-evidence",
        experiment: "base",
        claim: "a claim with long evidence",
        status: "not reproduced",
        evidence: "the first clause only; the rest is on docs/results.md",
        seeds: [],
      },
    ],
  } as unknown as RecipeReport;
  const table = resultsTable(report).split("\n");
  assert.equal(
    table[2],
    "| rl-raises-pass1 | reproduced | +0.048 [+0.013, +0.083], 24 tasks | +0.034, –, +0.065 |",
  );
  assert.equal(table[3], "| boundary | reproduced | pass@32 0 (base and RL) | – |");
  assert.equal(table[4], "| long-evidence | not reproduced | the first clause only | – |");
  assert.match(
    table[6],
    /^Preset `default`, training seeds 1–3, 6\.4 min on 2 × AMD EPYC \(Node 24\.21\.0, linux\), 2026-12-02;/,
  );
  assert.equal(
    formatEffect({ mean: -0.004, interval: { lower: -0.026, upper: 0.017 }, tasks: 120 }),
    "−0.004 [−0.026, +0.017], 120 tasks",
  );
});

test("the arms table: one row per arm and seed, learned or not, and how many learned", () => {
  const arm = (seed: number, end: number, lower: number) => ({
    run: "credit-grpo",
    stage: seed === 1 ? "credit-grpo" : `credit-grpo@s${seed}`,
    seed,
    family: "chain",
    estimator: "grpo",
    startStage: "credit-eval-base",
    endStage: "credit-eval-grpo",
    start: 0.156,
    end,
    difference: { mean: end - 0.156, interval: { lower, upper: lower + 0.05 }, tasks: 96 },
    learned: lower > 0,
  });
  const report = { arms: [arm(1, 0.109, -0.08), arm(2, 0.25, 0.06)] } as unknown as RecipeReport;
  const table = armsTable(report).split("\n");
  assert.equal(
    table[2],
    "| credit-grpo | 1 | chain | grpo | 0.156 | 0.109 | −0.047 [−0.080, −0.030], 96 tasks | **no** |",
  );
  assert.equal(
    table[3],
    "| credit-grpo | 2 | chain | grpo | 0.156 | 0.250 | +0.094 [+0.060, +0.110], 96 tasks | yes |",
  );
  assert.match(table[5], /^1 of 2 arm-seeds learned/);
  // an arm whose start solved none of its tasks is set apart in the row and the count
  const weak = { ...arm(1, 0, 0), run: "rl-weak", start: 0, startSolvedNone: true };
  const withWeak = armsTable({ arms: [arm(2, 0.25, 0.06), weak] } as unknown as RecipeReport).split("\n");
  assert.match(withWeak[3], /^\| rl-weak \| .* \| no \(start solves none\) \|$/);
  assert.match(withWeak[5], /^1 of the 1 arm-seeds that could learn did; 1 more \(rl-weak\)/);
  assert.match(armsTable({} as RecipeReport), /predates the arms table/);
});

test("the bench table reads the record's keys; a figure not measured shows as –", () => {
  const record: BenchRecord = {
    measured: "2026-12-02",
    commit: "0123456789abcdef",
    machine: "2 × AMD EPYC, Node 24.21.0",
    figures: {
      engine_onnx: 1,
      bench_rounds: 3,
      train_tokens_per_s: 12502,
      train_vs_torch: 1.47,
      train_vs_torch_min: 1.21,
      train_vs_torch_max: 1.71,
      jax_train_tokens_per_s: 1971,
      torch_train_tokens_per_s: 8497,
      score_tokens_per_s: 45813,
      score_vs_torch: null,
      eval_episodes_per_s: 89.5,
      eval_vs_agent_loop: 1.51,
      agent_loop_eval_episodes_per_s: 59.4,
    },
  };
  const lines = benchTable(record).split("\n");
  assert.equal(
    lines[0],
    "| figure | ONNX Runtime | vs PyTorch: median [min, max] of rounds | jax-js | PyTorch CPU |",
  );
  assert.equal(
    lines[2],
    "| train step, B=32 T=64, tokens/s | 12,502 | 1.47x [1.21x, 1.71x] | 1,971 | 8,497 |",
  );
  assert.equal(lines[3], "| scoring, B=64 T=64, tokens/s | 45,813 | – | – | – |");
  assert.equal(
    lines[5],
    "| eval, `models/base-strong`, episodes/s | 89.5 | 1.51x the agent-loop reference | | 59.4 (agent loop) |",
  );
  assert.match(
    lines.at(-1) ?? "",
    /^Measured 2026-12-02 on commit 0123456, 2 × AMD EPYC, Node 24\.21\.0, 3 PyTorch rounds;/,
  );
});

test("no tracked file points at the shared folder beside the repository (a clone has none)", () => {
  const outside = ["..", "shared"].join("/");
  const files = execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" })
    .split("\0")
    .filter(Boolean);
  const offenders = files.filter((file) => {
    try {
      return readFileSync(`${ROOT}${file}`, "utf8").includes(outside);
    } catch {
      return false; // deleted in the work tree but not yet in the index
    }
  });
  assert.deepEqual(offenders, []);
});
