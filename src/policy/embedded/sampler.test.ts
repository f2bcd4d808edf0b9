import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { createRng } from "../../core/random.ts";
import { logSoftmax, sampleToken } from "./sampler.ts";

const probs = [0.5, 0.3, 0.15, 0.05];
const logits = probs.map(Math.log);
const N = 20000;

function frequencies(temperature: number, topP: number, seed = 1): number[] {
  const rng = createRng(seed);
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < N; i++) counts[sampleToken(logits, { temperature, topP }, rng).id]++;
  return counts.map((c) => c / N);
}

/** |observed − p| within 4 standard errors of a binomial proportion. */
function assertClose(observed: number[], expected: number[]) {
  expected.forEach((p, i) => {
    const tolerance = 4 * Math.sqrt((p * (1 - p)) / N) + 1e-9;
    assert.ok(
      Math.abs(observed[i] - p) <= tolerance,
      `token ${i}: ${observed[i]} vs ${p} (±${tolerance.toFixed(4)})`,
    );
  });
}

test("temperature 1, no top-p: frequencies match the distribution", () => {
  assertClose(frequencies(1, 1), probs);
});

test("temperature 0.5 squares and renormalises: p² / Σp² = [0.685, 0.247, 0.062, 0.007]", () => {
  const squared = probs.map((p) => p * p);
  const z = squared.reduce((a, b) => a + b);
  assertClose(
    frequencies(0.5, 1),
    squared.map((p) => p / z),
  );
});

test("top-p 0.7 keeps {0.5, 0.3} (mass 0.8 reaches 0.7) and renormalises to [0.625, 0.375]", () => {
  assertClose(frequencies(1, 0.7), [0.625, 0.375, 0, 0]);
  // top-p 0.5 keeps only the first token (its mass alone reaches 0.5).
  assertClose(frequencies(1, 0.5), [1, 0, 0, 0]);
});

test("reported log-prob is log softmax(logits / T) before truncation; greedy takes the argmax", () => {
  const rng = createRng(3);
  for (let i = 0; i < 50; i++) {
    const { id, logprob } = sampleToken(logits, { temperature: 0.5, topP: 0.7 }, rng);
    assert.ok(Math.abs(logprob - logSoftmax(logits, 0.5)[id]) < 1e-12);
  }
  const greedy = sampleToken([0.1, 2, 2, -1], { temperature: 0, topP: 1 }, rng);
  assert.equal(greedy.id, 1); // ties → lower id
  assert.ok(Math.abs(greedy.logprob - logSoftmax([0.1, 2, 2, -1])[1]) < 1e-12);
});

test("the same seed draws the same tokens", () => {
  assert.deepEqual(frequencies(1, 0.9, 7), frequencies(1, 0.9, 7));
});

test("top-p draws exactly what sorting the whole vocabulary draws: peaked, flat (past the selection limit) and tied logits", () => {
  // The definition: sort by log-prob (ties: lower id first), keep until the mass reaches topP.
  const reference = (values: number[], temperature: number, topP: number, u: number) => {
    const logp = logSoftmax(values, temperature);
    const order = Array.from(logp.keys()).sort((a, b) => logp[b] - logp[a] || a - b);
    let kept = 0;
    let mass = 0;
    while (kept < order.length && (kept === 0 || mass < topP)) mass += Math.exp(logp[order[kept++]]);
    let cumulative = 0;
    for (let i = 0; i < kept; i++) {
      cumulative += Math.exp(logp[order[i]]);
      if (u * mass < cumulative) return order[i];
    }
    return order[kept - 1];
  };
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: -40, max: 40 }), { minLength: 1, maxLength: 64 }),
      fc.constantFrom(0.3, 1, 5),
      fc.constantFrom(0.5, 0.9, 0.95, 0.999),
      fc.integer({ min: 1, max: 1000 }),
      (ints, temperature, topP, seed) => {
        const values = ints.map((v) => v / 8); // coarse steps: many ties
        const rng = createRng(seed);
        const u = createRng(seed).next();
        assert.equal(
          sampleToken(values, { temperature, topP }, rng).id,
          reference(values, temperature, topP, u),
        );
      },
    ),
    { numRuns: 400 },
  );
});
