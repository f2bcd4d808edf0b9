/**
 * The whole doctor on the shipped base checkpoints (sampled at temperature 1, as RL samples):
 * base-weak never solves chain tasks, so no GRPO group has signal and it is not ready, with SFT or
 * a stronger base as the change; base-strong solves lookups part of the time, so it is ready.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { resolvePolicy } from "../policy/resolve.ts";
import { runDoctor, spreadTasks } from "./run-doctor.ts";
import { CHECK_IDS } from "./types.ts";

const sampling = { temperature: 1, topP: 1 };

test("models/base-weak on chain is not ready: coverage fails and asks for SFT or a stronger base", async () => {
  const policy = await resolvePolicy("models/base-weak", sampling);
  const report = await runDoctor({
    policySpec: "models/base-weak",
    policy,
    tasks: { type: "world", split: "test", count: 6, seed: 1, family: "chain" },
    groupSize: 4,
    ...sampling,
  });
  assert.equal(report.ready, false);
  assert.deepEqual(
    report.checks.map((check) => check.id),
    [...CHECK_IDS],
  );
  const failed = report.checks.filter((check) => !check.ok).map((check) => check.id);
  assert.deepEqual(failed, ["coverage"]);
  assert.match(report.verdict.reasons[0], /^coverage: /);
  assert.equal(report.verdict.changes[0].kind, "stronger-base-or-sft");
  assert.equal(report.checks.find((check) => check.id === "token-exactness")?.skipped, true);
});

test("models/base-strong on lookup is ready", async () => {
  const policy = await resolvePolicy("models/base-strong", sampling);
  const report = await runDoctor({
    policySpec: "models/base-strong",
    policy,
    tasks: { type: "world", split: "test", count: 8, seed: 1, family: "lookup" },
    groupSize: 8,
    ...sampling,
  });
  assert.equal(report.ready, true, report.verdict.reasons.join("\n"));
  const coverage = report.checks.find((check) => check.id === "coverage")!;
  assert.ok((coverage.data!.overall as { signalShare: number }).signalShare >= 0.3);
  assert.deepEqual(report.verdict.changes, []);
});

test("the cheap checks need no policy; bad options name the valid values", async () => {
  const report = await runDoctor({
    policySpec: "none",
    tasks: { type: "world", split: "test", count: 4, seed: 1, family: "chain" },
    reward: "mt-grpo",
    checks: ["verifier", "reward-hacking"],
  });
  assert.deepEqual(
    report.checks.map((check) => [check.id, check.ok]),
    [
      ["verifier", true],
      ["reward-hacking", false],
    ],
  );
  await assert.rejects(
    runDoctor({
      policySpec: "none",
      tasks: { type: "world", split: "test", count: 2, seed: 1 },
      reward: "nope",
    }),
    /unknown reward preset "nope"; valid: /,
  );
  await assert.rejects(
    runDoctor({
      policySpec: "none",
      tasks: { type: "world", split: "test", count: 2, seed: 1 },
      checks: ["verifier", "vibes" as never],
    }),
    /unknown check "vibes" \(valid: verifier, /,
  );
  assert.deepEqual(
    spreadTasks(
      ["a", "b", "c", "d"].map((id) => ({ id, question: id, answer: id, family: "f" })),
      2,
    ).map((task) => task.id),
    ["a", "c"],
  );
});

test("an hf: policy's token-exactness counts its chat template's prefix breaks over the coverage episodes", async () => {
  const spec = "hf:src/policy/hf/fixtures/qwen3-chat";
  const policy = await resolvePolicy(spec, sampling);
  try {
    const report = await runDoctor({
      policySpec: spec,
      policy,
      tasks: { type: "world", split: "test", count: 16, seed: 1 },
      groupSize: 8,
      checks: ["coverage", "token-exactness"],
      ...sampling,
    });
    const check = report.checks.find((c) => c.id === "token-exactness")!;
    assert.equal(check.skipped, undefined);
    const data = check.data as { continuedTurns: number; prefixBreaks: number; breakRate: number };
    // the policy's own counts, read after coverage sampled it
    const counts = policy as unknown as { prefixBreaks: number; continuedTurns: number };
    assert.ok(counts.continuedTurns > 0, "coverage's episodes went past their first turn");
    assert.deepEqual([data.continuedTurns, data.prefixBreaks], [counts.continuedTurns, counts.prefixBreaks]);
    assert.equal(check.ok, data.breakRate <= 0.01);
    assert.match(check.detail, /continued turns re-rendered by the chat template/);
  } finally {
    await policy.close?.();
  }
});
