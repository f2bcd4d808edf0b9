import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { creditAssignmentConfig, runCreditAssignment } from "./credit-assignment.ts";
import { saveTinyBase } from "./testing.ts";

test("runCreditAssignment: one child run per estimator, curves, charts, and reuse of a finished estimator", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-credit-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const options = {
    out: join(root, "out"),
    estimators: ["grpo", "gae"],
    family: "lookup" as const,
    base: await saveTinyBase(5, root),
    steps: 2,
    tasksPerStep: 2,
    groupSize: 4,
    evalEvery: 2,
    evalTasks: 2,
    evalSamples: 2,
    overrides: {
      budgets: { maxTurns: 3, maxTokens: 24, maxTurnTokens: 8 },
      rolloutBatch: 8,
      microBatchTokens: 1024,
    },
  };
  // The experiment's config: the turn-credit reward, no refill, the same budget for each estimator.
  const config = creditAssignmentConfig(options, "gae");
  assert.equal(config.reward, "turn-credit");
  assert.equal(config.maxExtraRollouts, 0);
  assert.throws(() => creditAssignmentConfig(options, "ppo"), /unknown estimator "ppo"/);
  // Each estimator trains in a child process (the default); its progress comes back over IPC.
  const seen: string[] = [];
  const result = await runCreditAssignment({
    ...options,
    onProgress: (estimator, progress) => seen.push(`${estimator}@${progress.step}`),
  });
  assert.deepEqual(seen, ["grpo@0", "grpo@1", "grpo@2", "gae@0", "gae@1", "gae@2"]);
  assert.deepEqual(
    result.curves.map((curve) => curve.estimator),
    ["grpo", "gae"],
  );
  for (const curve of result.curves) {
    assert.deepEqual(
      curve.train.map((point) => point.step),
      [1, 2],
    );
    assert.deepEqual(
      curve.heldout.map((point) => point.step),
      [0, 2],
    );
    for (const point of curve.train) {
      assert.ok(Number.isFinite(point.toolCallsPerEpisode) && Number.isFinite(point.returnMean));
      assert.ok(Object.keys(point.returnVarianceByHops).length > 0, "variance by chain length");
    }
  }
  for (const file of Object.values(result.files)) assert.ok(existsSync(file), file);
  assert.match(readFileSync(result.files.variance, "utf8"), /<svg/);
  // Reuse: the finished estimators are read back, nothing is trained again.
  const runs = () =>
    readdirSync(options.out).filter((name) => name.startsWith("credit-") && !name.includes("."));
  const before = runs().length;
  const again = await runCreditAssignment({ ...options, reuse: true });
  assert.equal(runs().length, before);
  assert.deepEqual(again.curves, result.curves);
});
