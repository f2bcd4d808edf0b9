import assert from "node:assert/strict";
import { test } from "node:test";
import { checkInlineSvg } from "./html.ts";
import { barChart, binCounts, binEdges, histogram, lineChart } from "./plots.ts";

const series = [
  {
    name: "base <model>",
    points: [
      { x: 1, y: 0.2, lower: 0.1, upper: 0.3 },
      { x: 4, y: 0.5, lower: 0.4, upper: 0.6 },
      { x: 16, y: 0.7, lower: 0.6, upper: 0.8 },
    ],
  },
  {
    name: "rl",
    points: [
      { x: 1, y: 0.5 },
      { x: 4, y: 0.6 },
      { x: 16, y: 0.65 },
    ],
  },
];

test("lineChart: valid inline SVG with the series names (escaped), a band, log-k ticks; deterministic", async () => {
  const options = {
    series,
    xLog: true,
    xLabel: "k",
    yLabel: "pass@k",
    title: "pass@k",
    yDomain: [0, 1] as const,
  };
  const svg = await lineChart(options);
  assert.equal(checkInlineSvg(svg), svg);
  assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  assert.match(svg, /base &lt;model&gt;/);
  assert.doesNotMatch(svg, /<model>/);
  assert.match(svg, />rl</);
  assert.match(svg, />16</, "a tick at every k of the log axis");
  assert.match(svg, /class="mark-area/, "band drawn as an area mark");
  assert.equal(await lineChart(options), svg, "same input, same bytes");
  const withoutBand = await lineChart({ ...options, series: [series[1]] });
  assert.doesNotMatch(withoutBand, /mark-area/);
});

test("lineChart rejects what cannot be drawn", async () => {
  await assert.rejects(
    lineChart({ series: [series[1], series[1]], xLabel: "k", yLabel: "y" }),
    /duplicate series/,
  );
  await assert.rejects(
    lineChart({ series: [{ name: "a", points: [{ x: 0, y: 1 }] }], xLog: true, xLabel: "k", yLabel: "y" }),
    /log-scale x needs x > 0/,
  );
  await assert.rejects(
    lineChart({ series: [{ name: "a", points: [{ x: 1, y: Number.NaN }] }], xLabel: "k", yLabel: "y" }),
    /must be finite/,
  );
});

test("barChart and histogram render their categories and samples", async () => {
  const bars = await barChart({
    bars: [
      { category: "lookup", value: 0.9, group: "base" },
      { category: "lookup", value: 0.95, group: "rl" },
      { category: "bridge", value: 0.4, group: "base" },
    ],
    xLabel: "family",
    yLabel: "pass@1",
  });
  checkInlineSvg(bars);
  for (const label of ["lookup", "bridge", "base", "rl"]) assert.match(bars, new RegExp(`>${label}<`));
  const hist = await histogram({
    samples: [{ name: "ppl", values: [1, 2, 2, 3] }],
    xLabel: "log ppl",
    bins: 2,
  });
  checkInlineSvg(hist);
  assert.match(hist, /mark-rect/);
});

test("histogram bins: equal width over the range, last bin closed", () => {
  // [1, 5] in 4 bins of width 1: 1 | 2 2 | 3 3 3 | 4 5 (5 falls in the last, closed bin).
  const edges = binEdges([1, 2, 2, 3, 3, 3, 4, 5], 4);
  assert.deepEqual(edges, [1, 2, 3, 4, 5]);
  assert.deepEqual(binCounts([1, 2, 2, 3, 3, 3, 4, 5], edges), [1, 2, 3, 2]);
  assert.deepEqual(binEdges([7, 7], 3), [6.5, 7.5]);
  assert.throws(() => binEdges([1], 0), /bins must be a positive integer/);
});
