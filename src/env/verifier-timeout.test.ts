/**
 * The episode loop's own verifier timeout (`budgets.verifierTimeoutMs`): a verifier that never
 * answers ends its episode as `infra` (`verifier-timeout`), never as the policy's wrong answer, and
 * the other episodes of the batch finish as if it were not there. Each way a verifier runs: a
 * promise that never settles, synchronous code on this thread that overruns (its verdict is
 * discarded), and the code verifier's Python sandbox (its process is killed at the deadline).
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { createMockPolicy } from "../policy/mock.ts";
import { readTaskFile } from "../tasks/index.ts";
import { PythonSandboxPool } from "../tools/python-sandbox.ts";
import type { Task } from "../types/task.ts";
import { createCodeVerifier } from "../verify/code.ts";
import { renderAnswer } from "./protocol.ts";
import { DEFAULT_BUDGETS, runEpisodes } from "./run-episodes.ts";

const tasks: Task[] = Array.from({ length: 4 }, (_, i) => ({
  id: `t${i}`,
  question: `what is ${i} + 1 ?`,
  answer: String(i + 1),
  family: "lookup",
}));

const answerRight = createMockPolicy((context) => {
  const task = tasks.find((t) => context.prompt.text.includes(t.question))!;
  return renderAnswer(task.answer);
});

test("a verifier that never answers: its episode is infra verifier-timeout, the others are scored", {
  timeout: 10_000,
}, async () => {
  const started = performance.now();
  const trajectories = await runEpisodes({
    policy: answerRight,
    episodes: tasks.map((task, seed) => ({ task, seed })),
    tools: () => [],
    // t2's verdict never comes (a hung verifier process, a lost reply).
    verify: (task, answer) => (task.id === "t2" ? new Promise<boolean>(() => {}) : answer === task.answer),
    budgets: { verifierTimeoutMs: 300 },
  });
  const seconds = (performance.now() - started) / 1000;
  const hung = trajectories.find((t) => t.taskId === "t2")!;
  assert.equal(hung.failure?.class, "infra");
  assert.equal(hung.failure?.code, "verifier-timeout");
  assert.match(hung.failure?.message ?? "", /300 ms/);
  assert.equal(hung.outcomeReward, null, "never scored as a wrong answer");
  assert.equal(hung.finalAnswer, "3", "the answer stays");
  for (const t of trajectories.filter((t) => t.taskId !== "t2")) {
    assert.equal(t.correct, true);
    assert.equal(t.outcomeReward, 1);
    assert.equal(t.failure, undefined);
  }
  assert.ok(seconds < 5, `the loop went on after the timeout (${seconds.toFixed(1)} s)`);
});

test("the default verifier timeout is finite and above the code verifier's per-test limit", () => {
  assert.ok(Number.isFinite(DEFAULT_BUDGETS.verifierTimeoutMs));
  assert.ok(DEFAULT_BUDGETS.verifierTimeoutMs >= 60_000);
});

test("a synchronous verifier that overruns the deadline on this thread: its verdict is discarded", async () => {
  const [trajectory] = await runEpisodes({
    policy: answerRight,
    episodes: [{ task: tasks[0], seed: 0 }],
    tools: () => [],
    verify: (task, answer) => {
      const until = performance.now() + 150;
      while (performance.now() < until) {} // busy: no timer can fire meanwhile
      return answer === task.answer;
    },
    budgets: { verifierTimeoutMs: 50 },
  });
  assert.equal(trajectory.failure?.code, "verifier-timeout");
  assert.equal(trajectory.outcomeReward, null);
});

test("the code verifier's sandbox is killed at the deadline, and its slot serves the next answer", {
  timeout: 120_000,
}, async () => {
  const pool = new PythonSandboxPool({ poolSize: 1, maxRunning: 1, memoryBytes: 128 * 1024 * 1024 });
  after(() => pool.close());
  const verifier = createCodeVerifier({ pool, testTimeoutMs: 60_000, concurrency: 1 });
  const [sumPairs] = (await readTaskFile("examples/tasks/code-sample.jsonl")).filter(
    (t) => t.id === "lcb/sum-pairs",
  );
  const fenced = (program: string) => `\`\`\`python\n${program}\n\`\`\``;
  // The sandbox's first start is not what is measured: warm it with a right answer.
  assert.equal(await verifier(sumPairs, fenced("a, b = map(int, input().split())\nprint(a + b)")), true);
  const started = performance.now();
  const [hung] = await runEpisodes({
    policy: createMockPolicy(() => renderAnswer(fenced("while True:\n    pass"))),
    episodes: [{ task: sumPairs, seed: 0 }],
    tools: () => [],
    verify: verifier,
    budgets: { verifierTimeoutMs: 1000 },
  });
  assert.equal(hung.failure?.class, "infra");
  assert.equal(hung.failure?.code, "verifier-timeout");
  // The one sandbox slot is free again well before the 60 s test timeout would have freed it.
  assert.equal(await verifier(sumPairs, fenced("a, b = map(int, input().split())\nprint(a + b)")), true);
  const seconds = (performance.now() - started) / 1000;
  assert.ok(seconds < 30, `the looping program was killed at the deadline (${seconds.toFixed(1)} s)`);
});
