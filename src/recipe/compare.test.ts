import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { Verdict } from "./analysis.ts";
import {
  acrossRuns,
  compareRecipeRuns,
  comparisonMarkdown,
  flippedClaims,
  loadRecipeReport,
  poolCounts,
} from "./compare.ts";
import { parseRecipeConfig } from "./config.ts";
import type { RecipeReport } from "./report.ts";

const difference = (mean: number, lower: number, upper: number) => ({
  mean,
  interval: { lower, upper },
  tasks: 24,
});

function report(seed: number, verdicts: Verdict[], overrides: Record<string, unknown> = {}): RecipeReport {
  return {
    version: 1,
    preset: "default",
    config: parseRecipeConfig({ seed, ...overrides }, "default"),
    machine: { cpus: 2, cpuModel: "test", memoryGiB: 1, node: "v24", platform: "linux-x64" },
    seconds: 60,
    createdAt: "2026-11-30T00:00:00.000Z",
    stages: [{ name: "a", key: "k", cached: false, seconds: 120 }],
    verdicts,
    experiments: {},
  } as RecipeReport;
}

function writeRun(root: string, name: string, value: RecipeReport): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "report.json"), JSON.stringify(value));
  return dir;
}

const gain = (
  mean: number,
  lower: number,
  upper: number,
  status: Verdict["status"],
  claim = "RL raises pass@1 over its base",
): Verdict => ({
  id: "rl-raises-pass1",
  experiment: "boundary",
  claim,
  status,
  evidence: `pass@1 RL − base ${mean}`,
  difference: difference(mean, lower, upper),
  seeds: [mean],
});
const bound: Verdict = {
  id: "start-passk-bounds-rl",
  experiment: "base",
  claim: "bound",
  status: "reproduced",
  evidence: "…",
  seeds: [0],
};

test("compare: claims aligned by id (whatever their wording), counted per status, estimates averaged", (t) => {
  const root = mkdtempSync(join(tmpdir(), "recipe-compare-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const dirs = [
    writeRun(root, "s1", report(1, [gain(0.04, 0.01, 0.07, "reproduced"), bound])),
    writeRun(root, "s2", report(2, [gain(0.0, -0.06, 0.06, "inconclusive"), bound])),
    // seed 3 lacks the bound claim and lists its claims in another order
    // … and words the gain claim differently (a claim's text names k or a template; its id stays)
    writeRun(root, "s3", report(3, [gain(0.02, -0.01, 0.05, "inconclusive", "RL raises pass@1 (reworded)")])),
  ];
  const comparison = compareRecipeRuns(dirs.map((dir) => ({ dir, report: loadRecipeReport(dir) })));
  assert.deepEqual(
    comparison.runs.map((run) => [run.seed, run.minutes]),
    [
      [1, 2],
      [2, 2],
      [3, 2],
    ],
  );
  assert.deepEqual(comparison.configDifferences, []);
  assert.equal(comparison.claims.length, 2, "the reworded claim is the same claim");
  const [rl, base] = comparison.claims;
  assert.deepEqual([rl.id, base.id], ["rl-raises-pass1", "start-passk-bounds-rl"]);
  assert.deepEqual(rl.counts, { reproduced: 1, "not reproduced": 0, inconclusive: 2, "not measured": 0 });
  assert.ok(rl.estimates && Math.abs(rl.estimates.mean - 0.02) < 1e-12);
  assert.deepEqual([rl.estimates?.min, rl.estimates?.max, rl.estimates?.runs], [0, 0.04, 3]);
  assert.equal(base.verdicts[2], null, "a claim a run lacks is null there, not a status");
  assert.equal(base.counts.reproduced, 2);
  assert.equal(base.estimates, null);
  const markdown = comparisonMarkdown(comparison);
  assert.match(
    markdown,
    /\| rl-raises-pass1 \| boundary \| RL raises pass@1 over its base \| reproduced \+0\.040 \[\+0\.010, \+0\.070\] \|/,
  );
  assert.match(markdown, /\| 1 \/ 0 \/ 2 \| \+0\.020 \[\+0\.000, \+0\.040\] \|/);
  assert.match(
    markdown,
    /\| start-passk-bounds-rl \| base \| bound \| reproduced \| reproduced \| — \| 2 \/ 0 \/ 0 \| — \|/,
  );
  assert.match(markdown, /Flips between reproduced and not reproduced: 0\./);
  assert.doesNotMatch(markdown, /differ in more than the seed/);
  // across runs: the bound is called at every run that has it; the gain is not decided, and the table says why
  assert.deepEqual(acrossRuns(base), { decided: true, text: "reproduced at every run" });
  assert.equal(acrossRuns(rl).decided, false);
  assert.match(acrossRuns(rl).text, /runs disagree \(1 reproduced, 2 inconclusive\)/);
  assert.match(
    markdown,
    /cannot decide 1 of 2 claims at this size: RL raises pass@1 over its base \(the runs disagree/,
  );
});

test("compare: a claim reproduced in one run and not in another is a flip; reports before ids align by wording", (t) => {
  const root = mkdtempSync(join(tmpdir(), "recipe-compare-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const old = { ...gain(0.04, 0.01, 0.07, "reproduced") } as Partial<Verdict>;
  delete old.id;
  const dirs = [
    writeRun(root, "s1", report(1, [gain(0.04, 0.01, 0.07, "reproduced")])),
    writeRun(root, "s4", report(4, [gain(-0.02, -0.04, 0.01, "not reproduced")])),
    writeRun(root, "old", report(5, [old as Verdict])),
  ];
  const comparison = compareRecipeRuns(dirs.map((dir) => ({ dir, report: loadRecipeReport(dir) })));
  assert.deepEqual(
    flippedClaims(comparison).map((claim) => claim.id),
    ["rl-raises-pass1"],
  );
  assert.match(
    comparisonMarkdown(comparison),
    /Flips between reproduced and not reproduced: 1 \(rl-raises-pass1\)/,
  );
  assert.equal(comparison.claims[1].id, "boundary: RL raises pass@1 over its base");
});

test("compare: runs whose configs differ beyond the seed are flagged; a folder without a report fails clearly", (t) => {
  const root = mkdtempSync(join(tmpdir(), "recipe-compare-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const a = writeRun(root, "a", report(1, [bound]));
  const b = writeRun(root, "b", report(2, [bound], { rl: { learningRate: 2e-4 } }));
  const comparison = compareRecipeRuns([a, b].map((dir) => ({ dir, report: loadRecipeReport(dir) })));
  assert.deepEqual(comparison.configDifferences, ["rl"]);
  assert.match(comparisonMarkdown(comparison), /differ in more than the seed: rl/);
  assert.throws(
    () => loadRecipeReport(join(root, "missing")),
    /no report\.json .*finished agentrl recipe run/,
  );
  writeFileSync(join(root, "a", "report.json"), JSON.stringify({ version: 2 }));
  assert.throws(() => loadRecipeReport(a), /not a recipe report/);
});

function writeEval(dir: string, stage: string, counts: [string, number, number][]): void {
  mkdirSync(join(dir, "stages", stage), { recursive: true });
  const result = {
    counts: counts.map(([taskId, n, c]) => ({
      taskId,
      family: "lookup",
      template: taskId === "w" ? "sum3" : "t",
      n,
      c,
      policyErrors: 0,
    })),
  };
  writeFileSync(
    join(dir, "stages", stage, "stage.json"),
    JSON.stringify({ name: stage, key: "k", status: "completed", startedAt: "", result }),
  );
}

test("pooled over runs: each task's samples summed across runs, one paired difference, withheld left out of RL − base", (t) => {
  const pooled = poolCounts([
    [{ taskId: "t1", family: "lookup", n: 4, c: 1, policyErrors: 1 }],
    [
      { taskId: "t1", family: "lookup", n: 4, c: 3, policyErrors: 0 },
      { taskId: "t2", family: "lookup", n: 2, c: 2, policyErrors: 0 },
    ],
  ]);
  assert.deepEqual(
    pooled.map((count) => [count.taskId, count.n, count.c, count.policyErrors]),
    [
      ["t1", 8, 4, 1],
      ["t2", 2, 2, 0],
    ],
  );

  const root = mkdtempSync(join(tmpdir(), "recipe-compare-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const one = writeRun(root, "s1", report(1, [bound]));
  const two = writeRun(root, "s2", report(2, [bound]));
  // base: t1 2/8 then 0/8; RL: t1 8/8 then 6/8 → pooled t1 2/16 vs 14/16: +0.75; t2 equal (0);
  // the withheld task w (RL 8/8, base 0/8) must not count in RL − base
  writeEval(one, "eval-base-strong", [
    ["t1", 8, 2],
    ["t2", 8, 4],
    ["w", 8, 0],
  ]);
  writeEval(one, "eval-rl-base", [
    ["t1", 8, 8],
    ["t2", 8, 4],
    ["w", 8, 8],
  ]);
  writeEval(two, "eval-base-strong", [
    ["t1", 8, 0],
    ["t2", 8, 4],
    ["w", 8, 0],
  ]);
  writeEval(two, "eval-rl-base", [
    ["t1", 8, 6],
    ["t2", 8, 4],
    ["w", 8, 8],
  ]);
  const comparison = compareRecipeRuns([one, two].map((dir) => ({ dir, report: loadRecipeReport(dir) })));
  const gain = comparison.pooled.find((row) => row.label.startsWith("pass@1 RL − base"))!;
  assert.equal(gain.runs, 2);
  assert.equal(gain.difference?.tasks, 2);
  assert.ok(Math.abs((gain.difference?.mean ?? 0) - 0.375) < 1e-12, "(+0.75 + 0) / 2 tasks");
  const missing = comparison.pooled.find((row) => row.label.includes("RL(weak)"))!;
  assert.deepEqual([missing.runs, missing.difference, missing.status], [0, null, "not measured"]);
  const markdown = comparisonMarkdown(comparison);
  assert.match(markdown, /\| pass@1 RL − base \(strong base, test tasks\) \| 2 \| \+0\.375 \[/);
  assert.doesNotMatch(markdown, /RL\(weak\)/, "comparisons no run measured are left out of the table");
});
