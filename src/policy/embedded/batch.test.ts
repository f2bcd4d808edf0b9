/**
 * Length-bucketed micro-batches (batch.ts `planLengthBuckets`): every sequence in exactly one row,
 * each micro-batch's T covers its members and stays within the token budget, the shapes stay few,
 * and the plan never costs more than one T for all.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { bucketLength, CALL_COST, makeTokenBatches, planLengthBuckets } from "./batch.ts";

const options = { maxLen: 256, maxTokens: 2048, multiple: 64 };

test("a bucket plan covers every sequence once, within the budget, and costs no more than one T for all", () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 1, max: 256 }), { minLength: 1, maxLength: 200 }), (lengths) => {
      const plan = planLengthBuckets(lengths, options);
      const seen = plan.flatMap((batch) => batch.members).sort((a, b) => a - b);
      assert.deepEqual(
        seen,
        lengths.map((_, i) => i),
      );
      for (const { T, rows, members } of plan) {
        assert.ok(members.length <= rows);
        assert.ok(rows * T <= Math.max(options.maxTokens, T), `${rows} x ${T} over the budget`);
        assert.ok(Math.max(...members.map((i) => lengths[i])) <= T);
        assert.equal(T % options.multiple, 0);
        // rows: the budget's at this T, or a power of two below it
        const cap = Math.max(1, Math.floor(options.maxTokens / T));
        assert.ok(rows === cap || (rows & (rows - 1)) === 0, `rows ${rows} at T ${T}`);
      }
      // One T for all (the step's longest), rows a power of two up to the budget's: what the RL
      // update did before. The plan minimises slots + CALL_COST per micro-batch, so it never costs more.
      const T = bucketLength(Math.max(...lengths), options.maxLen, options.multiple);
      const cap = Math.max(1, Math.floor(options.maxTokens / T));
      const rows = Math.min(cap, 2 ** Math.ceil(Math.log2(lengths.length)));
      const calls = Math.ceil(lengths.length / rows);
      const single = calls * rows * T + calls * CALL_COST;
      const cost = plan.reduce((n, batch) => n + batch.rows * batch.T + CALL_COST, 0);
      assert.ok(cost <= single, `${cost} bucketed, ${single} with one T`);
    }),
    { numRuns: 200 },
  );
});

test("RL-like lengths: the short episodes get their own T and most of the padding goes", () => {
  // A step's 64 episodes as measured on base-strong: mostly 15-70 tokens, a few near 100-140.
  const lengths = [
    ...Array(8).fill(16),
    ...Array(28).fill(44),
    ...Array(20).fill(68),
    ...Array(6).fill(96),
    101,
    139,
  ];
  const plan = planLengthBuckets(lengths, options);
  const slots = plan.reduce((n, batch) => n + batch.rows * batch.T, 0);
  const single = Math.ceil(64 / 10) * 10 * 192; // T = 192 for all: 10 rows per micro-batch
  assert.ok(slots < 0.6 * single, `${slots} slots vs ${single}`);
  // the micro-batches hold the sequences of the plan, in its order
  const batches = makeTokenBatches(
    lengths.map((n, i) => ({ ids: Array.from({ length: n }, () => i % 20) })),
    { maxLen: 256, maxTokensPerMicroBatch: 2048, lengthMultiple: 64, lengthBuckets: true },
  );
  assert.deepEqual(
    batches.map((b) => b.ids.shape),
    plan.map((b) => [b.rows, b.T]),
  );
  for (const batch of batches) {
    batch.ids.dispose();
    batch.weights.dispose();
  }
});
