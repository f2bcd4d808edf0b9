/**
 * `eval --agent` under AGENTRL_FAULTS, through the recording gateway: upstream faults injected at
 * the gateway's upstream adapter (503, timeout, cut-short and malformed answers). The agent (the
 * plain `openai` example, no retries) fails on each; the gateway records the failed call with its
 * class, and the episode is infra: counted, out of pass@k's n, never the agent's failure. Checked
 * against the fault log (task and seed) and the gateway's recorded calls. Verifier faults too.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import openaiAgent from "../../examples/agents/openai.ts";
import { FAULT_CLASSES, type FaultClass, injectedFaults, withFaults } from "../core/faults.ts";
import type { GatewayCall } from "../gateway/types.ts";
import { openRunDirectory } from "../store/index.ts";
import { failureClass } from "../types/failure.ts";
import { evaluateAgent } from "./evaluate-agent.ts";
import type { AgentFunction } from "./types.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-agent-faults-"));
after(() => rmSync(root, { recursive: true, force: true }));

test("eval --agent under upstream faults: every faulted episode is infra, recorded, counted", async () => {
  await withFaults(
    "seed=9,upstream-5xx=0.08,upstream-timeout=0.08,truncated-stream=0.08,malformed-json=0.08,verifier-error=0.1",
    async () => {
      const result = await evaluateAgent({
        agentPath: "examples/agents/openai.ts",
        agent: openaiAgent as unknown as AgentFunction,
        policy: "expert",
        tasks: { type: "world", split: "test", count: 8, seed: 2 },
        n: 2,
        retries: 0,
        concurrency: 2,
        timeoutMs: 5000,
        runsRoot: root,
        runId: "faulted",
        curves: { bootstrap: false },
      });
      const faults = injectedFaults();
      const store = openRunDirectory(result.directory!);
      try {
        const trajectories = store.trajectories("faulted");
        // Fault keys name the episode by task and seed (faultKey), its calls by gateway episode id.
        const byEpisode = new Map(trajectories.map((t) => [`${t.taskId}@${t.seed}`, t]));
        const gatewayEpisode = (t: (typeof trajectories)[number]) =>
          (t.info?.gateway as { episodeId: string } | undefined)?.episodeId;
        const report = Object.fromEntries(
          FAULT_CLASSES.map((name) => [name, { injected: 0, misclassified: 0 }]),
        ) as Record<FaultClass, { injected: number; misclassified: number }>;
        for (const fault of faults) {
          const [episode, seq] = fault.key.split(":");
          report[fault.faultClass].injected++;
          const upstream = seq !== "verify";
          // Verifier faults are keyed by the stored episode key (the trajectory id).
          const trajectory = upstream ? byEpisode.get(episode) : trajectories.find((t) => t.id === episode);
          const call =
            upstream && trajectory
              ? store.getState<GatewayCall>(
                  "faulted",
                  `gateway/calls/${gatewayEpisode(trajectory)}/${seq.padStart(4, "0")}`,
                )
              : undefined;
          const ok =
            trajectory !== undefined &&
            failureClass(trajectory) === "infra" &&
            trajectory.outcomeReward === null &&
            (!upstream || (call?.failure?.class === "infra" && call.failure.injected === true));
          if (!ok) report[fault.faultClass].misclassified++;
        }
        console.log(`eval --agent faults injected / misclassified: ${JSON.stringify(report)}`);
        // Without retries each injected fault ends its episode: one fault per infra episode.
        const faulted = faults.length;
        for (const name of [
          "upstream-5xx",
          "upstream-timeout",
          "truncated-stream",
          "malformed-json",
          "verifier-error",
        ] as const)
          assert.ok(report[name].injected > 0, `no ${name} fault injected`);
        for (const [name, entry] of Object.entries(report)) assert.equal(entry.misclassified, 0, name);
        // Nothing else is infra, and the counts are reported.
        const infra = trajectories.filter((t) => failureClass(t) === "infra");
        assert.equal(infra.length, faulted);
        assert.equal(result.totals.infraFailures, faulted);
        assert.equal(result.metrics["eval/infra_failures"], faulted);
        assert.equal(result.totals.samples, 16 - faulted);
        assert.equal(result.totals.policyErrors, 0, "the expert's other episodes all answered");
      } finally {
        store.close();
      }
    },
  );
});

test("an agent that throws, hangs or returns nothing is an agent failure: a sample of the agent, not infra", async () => {
  const agent: AgentFunction = async (task, context) => {
    const index = Number(task.id.split("/").at(-1) ?? 0) % 4;
    if (index === 0) throw new TypeError("agent bug");
    if (index === 1) return new Promise(() => {});
    if (index === 2) return null;
    return (openaiAgent as unknown as AgentFunction)(task, context);
  };
  const result = await evaluateAgent({
    agentPath: "mixed",
    agent,
    policy: "expert",
    tasks: { type: "world", split: "test", count: 8, seed: 3 },
    n: 1,
    retries: 0,
    concurrency: 4,
    timeoutMs: 1000,
    runsRoot: root,
    runId: "agents",
    curves: { bootstrap: false },
  });
  const store = openRunDirectory(result.directory!);
  try {
    const trajectories = store.trajectories("agents");
    const codes = new Set(
      trajectories.flatMap((t) => (t.failure ? [`${t.failure.class}/${t.failure.code}`] : [])),
    );
    for (const code of ["agent/agent-threw", "agent/agent-timeout", "agent/agent-no-answer"]) {
      assert.ok(codes.has(code), `no ${code} among ${[...codes].join(", ")}`);
    }
    assert.ok(![...codes].some((code) => code.startsWith("infra/")));
    assert.equal(result.totals.samples, 8, "agent failures stay in the denominator");
    assert.equal(result.totals.infraFailures, 0);
  } finally {
    store.close();
  }
});
