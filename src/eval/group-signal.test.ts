import assert from "node:assert/strict";
import { test } from "node:test";
import { groupSignal, groupSignalAtRate } from "./group-signal.ts";
import { passHatK } from "./passk.ts";

test("pass^k is C(c,k)/C(n,k): the chance a random k-subset is all correct", () => {
  // n = 4, c = 2: C(2,2)/C(4,2) = 1/6; k = 1 is the pass rate; c < k gives 0.
  assert.ok(Math.abs(passHatK(4, 2, 2) - 1 / 6) < 1e-12);
  assert.equal(passHatK(8, 3, 1), 3 / 8);
  assert.equal(passHatK(8, 3, 4), 0);
  assert.equal(passHatK(5, 5, 5), 1);
  assert.throws(() => passHatK(4, 2, 5), /exceeds/);
  assert.throws(() => passHatK(4, 5, 1), /exceeds/);
});

test("group signal: a group holds both outcomes", () => {
  // n = 4, c = 2, G = 2: all right 1/6, all wrong 1/6 → 4/6.
  assert.ok(Math.abs(groupSignal(4, 2, 2) - 4 / 6) < 1e-12);
  assert.equal(groupSignal(8, 0, 8), 0);
  assert.equal(groupSignal(8, 8, 8), 0);
  assert.equal(groupSignal(8, 1, 8), 1);
  // p = 0.5, G = 2: 1 - 0.25 - 0.25.
  assert.equal(groupSignalAtRate(0.5, 2), 0.5);
  assert.equal(groupSignalAtRate(0, 64), 0);
});
