/**
 * The episode loop under AGENTRL_FAULTS: an OpenAI-compatible model server (a fake one here, that
 * calls the code tool once and then answers, right for even seeds), the real QuickJS code tool and
 * a verifier, with every infra fault class that reaches this loop injected at its adapter. Checked
 * against the fault log: every injected fault ends its episode as `infra` (none is scored as the
 * policy's failure), no other episode is infra, and every other episode is exactly what the
 * fault-free run gave it. Retries are off so every injected fault is terminal for its episode.
 */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { FAULT_CLASSES, type FaultClass, injectedFaults, withFaults } from "../core/faults.ts";
import { countByTask, countTotals } from "../eval/task-counts.ts";
import { createMockPolicy } from "../policy/mock.ts";
import { createOpenAiPolicy } from "../policy/openai/index.ts";
import { createCodeTool } from "../tools/index.ts";
import { ClassifiedError, failureClass, infraFailure } from "../types/failure.ts";
import type { Task } from "../types/task.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { renderAnswer } from "./protocol.ts";
import { runEpisodes } from "./run-episodes.ts";

export const FAULT_SPEC =
  "seed=13,upstream-5xx=0.08,upstream-timeout=0.04,truncated-stream=0.06,malformed-json=0.06," +
  "sandbox-kill=0.12,verifier-error=0.08,verifier-timeout=0.06";

const tasks: Task[] = Array.from({ length: 6 }, (_, i) => ({
  id: `t${i}`,
  question: `what is ${i} + 1 ?`,
  answer: String(i + 1),
  family: i % 2 ? "lookup" : "bridge",
}));
const episodes = tasks.flatMap((task) =>
  Array.from({ length: 4 }, (_, e) => ({ task, seed: e, id: `${task.id}.${e}` })),
);

/** Turn 0: a code call; turn 1: the answer, right for even seeds. */
async function modelServer() {
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    const afterTool = body.messages.some((message: { role: string }) => message.role === "tool");
    const question = String(body.messages.find((m: { role: string }) => m.role === "user")?.content ?? "");
    const sum = Number(/what is (\d+)/.exec(question)?.[1] ?? 0) + 1;
    const message = afterTool
      ? { role: "assistant", content: String(body.seed % 2 === 0 ? sum : sum + 1) }
      : {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "c1", type: "function", function: { name: "code", arguments: '{"code":"1+1"}' } },
          ],
        };
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id: "x",
        object: "chat.completion",
        created: 0,
        model: "m",
        choices: [{ index: 0, message, finish_reason: afterTool ? "stop" : "tool_calls" }],
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

async function run(url: string, spec: string | undefined) {
  return withFaults(spec, async () => {
    const code = createCodeTool();
    const trajectories = await runEpisodes({
      policy: createOpenAiPolicy({ baseURL: url, model: "m", maxRetries: 0, timeoutMs: 1500 }),
      episodes,
      tools: () => [code],
      verify: (task, answer) => answer === task.answer,
      batchSize: 8,
    });
    return { trajectories, faults: injectedFaults() };
  });
}

const withoutLatency = (trajectory: Trajectory) =>
  JSON.parse(JSON.stringify(trajectory, (key, value) => (key === "latencyMs" ? undefined : value)));

/** Per class: faults injected and how many of their episodes were not classified infra (goal 0). */
export function classificationReport(
  trajectories: readonly Trajectory[],
  faults: readonly { faultClass: FaultClass; key: string }[],
  episodeOf: (key: string) => string,
) {
  const byId = new Map(trajectories.map((trajectory) => [trajectory.id, trajectory]));
  const report = Object.fromEntries(
    FAULT_CLASSES.map((name) => [name, { injected: 0, misclassified: 0 }]),
  ) as Record<FaultClass, { injected: number; misclassified: number }>;
  for (const fault of faults) {
    report[fault.faultClass].injected++;
    const trajectory = byId.get(episodeOf(fault.key));
    if (!trajectory || failureClass(trajectory) !== "infra" || trajectory.outcomeReward !== null) {
      report[fault.faultClass].misclassified++;
    }
  }
  return report;
}

test("episode loop under faults: every injected fault is infra, nothing else is, the rest is untouched", async () => {
  const server = await modelServer();
  try {
    const clean = await run(server.url, undefined);
    assert.equal(clean.faults.length, 0, "off by default");
    assert.ok(clean.trajectories.every((trajectory) => trajectory.failure === undefined));
    const faulted = await run(server.url, FAULT_SPEC);
    const episodeOf = (key: string) => key.split(":")[0];
    const report = classificationReport(faulted.trajectories, faulted.faults, episodeOf);
    const reached = [
      "upstream-5xx",
      "upstream-timeout",
      "truncated-stream",
      "malformed-json",
      "sandbox-kill",
      "verifier-error",
      "verifier-timeout",
    ] as const;
    for (const name of reached) assert.ok(report[name].injected > 0, `no ${name} fault injected`);
    for (const name of reached) assert.equal(report[name].misclassified, 0, `${name} misclassified`);
    console.log(`faults injected / misclassified: ${JSON.stringify(report)}`);

    const faultedIds = new Set(faulted.faults.map((fault) => episodeOf(fault.key)));
    faulted.trajectories.forEach((trajectory, i) => {
      if (faultedIds.has(trajectory.id)) {
        assert.equal(trajectory.failure?.class, "infra");
        assert.equal(trajectory.outcomeReward, null, "an infra episode is never scored");
      } else {
        assert.deepEqual(withoutLatency(trajectory), withoutLatency(clean.trajectories[i]));
      }
    });
    // pass@k: the faulted run's counts equal the fault-free run's on the same (unfaulted) episodes.
    const cleanSame = clean.trajectories.filter((trajectory) => !faultedIds.has(trajectory.id));
    const counts = countByTask(faulted.trajectories, tasks);
    assert.deepEqual(
      counts.map(({ taskId, n, c }) => ({ taskId, n, c })),
      countByTask(cleanSame, tasks).map(({ taskId, n, c }) => ({ taskId, n, c })),
    );
    assert.equal(countTotals(counts).infraFailures, faultedIds.size);
    assert.notDeepEqual(
      counts.map(({ n }) => n),
      countByTask(clean.trajectories, tasks).map(({ n }) => n),
      "the faulted episodes left the denominators",
    );
    // A sandbox kill is labelled on the tool result as infra, and never as injected tool noise.
    const killed = faulted.trajectories.flatMap((trajectory) =>
      trajectory.turns.flatMap((turn) =>
        turn.toolResult?.failure?.code === "sandbox-died" ? [turn.toolResult] : [],
      ),
    );
    assert.ok(killed.length > 0);
    for (const result of killed) assert.deepEqual([result.injected, result.failure?.class], [false, "infra"]);
  } finally {
    await server.close();
  }
});

test("a verifier that throws makes the episode infra with its message, never wrong; a ClassifiedError keeps its class", async () => {
  const policy = createMockPolicy(() => renderAnswer("2"));
  let calls = 0;
  const [crashed, classified, fine] = await runEpisodes({
    policy,
    episodes: [0, 1, 2].map((seed) => ({ task: tasks[1], seed })),
    tools: () => [],
    // Called in episode order: the first throws, the second names its class, the third judges.
    verify: () => {
      const call = calls++;
      if (call === 0) throw new RangeError("bad answer table");
      if (call === 1) throw new ClassifiedError({ class: "tool", code: "checker-refused", message: "no" });
      return true;
    },
  });
  assert.deepEqual(
    crashed.failure,
    infraFailure("verifier-error", "the verifier threw RangeError: bad answer table"),
  );
  assert.deepEqual([crashed.correct, crashed.outcomeReward, crashed.finalAnswer], [false, null, "2"]);
  assert.equal(classified.failure?.code, "checker-refused");
  assert.deepEqual([fine.correct, fine.outcomeReward, fine.failure], [true, 1, undefined]);
});

test("a malformed AGENTRL_FAULTS stops the loop before any episode, naming the bad class", async () => {
  await withFaults("seed=1,verifier-crash=0.5", async () => {
    await assert.rejects(
      runEpisodes({
        policy: createMockPolicy(() => renderAnswer("2")),
        episodes: [{ task: tasks[1], seed: 0 }],
        tools: () => [],
        verify: () => true,
      }),
      /AGENTRL_FAULTS: unknown fault class "verifier-crash"; valid: seed, upstream-5xx/,
    );
  });
});
