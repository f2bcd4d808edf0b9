/**
 * GRPO through the gateway: one RL step of `trainRl` whose episodes are the plain `openai` example
 * agent calling the live embedded policy through `agentrl serve` and the recording gateway. The
 * stored episodes are gateway trajectories in the trainer's groups, the update runs on their exact
 * ids (finite loss, a gradient, sampler/trainer KL ≈ 0), and no prefix break occurs.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { test } from "node:test";
import openaiAgent from "../../examples/agents/openai.ts";
import { parseRlConfig } from "../rl/config.ts";
import { saveTinyBase, tinyRlConfig } from "../rl/testing.ts";
import { trainRl } from "../rl/train.ts";
import { createRunDirectory } from "../store/index.ts";
import { flattenTrajectory } from "../types/trajectory.ts";
import { agentRollout } from "./agent-rollout.ts";
import type { AgentFunction } from "./types.ts";

test("one GRPO step on the episodes of an unmodified agent through the gateway", async () => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-agent-rl-"));
  try {
    const config = parseRlConfig({
      name: "agent-rl-test",
      base: "models/base-strong",
      steps: 1,
      seed: 2,
      families: ["lookup"],
      tasksPerStep: 2,
      groupSize: 4,
      dynamicSampling: false,
      evalEvery: 0,
      checkpointEvery: 1,
    });
    const { directory, store, run } = createRunDirectory({ kind: "rl", root, config, id: "rl" });
    let breaks = -1;
    const rollout = agentRollout({
      agent: openaiAgent as unknown as AgentFunction,
      onPrefixBreaks: (count) => {
        breaks = count;
      },
    });
    const result = await trainRl({ config, runDir: directory, store, runId: run.id, rollout }).finally(
      rollout.close,
    );
    assert.equal(breaks, 0);
    const trajectories = store.trajectories(run.id);
    assert.equal(trajectories.length, 8);
    for (const trajectory of trajectories) {
      assert.ok(trajectory.info?.gateway, "a gateway trajectory");
      assert.ok(trajectory.group === 0 || trajectory.group === 1, `group ${trajectory.group}`);
      const flat = flattenTrajectory(trajectory);
      assert.ok(flat.lossMask.some(Boolean), "policy tokens to train on");
      assert.ok(flat.logprobs.every(Number.isFinite));
    }
    const losses = store.metrics(run.id, "loss/total").map((point) => point.value);
    assert.ok(losses.length === 1 && Number.isFinite(losses[0]), `losses ${losses}`);
    const groups = new Map<number, number[]>();
    for (const t of trajectories)
      groups.set(t.group ?? -1, [...(groups.get(t.group ?? -1) ?? []), t.outcomeReward ?? 0]);
    const signal = [...groups.values()].some((rewards) => new Set(rewards).size > 1);
    // Seeded end to end: this step's groups do hold both outcomes, so the update must run.
    assert.ok(signal, "a group with both outcomes");
    assert.equal(result.lastMetrics["optim/updates"], 1);
    assert.ok(result.lastMetrics["optim/grad_norm"] > 0);
    // KL(sampler ‖ trainer) before any change: the ids and log-probs the gateway recorded are the
    // ones the trainer scores, so it is ≈ 0 (a re-tokenised or misaligned episode would not be).
    assert.ok(
      Math.abs(result.lastMetrics["policy/kl_sampler"]) < 1e-6,
      `kl ${result.lastMetrics["policy/kl_sampler"]}`,
    );
    store.close();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("a module agent's slots serve every step: each imports the agent once per run, not per step", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-agent-rl-slots-"));
  const imports = join(root, "imports.log");
  const saved = process.env.AGENTRL_TEST_IMPORTS;
  process.env.AGENTRL_TEST_IMPORTS = imports;
  t.after(() => {
    if (saved === undefined) delete process.env.AGENTRL_TEST_IMPORTS;
    else process.env.AGENTRL_TEST_IMPORTS = saved;
    rmSync(root, { recursive: true, force: true });
  });
  // the module-level-client example, counting its imports (one line per slot start)
  const module = join(root, "agent.ts");
  writeFileSync(
    module,
    [
      `import { appendFileSync } from "node:fs";`,
      `import agent from ${JSON.stringify(resolve("examples/agents/openai-env.ts"))};`,
      `appendFileSync(process.env.AGENTRL_TEST_IMPORTS as string, "import\\n");`,
      "export default agent;",
    ].join("\n"),
  );
  const config = tinyRlConfig(await saveTinyBase(4, root), { steps: 3, tasksPerStep: 2, groupSize: 2 });
  const { directory, store, run } = createRunDirectory({ kind: "rl", root, config, id: "slots" });
  const rollout = agentRollout({ agent: { kind: "module", path: module, memoryMb: 512 }, concurrency: 2 });
  await trainRl({ config, runDir: directory, store, runId: run.id, rollout }).finally(rollout.close);
  const episodes = store.trajectories(run.id);
  store.close();
  assert.equal(episodes.length, 12, "3 steps × 2 tasks × 2 episodes");
  assert.ok(
    episodes.every((episode) => episode.failure === undefined),
    "no agent or infra failure",
  );
  assert.equal(
    readFileSync(imports, "utf8"),
    "import\nimport\n",
    "two slots, each started once for three steps",
  );
});
