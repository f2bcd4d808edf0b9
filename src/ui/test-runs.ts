/**
 * A runs folder for the dashboard's tests: an RL run still `running` (metrics over steps, GRPO
 * groups of stored episodes marked kept, as the trainer stores them), its finished eval child with
 * pass@k metrics and a report page, a corrupt `.sqlite` file and a foreign SQLite database. The
 * RL run's store stays open for writing, so a test can log a new step while the dashboard shows it.
 */

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { createRunDirectory, type Store } from "../store/index.ts";
import { formatErrorTrajectory, numberedTrajectory, richTrajectory } from "../store/test-trajectories.ts";
import type { Trajectory } from "../types/trajectory.ts";

export interface TestRuns {
  root: string;
  rlStore: Store;
  rlRunId: string;
  evalRunId: string;
  /** The RL run's episodes in insertion order (seq 1, 2, …). */
  episodes: Trajectory[];
  /** Steps logged so far (`loss/policy`, `rollout/success_rate` at 1..steps). */
  steps: number;
  /** Closes the RL run's store and deletes the temporary folder. */
  close(): void;
}

const kept = (trajectory: Trajectory, step: number, group: number): Trajectory => ({
  ...trajectory,
  group,
  info: { ...trajectory.info, rl: { step, round: 0, kept: true } },
});

export function createTestRuns(): TestRuns {
  const folder = mkdtempSync(join(tmpdir(), "agentrl-ui-"));
  const root = join(folder, "runs");
  const rl = createRunDirectory({
    root,
    id: "rl-test",
    kind: "rl",
    config: { estimator: "grpo", advantage: {}, anchors: "observation", seed: 7, note: "<b>not markup</b>" },
  });
  const steps = 5;
  for (let step = 1; step <= steps; step++) {
    rl.store.addMetrics(rl.run.id, step, {
      "loss/policy": 1 / step,
      "rollout/success_rate": step / 10,
      "optim/grad_norm": step % 2 === 0 ? Number.NaN : 0.5,
    });
  }
  // One GRPO group at step 1 with a success and a failure: non-zero advantages.
  const wrong = {
    ...numberedTrajectory(3),
    correct: false,
    outcomeReward: 0,
    taskId: richTrajectory().taskId,
  };
  const episodes = [kept(richTrajectory(), 1, 2), kept(wrong, 1, 2), formatErrorTrajectory()];
  rl.store.addTrajectories(rl.run.id, episodes.slice(0, 2), { step: 1 });
  rl.store.addTrajectory(rl.run.id, episodes[2], { step: 2 });

  const evalRun = rl.store.createRun({
    id: "eval-child",
    kind: "eval",
    parentId: rl.run.id,
    config: { k: 8 },
  });
  rl.store.addMetrics(evalRun.id, 0, {
    "eval/pass@1": 0.2,
    "eval/pass@2": 0.3,
    "eval/pass@4": 0.45,
    "eval/lookup/pass@1": 0.5,
    "eval/lookup/pass@2": 0.7,
    "eval/lookup/pass@4": 0.8,
    "eval/pass^1": 0.2,
    "eval/pass^2": 0.1,
    "eval/pass^4": 0.05,
    "eval/lookup/pass^1": 0.5,
    "eval/lookup/pass^2": 0.3,
    "eval/lookup/pass^4": 0.2,
  });
  rl.store.finishRun(evalRun.id, "completed", { "eval/pass@1": 0.2 });
  writeFileSync(
    join(rl.directory, "report.html"),
    "<!doctype html><title>report</title><h1>test report</h1>",
  );

  writeFileSync(join(root, "corrupt.sqlite"), "this is not a database, just text that ends in .sqlite");
  mkdirSync(join(root, "other"));
  const foreign = new DatabaseSync(join(root, "other", "foreign.sqlite"));
  foreign.exec("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('hello')");
  foreign.close();
  const close = () => {
    rl.store.close();
    rmSync(folder, { recursive: true, force: true });
  };
  return { root, rlStore: rl.store, rlRunId: rl.run.id, evalRunId: evalRun.id, episodes, steps, close };
}
