/**
 * A synchronous verifier stuck in a loop is cut at the episode loop's deadline when it runs on a
 * worker thread (worker-verifier.ts): its episode is `infra` `verifier-timeout`, the others of the
 * batch are judged on the other worker, and the verifier keeps working after the stuck thread is
 * terminated. A `ClassifiedError` crosses the thread with its failure.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { renderAnswer } from "../env/protocol.ts";
import { runEpisodes } from "../env/run-episodes.ts";
import { createMockPolicy } from "../policy/mock.ts";
import type { Task } from "../types/task.ts";
import { createWorkerVerifier } from "./worker-verifier.ts";

const HELPERS = new URL("./testing-verifiers.ts", import.meta.url);
const spin = createWorkerVerifier(HELPERS, "spinOnLoop");
const throwing = createWorkerVerifier(HELPERS, "throwsClassified");
after(() => Promise.all([spin.close(), throwing.close()]));

const tasks: Task[] = Array.from({ length: 4 }, (_, i) => ({
  id: `t${i}`,
  question: `what is ${i} + 1 ?`,
  answer: String(i + 1),
  family: "lookup",
}));

test("a verifier busy forever on its thread: cut at the deadline, the batch judged, the verifier usable after", {
  timeout: 30_000,
}, async () => {
  // Started before the clock: the workers' start is not what is measured.
  assert.equal(await spin(tasks[0], "1"), true);
  const started = performance.now();
  const trajectories = await runEpisodes({
    policy: createMockPolicy((context) => {
      const task = tasks.find((t) => context.prompt.text.includes(t.question))!;
      return renderAnswer(task.id === "t1" ? "loop" : task.answer);
    }),
    episodes: tasks.map((task, seed) => ({ task, seed })),
    tools: () => [],
    verify: spin,
    budgets: { verifierTimeoutMs: 1500 },
  });
  const seconds = (performance.now() - started) / 1000;
  const stuck = trajectories.find((t) => t.taskId === "t1")!;
  assert.deepEqual(
    [stuck.failure?.class, stuck.failure?.code, stuck.outcomeReward],
    ["infra", "verifier-timeout", null],
  );
  for (const t of trajectories.filter((t) => t.taskId !== "t1")) assert.equal(t.correct, true, t.taskId);
  assert.ok(seconds < 10, `the loop went on after the deadline (${seconds.toFixed(1)} s)`);
  // The stuck thread was terminated, not left spinning: the verifier judges again.
  assert.equal(await spin(tasks[2], "3"), true);
  assert.equal(await spin(tasks[2], "4"), false);
});

test("a verifier's classified failure crosses the thread", async () => {
  await assert.rejects(
    throwing(tasks[0], "1"),
    (error: { failure?: { class: string; code: string } }) =>
      error.failure?.class === "infra" && error.failure.code === "math-checker-error",
  );
});
