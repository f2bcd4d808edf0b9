import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { decodeLimit, TRL_INSTALL_HINT, trlKeys, trlSettings } from "./trl.ts";
import { evenFraction, groupAdvantages } from "./trl-step.ts";

const MAIN = new URL("./main.ts", import.meta.url).pathname;

test("without a Python that has TRL, --only trl reports every key as null and says how to install it", () => {
  const result = spawnSync(process.execPath, [MAIN, "--only", "trl", "--json"], {
    encoding: "utf8",
    timeout: 30_000,
    env: { ...process.env, AGENTRL_BENCH_PYTHON: "/nonexistent/python3" },
  });
  assert.equal(result.status, 0, result.stderr);
  const figures = JSON.parse(result.stdout.trim().split("\n").pop()!) as Record<string, unknown>;
  assert.deepEqual(Object.keys(figures).sort(), [...trlKeys()].sort());
  for (const key of [
    "grpo_step_vs_trl",
    "sft_tokens_vs_trl",
    "trl_grpo_peak_rss_mb_135m",
    "grpo_peak_rss_mb_30m",
  ])
    assert.equal(figures[key], null, key);
  assert.ok(result.stderr.includes(TRL_INSTALL_HINT), result.stderr);
  assert.match(TRL_INSTALL_HINT, /pip install torch transformers peft trl/);
});

test("trl is opt-in: --help names it, and the default set leaves it out", () => {
  const result = spawnSync(process.execPath, [MAIN, "--help"], { encoding: "utf8", timeout: 30_000 });
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /trl/);
  assert.match(result.stdout, /all but\s+trl/);
});

test("both sides get the same fixed prompts and rows: token ids above the special ids, within both vocabularies", () => {
  const a = trlSettings();
  assert.deepEqual(a, trlSettings());
  const ids = [...a.prompts.flat(), ...a.sftRows.flat()];
  assert.ok(ids.every((id) => Number.isInteger(id) && id >= 3 && id < 32_000));
  assert.equal(new Set(a.sftRows.map((row) => row.length)).size, 1, "SFT rows all one length (no padding)");
});

test("the reward and GRPO's group-normalised advantages, worked examples", () => {
  assert.equal(evenFraction([2, 3, 4, 5]), 0.5);
  assert.equal(evenFraction([]), 0);
  // Groups of 2: [1, 0] has mean ½ and unbiased std √½; [3, 3] has std 0, so both advantages are 0.
  const adv = groupAdvantages([1, 0, 3, 3], 2);
  const expected = 0.5 / (Math.SQRT1_2 + 1e-4);
  assert.ok(Math.abs(adv[0] - expected) < 1e-12 && Math.abs(adv[1] + expected) < 1e-12, `${adv}`);
  assert.deepEqual(adv.slice(2), [0, 0]);
  assert.throws(() => groupAdvantages([1, 2, 3], 2), /3 rewards in groups of 2/);
});

test("the decode limit is the slower of reading the weights and doing the FLOPs", () => {
  // 28M params, 8 rows: reading 112 MB at 10 GB/s takes 11.2 ms; 448 MFLOP at 50 GFLOP/s 9 ms.
  assert.ok(Math.abs(decodeLimit(28e6, 8, 50, 10) - 8 / 0.0112) < 1e-6);
  // With 100 rows the FLOPs dominate: 5.6 GFLOP at 50 GFLOP/s is 112 ms.
  assert.ok(Math.abs(decodeLimit(28e6, 100, 50, 10) - 100 / 0.112) < 1e-6);
});
