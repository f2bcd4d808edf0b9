import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runEpisodes } from "../env/run-episodes.ts";
import { createRunDirectory } from "../store/index.ts";
import { infraFailure } from "../types/failure.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { computeAdvantages, toAdvantageBatch } from "./advantages/index.ts";
import { INFRA_FAILURES_METRIC, scorableEpisodes } from "./infra-episodes.ts";
import { saveTinyBase, tinyRlConfig } from "./testing.ts";
import { type RlUpdateBatch, trainRl } from "./train.ts";

/** Episode 1 of every group fails for an infra reason (a verifier crash, as the loop records it). */
const isFaulted = (trajectory: Trajectory) => trajectory.id.endsWith("/1");

test("train rl: an infra episode leaves its group; the others' advantages equal a run without it", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-rl-infra-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const config = tinyRlConfig(await saveTinyBase(5, root), { steps: 1 });
  const train = async (name: string, fault: boolean) => {
    const { directory, store, run } = createRunDirectory({ kind: "rl", root, config, id: name });
    let update: RlUpdateBatch | undefined;
    const result = await trainRl({
      config,
      runDir: directory,
      store,
      runId: run.id,
      rollout: async (options) => {
        // A random tiny model solves nothing: episodes 0 and 3 of each group are called correct so
        // the groups carry signal (the reward trusts `correct`).
        const trajectories = (await runEpisodes(options)).map((trajectory) => ({
          ...trajectory,
          correct: /\/[03]$/.test(trajectory.id),
        }));
        return trajectories.map((trajectory) =>
          fault && isFaulted(trajectory)
            ? {
                ...trajectory,
                correct: false,
                outcomeReward: null,
                failure: infraFailure("verifier-error", "the verifier threw"),
              }
            : trajectory,
        );
      },
      transformBatch: (batch) => {
        update = { ...batch, trajectories: [...batch.trajectories], advantages: [...batch.advantages] };
      },
    });
    const metric = store.metrics(run.id, INFRA_FAILURES_METRIC)[0]?.value;
    const stored = store.trajectories(run.id);
    store.close();
    return { update: update!, metric, stored, infraFailures: result.infraFailures };
  };
  const faulted = await train("faulted", true);
  const clean = await train("clean", false);
  const groups = config.tasksPerStep;
  assert.equal(faulted.metric, groups, "one infra episode per group, counted");
  assert.equal(faulted.infraFailures, groups, "and reported in the result");
  assert.equal(clean.metric, 0);
  assert.equal(faulted.stored.length, groups * config.groupSize, "infra episodes are still stored");
  assert.ok(
    faulted.stored
      .filter(isFaulted)
      .every((trajectory) => (trajectory.info?.rl as { kept: boolean } | undefined)?.kept === false),
  );

  // The faulted run trained on the other episodes only.
  const ids = (update: RlUpdateBatch) => update.trajectories.map((trajectory) => trajectory.id);
  assert.deepEqual(
    ids(faulted.update),
    ids(clean.update).filter((id) => !id.endsWith("/1")),
  );
  // Their advantages are those the estimator gives the clean run's episodes without the faulted ones.
  const without = scorableEpisodes(
    clean.update.trajectories.map((trajectory) =>
      isFaulted(trajectory) ? { ...trajectory, failure: infraFailure("x", "x") } : trajectory,
    ),
  );
  const expected = computeAdvantages(
    config.estimator,
    toAdvantageBatch(without, { anchors: config.anchors }),
    { ...config.advantage },
  ).advantages;
  const rows = (list: readonly ArrayLike<number>[]) => list.map((row) => Array.from(row));
  assert.deepEqual(rows(faulted.update.advantages), rows(expected));
  assert.ok(
    rows(expected)
      .flat()
      .some((value) => value !== 0),
    "advantages carry signal",
  );
  // Scoring the faulted episodes as failures instead would have changed the others' advantages.
  const cleanById = new Map(
    clean.update.trajectories.map((trajectory, i) => [trajectory.id, clean.update.advantages[i]]),
  );
  assert.notDeepEqual(
    rows(faulted.update.advantages),
    rows(faulted.update.trajectories.map((trajectory) => cleanById.get(trajectory.id)!)),
  );
});

test("RL groups: infra and agent failures leave the group, policy and tool failures stay", () => {
  const episode = (id: string, failure?: Trajectory["failure"]) => ({
    id,
    correct: false,
    ...(failure ? { failure } : {}),
  });
  const group = [
    episode("wrong answer"),
    episode("infra", infraFailure("upstream-5xx", "502")),
    episode("agent", { class: "agent", code: "agent-threw", message: "TypeError in the agent" }),
    episode("format", { class: "policy", code: "format-error", message: "no answer tag" }),
    { id: "right", correct: true },
  ];
  assert.deepEqual(
    scorableEpisodes(group).map((trajectory) => trajectory.id),
    ["wrong answer", "format", "right"],
  );
});
