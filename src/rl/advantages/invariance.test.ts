/**
 * What must not matter, for every estimator: the order of the episodes in the batch, the names of
 * the groups, and values or anything else under a zero loss mask; and what must hold: tokens off
 * the mask get 0, unscorable episodes get 0.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createRng } from "../../core/random.ts";
import { ADVANTAGE_ESTIMATOR_NAMES, advantageEstimator, computeAdvantages } from "./index.ts";
import { randomBatch } from "./testing.ts";
import type { AdvantageBatch } from "./types.ts";

const close = (a: ArrayLike<number>, b: ArrayLike<number>, what: string) => {
  assert.equal(a.length, b.length, what);
  for (let i = 0; i < a.length; i++)
    assert.ok(Math.abs(a[i] - b[i]) <= 1e-5, `${what}: [${i}] ${a[i]} != ${b[i]}`);
};
const closeAll = (a: Float32Array[], b: Float32Array[], what: string) => {
  assert.equal(a.length, b.length, what);
  for (let i = 0; i < a.length; i++) close(a[i], b[i], `${what} episode ${i}`);
};

test("every estimator: permuting the episodes permutes the advantages", () => {
  for (const name of ADVANTAGE_ESTIMATOR_NAMES) {
    for (let seed = 0; seed < 15; seed++) {
      const batch = randomBatch(seed);
      const order = createRng(seed + 100).shuffle(batch.episodes.map((_, i) => i));
      const shuffled: AdvantageBatch = { episodes: order.map((i) => batch.episodes[i]) };
      const base = computeAdvantages(name, batch);
      const moved = computeAdvantages(name, shuffled);
      order.forEach((from, to) => {
        close(moved.advantages[to], base.advantages[from], `${name} seed ${seed}`);
        if (base.returns) close(moved.returns?.[to] ?? [], base.returns[from], `${name} returns`);
      });
    }
  }
});

test("every estimator: group ids are labels only", () => {
  for (const name of ADVANTAGE_ESTIMATOR_NAMES) {
    const batch = randomBatch(3);
    const renamed: AdvantageBatch = {
      episodes: batch.episodes.map((episode) => ({ ...episode, group: `task-${episode.group}-x` })),
    };
    const a = computeAdvantages(name, batch);
    const b = computeAdvantages(name, renamed);
    closeAll(b.advantages, a.advantages, name);
  }
});

test("every estimator: 0 off the loss mask and for unscorable episodes; values under the mask do not matter", () => {
  for (const name of ADVANTAGE_ESTIMATOR_NAMES) {
    for (let seed = 0; seed < 15; seed++) {
      const batch = randomBatch(seed);
      const result = computeAdvantages(name, batch);
      batch.episodes.forEach((episode, e) => {
        const row = result.advantages[e];
        assert.equal(row.length, episode.lossMask.length);
        for (let i = 0; i < row.length; i++) {
          assert.ok(Number.isFinite(row[i]), `${name}: not finite`);
          if (!episode.lossMask[i] || episode.outcomeReward === null)
            assert.equal(row[i], 0, `${name} token ${i}`);
        }
      });
      const scrambled: AdvantageBatch = {
        episodes: batch.episodes.map((episode) => ({
          ...episode,
          values: Array.from(episode.values ?? [], (value, i) => (episode.lossMask[i] ? value : 1000 + i)),
        })),
      };
      const again = computeAdvantages(name, scrambled);
      closeAll(again.advantages, result.advantages, `${name} masked values`);
    }
  }
});

test("outcome estimators: adding a constant to every reward changes nothing", () => {
  for (const name of ["grpo", "dr-grpo", "rloo", "reinforce-pp"]) {
    const batch = randomBatch(9);
    const shifted: AdvantageBatch = {
      episodes: batch.episodes.map((episode) => ({
        ...episode,
        outcomeReward: episode.outcomeReward === null ? null : episode.outcomeReward + 3,
      })),
    };
    const a = computeAdvantages(name, batch);
    const b = computeAdvantages(name, shifted);
    closeAll(b.advantages, a.advantages, name);
  }
});

test("unknown estimator names are rejected with the valid list", () => {
  assert.throws(
    () => advantageEstimator("ppo"),
    /unknown advantage estimator "ppo"; valid: "grpo", "dr-grpo", "rloo", "reinforce-pp", "mt-grpo", "gigpo", "gae"/,
  );
  assert.throws(() => advantageEstimator("toString"), /unknown advantage estimator/);
  assert.throws(() => computeAdvantages("gae", randomBatch(1), { lambda: 2 }), /lambda must lie in \[0, 1\]/);
});
