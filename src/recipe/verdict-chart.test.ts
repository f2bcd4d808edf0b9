import assert from "node:assert/strict";
import { test } from "node:test";
import type { Verdict } from "./analysis.ts";
import { verdictChartData, verdictIntervalChart } from "./verdict-chart.ts";

const verdict = (id: string, seeds: (number | null)[], withDifference = true): Verdict => ({
  id,
  experiment: "e",
  claim: id,
  status: "inconclusive",
  evidence: "",
  seeds,
  ...(withDifference
    ? { difference: { mean: 0.02, interval: { lower: -0.03, upper: 0.07 }, tasks: 24 } }
    : {}),
});

test("the verdict chart: one interval per claim with an estimate, one dot per measured seed", async () => {
  const data = verdictChartData([
    verdict("rl-raises-pass1", [0.081, 0.053, 0.008]),
    verdict("no-estimate", [0], false),
    verdict("one-missing", [0.1, null]),
  ]);
  assert.deepEqual(
    data.intervals.map((row) => row.id),
    ["rl-raises-pass1", "one-missing"],
  );
  assert.deepEqual(
    data.dots.map((dot) => [dot.id, dot.seed, dot.value]),
    [
      ["rl-raises-pass1", 1, 0.081],
      ["rl-raises-pass1", 2, 0.053],
      ["rl-raises-pass1", 3, 0.008],
      ["one-missing", 1, 0.1],
    ],
  );
  const svg = await verdictIntervalChart([verdict("rl-raises-pass1", [0.081, 0.053, 0.008])], 0.05);
  assert.match(svg, /^<svg/);
  assert.match(svg, /rl-raises-pass1/);
  assert.equal(await verdictIntervalChart([verdict("x", [0], false)], 0.05), "", "nothing to draw: no chart");
});
