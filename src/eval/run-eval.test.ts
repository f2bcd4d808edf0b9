import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { createMockPolicy } from "../policy/mock.ts";
import { scriptedPolicy } from "../policy/scripted/index.ts";
import { openRunDirectory } from "../store/index.ts";
import { TASK_FAMILIES } from "../types/task.ts";
import type { WorldTaskSource } from "./eval-tasks.ts";
import { passAtK } from "./passk.ts";
import { evalEpisodeSeed, evaluate } from "./run-eval.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-eval-"));
after(() => rmSync(root, { recursive: true, force: true }));
const worldTasks = (count: number): WorldTaskSource => ({ type: "world", split: "test", count, seed: 3 });

test("the expert policy has pass@1 = 1 on every family; files are written", async () => {
  const result = await evaluate({
    policy: scriptedPolicy("expert"),
    policySpec: "expert",
    tasks: worldTasks(25),
    n: 2,
    runsRoot: root,
    runId: "expert",
    runState: { "recipe/run-name": "eval-expert@s1" },
    curves: { bootstrap: { resamples: 50 } },
  });
  assert.deepEqual(Object.keys(result.curves.families).sort(), [...TASK_FAMILIES].sort());
  for (const [family, curve] of Object.entries(result.curves.families)) {
    assert.equal(curve[0].k, 1);
    assert.equal(curve[0].passAtK, 1, family);
  }
  assert.equal(result.curves.overall[0].passAtK, 1);
  assert.equal(result.totals.samples, 50);
  assert.equal(result.metrics["eval/pass@1"], 1);
  assert.ok(Object.keys(result.curves.templates).length > 3, "per-template curves");
  const json = JSON.parse(readFileSync(join(root, "expert", "passk.json"), "utf8"));
  assert.deepEqual(json.counts, result.counts);
  assert.deepEqual(json.curves, result.curves);
  assert.match(readFileSync(result.files!.svg, "utf8"), /^<svg[\s\S]*arithmetic[\s\S]*<\/svg>$/);
  assert.match(readFileSync(result.files!.html, "utf8"), /<h1>pass@k: expert<\/h1>/);
  const store = openRunDirectory(result.directory!);
  try {
    assert.equal(store.requireRun("expert").status, "completed");
    assert.equal(store.metrics("expert", "eval/pass@2")[0].value, 1);
    assert.equal(
      store.getState("expert", "recipe/run-name"),
      "eval-expert@s1",
      "the given run state is recorded",
    );
  } finally {
    store.close();
  }
});

test("a vague policy's curve rises with k, and every count follows the stored trajectories", async () => {
  const result = await evaluate({
    policy: scriptedPolicy("vague"),
    tasks: worldTasks(20),
    n: 8,
    persist: false,
    curves: { bootstrap: false },
  });
  assert.equal(result.directory, null);
  assert.equal(result.files, null);
  const values = result.curves.overall.map((point) => point.passAtK);
  assert.deepEqual(result.curves.ks, [1, 2, 4, 8]);
  for (let i = 1; i < values.length; i++) assert.ok(values[i] > values[i - 1], `pass@k rises: ${values}`);
  assert.ok(values[0] > 0 && values[0] < 0.6, `vague pass@1 ${values[0]}`);
  // The curve is the mean of the per-task estimator over the counts.
  const expected =
    result.counts.reduce((sum, count) => sum + passAtK(count.n, count.c, 4), 0) / result.counts.length;
  assert.ok(Math.abs(result.curves.overall[2].passAtK - expected) < 1e-12);
  assert.ok(result.counts.every((count) => count.n === 8));
});

test("resume: an interrupted eval completes every key exactly once, with the counts of an uninterrupted run", async () => {
  const options = {
    policy: scriptedPolicy("mixed"),
    policySpec: "mixed",
    tasks: worldTasks(12),
    n: 6,
    seed: 5,
    runsRoot: root,
    batchSize: 8,
    curves: { bootstrap: false as const },
  };
  const full = await evaluate({ ...options, runId: "uninterrupted" });

  const abort = new AbortController();
  let seen = 0;
  await assert.rejects(
    evaluate({
      ...options,
      runId: "interrupted",
      signal: abort.signal,
      onProgress: (progress) => {
        seen = progress.done;
        if (progress.done >= 30) abort.abort();
      },
    }),
    /aborted/,
  );
  const directory = join(root, "interrupted");
  let store = openRunDirectory(directory);
  const storedBefore = store.countTrajectories("interrupted");
  assert.equal(store.requireRun("interrupted").status, "interrupted");
  store.close();
  assert.ok(
    storedBefore >= 30 && storedBefore < 72,
    `stored ${storedBefore} of 72 before the stop (seen ${seen})`,
  );

  const resumed = await evaluate({ ...options, resume: directory });
  assert.deepEqual(resumed.episodes, { resumed: storedBefore, sampled: 72 - storedBefore });
  assert.deepEqual(resumed.counts, full.counts);
  assert.deepEqual(resumed.curves, full.curves);

  store = openRunDirectory(directory);
  try {
    const keys = [...store.iterateTrajectories("interrupted")].map((stored) => stored.key);
    assert.equal(keys.length, 72);
    assert.equal(new Set(keys).size, 72);
    assert.equal(store.requireRun("interrupted").status, "completed");
    // Same seed per (task, sample), so the very same episodes as the uninterrupted run.
    const key = keys[40];
    const [taskId, sample] = key.split("#");
    const trajectory = store.trajectories("interrupted", { taskId }).find((t) => t.id === key)!;
    assert.equal(trajectory.seed, evalEpisodeSeed(5, taskId, Number(sample)));
  } finally {
    store.close();
  }

  // Rerunning with the same run id resumes too: nothing left to sample.
  const again = await evaluate({ ...options, runId: "interrupted" });
  assert.deepEqual(again.episodes, { resumed: 72, sampled: 0 });
  assert.deepEqual(again.counts, full.counts);

  await assert.rejects(evaluate({ ...options, n: 7, resume: directory }), /config differs \(n: 6 → 7\)/);
});

test("policy errors stay in the denominator as failures and are counted apart", async () => {
  // Sample 0 of every task fails at the endpoint; the others answer correctly.
  const flaky = createMockPolicy((context) =>
    context.episodeId.endsWith("#0")
      ? { text: "", finishReason: "error", error: "HTTP 503 after 3 retries" }
      : `<answer> ${context.task.answer} </answer>`,
  );
  const result = await evaluate({
    policy: flaky,
    tasks: worldTasks(10),
    n: 4,
    persist: false,
    curves: { bootstrap: false },
  });
  assert.ok(result.counts.every((count) => count.n === 4 && count.c === 3 && count.policyErrors === 1));
  assert.equal(result.totals.policyErrors, 10);
  assert.equal(result.endReasons["policy-error"], 10);
  assert.equal(result.curves.overall[0].passAtK, 0.75);
  assert.equal(result.metrics["eval/policy_errors"], 10);

  // A policy that throws: every sample is a failure, none is dropped.
  const broken = createMockPolicy(() => new Error("connection refused"));
  const failed = await evaluate({
    policy: broken,
    tasks: worldTasks(5),
    n: 2,
    persist: false,
    curves: { bootstrap: false },
  });
  assert.deepEqual(
    failed.counts.map((count) => [count.n, count.c, count.policyErrors]),
    Array(5).fill([2, 0, 2]),
  );
  assert.deepEqual(
    failed.curves.overall.map((point) => point.passAtK),
    [0, 0],
  );
});

test("evaluate rejects bad input before creating a run", async () => {
  await assert.rejects(
    evaluate({ policy: scriptedPolicy("expert"), tasks: worldTasks(2), n: 0, runsRoot: root, runId: "bad" }),
    /n must be a positive integer/,
  );
  await assert.rejects(
    evaluate({
      policy: scriptedPolicy("expert"),
      tasks: { type: "given", tasks: [] },
      n: 1,
      runsRoot: root,
      runId: "bad",
    }),
    /task set is empty/,
  );
  assert.equal(existsSync(join(root, "bad")), false);
});
