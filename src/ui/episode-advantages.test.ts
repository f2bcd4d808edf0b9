/**
 * The dashboard recomputes advantages from stored rewards (episode-advantages.ts); this checks it
 * against what the trainer itself logged. A tiny real RL run (2 steps, 3 groups of 4, tool noise,
 * MT-GRPO turn-level credit) through the CLI, then per step: the recomputed advantages of every
 * kept episode's policy tokens have the `advantage/*` statistics the trainer logged for its update.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import * as trainCommand from "../cli/commands/train.ts";
import { runCli } from "../cli/testing.ts";
import { openStore } from "../store/index.ts";
import { flattenTrajectory } from "../types/trajectory.ts";
import { episodeAdvantages } from "./episode-advantages.ts";

test("recomputed advantages have the statistics the RL trainer logged, step by step", {
  timeout: 300_000,
}, async (t) => {
  const folder = mkdtempSync(join(tmpdir(), "agentrl-ui-rl-"));
  const root = join(folder, "runs");
  t.after(() => rmSync(folder, { recursive: true, force: true }));
  const steps = 2;
  await runCli(trainCommand.register, [
    "train",
    "rl",
    "--steps",
    String(steps),
    "--tasks-per-step",
    "3",
    "--group-size",
    "4",
    "--eval-every",
    "0",
    "--noise",
    "0.2",
    "--estimator",
    "mt-grpo",
    "--reward",
    "mt-grpo",
    "--runs",
    root,
    "--run-id",
    "rl-ui",
    "--json",
  ]);
  const store = openStore(join(root, "rl-ui", "store.sqlite"), { readOnly: true });
  try {
    const run = store.getRun("rl-ui")!;
    for (let step = 1; step <= steps; step++) {
      const values: number[] = [];
      for (const stored of store.iterateTrajectories(run.id, { step })) {
        const advantages = episodeAdvantages(store, run, stored);
        if (!advantages.values) continue;
        const mask = flattenTrajectory(stored.trajectory).lossMask;
        advantages.values.forEach((value, i) => {
          if (mask[i] === 1) values.push(value);
        });
      }
      const logged = Object.fromEntries(
        store
          .metrics(run.id)
          .filter((point) => point.step === step)
          .map((point) => [point.key, point.value]),
      );
      assert.ok(values.length > 0, `step ${step}: the update kept episodes`);
      const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
      const absMean = values.reduce((sum, value) => sum + Math.abs(value), 0) / values.length;
      assert.ok(
        Math.abs(mean - logged["advantage/mean"]) < 1e-5,
        `step ${step} mean ${mean} vs ${logged["advantage/mean"]}`,
      );
      assert.ok(Math.abs(absMean - logged["advantage/abs_mean"]) < 1e-5, `step ${step} |A| ${absMean}`);
      assert.ok(Math.abs(Math.max(...values) - logged["advantage/max"]) < 1e-5, `step ${step} max`);
      assert.ok(Math.abs(Math.min(...values) - logged["advantage/min"]) < 1e-5, `step ${step} min`);
      assert.ok(logged["advantage/abs_mean"] > 0, "the run had a learning signal to compare");
    }
  } finally {
    store.close();
  }
});
