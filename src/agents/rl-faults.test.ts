/**
 * `train rl --agent` under AGENTRL_FAULTS, in process: one step of a tiny config whose episodes are
 * the plain `openai` example agent through the recording gateway, with upstream faults injected at
 * the gateway's upstream adapter and verifier faults at the verdict. Checked against the fault log:
 * every faulted episode is infra, stored with `kept: false`, left out of the update and counted
 * under `rollout/infra_failures`; no other episode is infra.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import openaiAgent from "../../examples/agents/openai.ts";
import { describeFaults, injectedFaults, withFaults } from "../core/faults.ts";
import { INFRA_FAILURES_METRIC } from "../rl/infra-episodes.ts";
import { saveTinyBase, tinyRlConfig } from "../rl/testing.ts";
import { type RlUpdateBatch, trainRl } from "../rl/train.ts";
import { createRunDirectory } from "../store/index.ts";
import { failureClass } from "../types/failure.ts";
import { agentRollout } from "./agent-rollout.ts";
import type { AgentFunction } from "./types.ts";

test("train rl --agent under faults: faulted episodes are infra, never trained on, counted", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-rl-agent-faults-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const config = tinyRlConfig(await saveTinyBase(5, root), { steps: 1, tasksPerStep: 2, groupSize: 4 });
  await withFaults(
    "seed=2,upstream-5xx=0.15,upstream-timeout=0.1,malformed-json=0.1,verifier-error=0.2",
    async () => {
      const { directory, store, run } = createRunDirectory({ kind: "rl", root, config, id: "faulted" });
      let update: RlUpdateBatch | undefined;
      const rollout = agentRollout({ agent: openaiAgent as unknown as AgentFunction, timeoutMs: 30_000 });
      const result = await trainRl({
        config,
        runDir: directory,
        store,
        runId: run.id,
        rollout,
        transformBatch: (batch) => {
          update = batch;
        },
      }).finally(rollout.close);
      const stored = store.trajectories(run.id);
      const metric = store.metrics(run.id, INFRA_FAILURES_METRIC)[0]?.value;
      store.close();
      const faults = injectedFaults();
      // Upstream faults name the episode by task and seed; verifier faults by its id.
      const faultedEpisode = (key: string) => {
        const [episode, call] = key.split(":");
        return stored.find((trajectory) =>
          call === "verify"
            ? trajectory.id === episode
            : `${trajectory.taskId}@${trajectory.seed}` === episode,
        );
      };
      assert.ok(faults.length > 0, "no fault injected");
      const faulted = new Set(faults.map((fault) => faultedEpisode(fault.key)?.id));
      assert.ok(!faulted.has(undefined), "every fault belongs to a stored episode");
      const infra = stored.filter((trajectory) => failureClass(trajectory) === "infra");
      assert.deepEqual(infra.map((trajectory) => trajectory.id).sort(), [...faulted].sort(), "misclassified");
      assert.ok(
        infra.every((trajectory) => (trajectory.info?.rl as { kept: boolean } | undefined)?.kept === false),
      );
      assert.equal(metric, infra.length);
      assert.equal(result.infraFailures, infra.length);
      assert.ok(update && update.trajectories.length > 0, "the step trained on the other episodes");
      const trained = new Set(update.trajectories.map((trajectory) => trajectory.id));
      assert.ok(
        infra.every((trajectory) => !trained.has(trajectory.id)),
        "an infra episode was trained on",
      );
      console.log(
        `train rl --agent: faults ${describeFaults(faults)} (${infra.length} infra episodes of ${stored.length}), misclassified 0`,
      );
    },
  );
});
