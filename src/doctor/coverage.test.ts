import assert from "node:assert/strict";
import { test } from "node:test";
import type { TaskCount } from "../eval/task-counts.ts";
import { checkCoverage } from "./coverage.ts";

const count = (taskId: string, family: string, n: number, c: number): TaskCount => ({
  taskId,
  family,
  n,
  c,
  policyErrors: 0,
});

test("worked example: signal share, pass^k, learnable pool, and the selection that reaches the target", () => {
  // G = 4. lookup: c = 4, 4, 2 (two never fail, one mixed); chain: c = 0, 0, 1.
  // Groups with signal: only the mixed tasks, 2 of 6 → 33% ≥ 30%: passes.
  const counts = [
    count("l1", "lookup", 4, 4),
    count("l2", "lookup", 4, 4),
    count("l3", "lookup", 4, 2),
    count("c1", "chain", 4, 0),
    count("c2", "chain", 4, 0),
    count("c3", "chain", 4, 1),
  ];
  const check = checkCoverage({ counts, groupSize: 4 });
  assert.equal(check.ok, true, check.detail);
  const overall = check.data?.overall as { signalShare: number; allWrong: number; allRight: number };
  assert.equal(overall.signalShare, 0.333);
  assert.equal(overall.allWrong, 0.333);
  assert.equal(overall.allRight, 0.333);
  assert.deepEqual(check.data?.learnable, ["l3", "c3"]);
  const lookup = (check.data!.families as { family: string; passHat: { k: number; value: number }[] }[])[1];
  // pass^2 of lookup: (1 + 1 + C(2,2)/C(4,2) = 1/6) / 3 = 0.722.
  assert.equal(lookup.family, "lookup");
  assert.equal(lookup.passHat.find((p) => p.k === 2)?.value, 0.722);

  // At a target of 50% the set fails; the learnable pool reaches it at G = 4: pass rates 1/2 and
  // 1/4 give 1 - 0.5^4 - 0.5^4 = 0.875 and 1 - 0.25^4 - 0.75^4 = 0.68, mean 0.777.
  const strict = checkCoverage({ counts, groupSize: 4, target: 0.5 });
  assert.equal(strict.ok, false);
  assert.deepEqual(strict.data?.recommendation, { tasks: "learnable", groupSize: 4, share: 0.777 });
  // Or all tasks at G = 8, where the always-solved and never-solved tasks take their family's
  // pooled rate (lookup 10/12, chain 1/12).
  assert.deepEqual(
    strict.changes.map((change) => change.kind),
    ["task-selection", "larger-group"],
  );
  assert.match(strict.changes[1].text, /or use --group-size 8/);
});

test("a family never solved asks for SFT or a stronger base, whatever G", () => {
  const counts = [count("c1", "chain", 8, 0), count("c2", "chain", 8, 0), count("c3", "chain", 8, 0)];
  const check = checkCoverage({ counts, groupSize: 8 });
  assert.equal(check.ok, false);
  assert.equal(check.changes[0].kind, "stronger-base-or-sft");
  assert.equal(check.data?.recommendation, null);
  assert.match(check.detail, /No task selection or G up to 64 reaches the target/);
});

test("a larger G is recommended when rarely solved tasks would then give signal", () => {
  // Pooled pass rate of the family 1/40: at G = 8 only one task has signal (1 of 5 = 20%); the
  // all-wrong tasks take the pooled rate, so at G = 32 each has 1 - (39/40)^32 ≈ 0.56 of a signal.
  const counts = [
    count("b1", "bridge", 8, 1),
    count("b2", "bridge", 8, 0),
    count("b3", "bridge", 8, 0),
    count("b4", "bridge", 8, 0),
    count("b5", "bridge", 8, 0),
  ];
  const check = checkCoverage({ counts, groupSize: 8 });
  assert.equal(check.ok, false);
  // First choice: the learnable pool (b1, p = 1/8: 1 - (1/8)^8 - (7/8)^8 = 0.656 at G = 8).
  assert.deepEqual(check.data?.recommendation, { tasks: "learnable", groupSize: 8, share: 0.656 });
  // The alternative: all tasks at G = 16: (1 - (7/8)^16 + 4 (1 - (39/40)^16)) / 5 = 0.443.
  const at = check.data?.allTasksAt as { groupSize: number; share: number }[];
  assert.deepEqual(at[1], { groupSize: 16, share: 0.443 });
  assert.deepEqual(
    check.changes.map((change) => change.kind),
    ["task-selection", "larger-group"],
  );
  assert.match(
    check.changes[1].text,
    /or use --group-size 16: expected 44% of groups with signal on all tasks/,
  );
});
