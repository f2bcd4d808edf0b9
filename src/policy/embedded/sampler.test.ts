import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { createRng } from "../../core/random.ts";
import { logPartition, logSoftmax, sampleNormalised, sampleToken } from "./sampler.ts";

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

test("greedy and full-mass draws read the logits in place and give the same doubles as drawing from logSoftmax", () => {
  // The draw from the materialised log-probs, as the sampler did before reading logits in place:
  // the lab's committed results depend on these ids and log-probs to the last bit.
  const fromLogSoftmax = (row: Float32Array, temperature: number, u: number) => {
    const logp = logSoftmax(row, temperature === 0 ? 1 : temperature);
    if (temperature === 0) {
      let best = 0;
      for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
      return { id: best, logprob: logp[best] };
    }
    let cumulative = 0;
    for (let i = 0; i < logp.length; i++) {
      cumulative += Math.exp(logp[i]);
      if (u < cumulative) return { id: i, logprob: logp[i] };
    }
    let last = logp.length - 1;
    while (last > 0 && logp[last] === -Infinity) last--;
    return { id: last, logprob: logp[last] };
  };
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.float({ min: -30, max: 30, noNaN: true }), fc.constant(-Infinity)), {
        minLength: 1,
        maxLength: 300,
      }),
      fc.constantFrom(0, 0.3, 0.7, 1, 1.3),
      fc.integer({ min: 0, max: 1000 }),
      (values, temperature, seed) => {
        const row = Float32Array.from(values);
        const u = createRng(seed).next();
        const drawn = sampleToken(row, { temperature, topP: 1 }, createRng(seed));
        const expected = fromLogSoftmax(row, temperature, u);
        assert.equal(drawn.id, expected.id);
        assert.ok(Object.is(drawn.logprob, expected.logprob), `${drawn.logprob} vs ${expected.logprob}`);
      },
    ),
    { numRuns: 400 },
  );
});

test("sampleNormalised, given the log-partition and probabilities the engine would compute, draws what sampleToken draws", () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.float({ min: -30, max: 30, noNaN: true }), fc.constant(-Infinity)), {
        minLength: 1,
        maxLength: 300,
      }),
      fc.constantFrom(0, 0.3, 1, 1.3),
      fc.constantFrom(1, 0.9, 0.5),
      fc.integer({ min: 0, max: 1000 }),
      (values, temperature, topP, seed) => {
        const row = Float32Array.from(values);
        if (row.every((x) => x === -Infinity)) row[0] = 0;
        // The exact log-partition: logits / T − logZ is then the very log-softmax sampleToken's
        // top-p draw sees (a logZ recovered from one log-prob is off by an ulp, enough to move a
        // nucleus boundary between two tokens of equal mass).
        const logZ = logPartition(row, temperature || 1);
        const probs = Float64Array.from(row, (x) => Math.exp(x / (temperature || 1) - logZ));
        const options = { temperature, topP };
        const drawn = sampleNormalised(row, logZ, probs, options, createRng(seed));
        const expected = sampleToken(row, options, createRng(seed));
        assert.equal(drawn.id, expected.id);
        assert.ok(
          Math.abs(drawn.logprob - expected.logprob) < 1e-9,
          `${drawn.logprob} vs ${expected.logprob}`,
        );
      },
    ),
    { numRuns: 400 },
  );
});
