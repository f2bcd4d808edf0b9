import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { runEpisodes } from "../env/run-episodes.ts";
import { worldToolsFor } from "../env/task-set.ts";
import { scriptedPolicy } from "../policy/scripted/index.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { checkAnswer } from "../world/index.ts";
import { collectDataset, collectTrajectories } from "./collect.ts";
import { loadDataset } from "./dataset.ts";
import { formatFilter, parseFilter, rejectionReason } from "./filter.ts";
import { datasetStats } from "./stats.ts";
import { stitchDataset, stitchTrajectory } from "./stitch.ts";
import { datasetTasks, parseTemplateShares, templateOfTaskId } from "./tasks.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-data-"));
after(() => rmSync(root, { recursive: true, force: true }));
const tasks = datasetTasks({ count: 120, seed: 3 });

test("dataset tasks: train worlds only, unique ids, template shares honoured", () => {
  assert.equal(tasks.length, 120);
  assert.ok(tasks.every((task) => task.split === "train"));
  assert.equal(new Set(tasks.map((t) => t.id)).size, tasks.length);
  const boosted = datasetTasks({
    count: 40,
    seed: 3,
    templateShares: { sum3: 0.25 },
    excludeTemplates: ["sum3"],
  });
  assert.equal(
    boosted.filter((t) => t.template === "sum3").length,
    10,
    "25% of 40 from sum3, the rest excludes it",
  );
  assert.equal(templateOfTaskId(boosted[0].id), boosted[0].template);
  assert.deepEqual(parseTemplateShares("sum3=0.25, diff2:0.1"), { sum3: 0.25, diff2: 0.1 });
  assert.throws(() => parseTemplateShares("nope=0.1"), /unknown task template "nope"/);
  assert.throws(
    () => datasetTasks({ count: 10, seed: 1, templateShares: { sum3: 0.7, diff2: 0.6 } }),
    /sum to 1.3/,
  );
});

test("filters: parse, format, and the first failing criterion is the rejection reason", () => {
  assert.deepEqual(parseFilter("all"), []);
  const filter = parseFilter("correct,no-format-error,max-turns=3");
  assert.equal(formatFilter(filter), "correct,no-format-error,max-turns=3");
  assert.throws(() => parseFilter("correct,shiny"), /unknown criterion "shiny" \(valid: all, correct/);
  assert.throws(() => parseFilter("max-turns=0"), /unknown criterion "max-turns=0"/);
  const stitched = stitchTrajectory(tasks.find((t) => t.family === "bridge")!);
  assert.equal(
    rejectionReason(stitched, filter),
    "max-turns=3",
    "a 3-search bridge task has 4 turns, or passes",
  );
  assert.equal(rejectionReason({ ...stitched, correct: false }, filter), "correct");
  assert.equal(rejectionReason(stitched, parseFilter("with-tool-failure")), "with-tool-failure");
});

test("stitched trajectories: one clean turn per gold step, gold documents, always correct", () => {
  for (const task of tasks) {
    const trajectory = stitchTrajectory(task);
    assert.equal(trajectory.correct, true, task.id);
    assert.equal(trajectory.turns.length, task.gold!.length);
    trajectory.turns.forEach((turn, i) => {
      const step = task.gold![i];
      if (step.type === "search") {
        assert.deepEqual(turn.action, {
          type: "tool-call",
          tool: "search",
          arguments: { query: step.query },
        });
        assert.deepEqual(turn.toolResult?.refs, [step.entity]);
      }
      if (turn.toolResult) {
        assert.equal(turn.toolResult.status, "ok");
        assert.equal(turn.toolResult.injected, false);
      }
    });
  }
});

test("without noise the expert's real trajectories equal the stitched ones wherever search finds the gold document", async () => {
  const real = await runEpisodes({
    policy: scriptedPolicy("expert"),
    episodes: tasks.map((task, i) => ({ task, seed: i })),
    tools: worldToolsFor(),
    verify: checkAnswer,
  });
  let same = 0;
  real.forEach((trajectory, i) => {
    const task = tasks[i];
    const goldHits = trajectory.turns.every((turn, k) => {
      const step = task.gold![k];
      return step?.type !== "search" || turn.toolResult?.refs?.[0] === step.entity;
    });
    if (!goldHits) return;
    const stitched = stitchTrajectory(task);
    assert.deepEqual(
      trajectory.turns.map((turn) => [turn.text, turn.observation?.text ?? null]),
      stitched.turns.map((turn) => [turn.text, turn.observation?.text ?? null]),
      task.id,
    );
    assert.equal(trajectory.prompt.text, stitched.prompt.text);
    same++;
  });
  assert.ok(same >= 0.9 * tasks.length, `${same} of ${tasks.length} identical`);
});

test("collected (noisy) and stitched datasets differ in the documented ways", async () => {
  const real = await collectDataset({
    tasks: { count: 120, seed: 3 },
    seed: 5,
    noise: 0.3,
    filter: "correct",
    out: join(root, "real"),
  });
  assert.equal(real.kept + real.rejected, real.episodes);
  assert.equal(real.episodes, 120);
  assert.equal(
    Object.values(real.rejections).reduce((a, b) => a + b, 0),
    real.rejected,
  );
  const stitched = stitchDataset({ tasks: { count: 120, seed: 3 }, out: join(root, "stitched") });
  assert.equal(stitched.trajectories, 120);

  const realData = loadDataset(join(root, "real"));
  const stitchedData = loadDataset(join(root, "stitched"));
  assert.equal(realData.provenance.source, "collect");
  assert.equal(realData.provenance.noise, 0.3);
  assert.equal(realData.provenance.filter, "correct");
  assert.equal(realData.provenance.policy, "expert");
  assert.deepEqual((realData.summary as { kept: number }).kept, real.kept);
  assert.equal(stitchedData.provenance.source, "stitch");
  assert.deepEqual(
    realData.tools?.map((t) => t.name),
    ["search", "calc"],
  );
  assert.ok(
    realData.trajectories.every((t) => t.correct),
    "rejection sampling kept only correct ones",
  );

  const r = datasetStats(realData.trajectories);
  const s = datasetStats(stitchedData.trajectories);
  // Stitched: no failure, no retry, exactly the gold steps.
  assert.equal(s.tool_failure_rate, 0);
  assert.equal(s.retries.total, 0);
  assert.equal(s.trajectories_with_failure, 0);
  assert.equal(s.correct_rate, 1);
  // Real: failed calls, the expert's retries after them, hence longer trajectories.
  assert.ok(r.tool_failure_rate > 0.15, `real tool-failure rate ${r.tool_failure_rate}`);
  assert.ok(r.retries.total > 0 && r.retries.retry_after_failure_rate! > 0.9);
  assert.ok(r.turns.mean > s.turns.mean);
  assert.ok(r.diversity.distinct_action_sequences > s.diversity.distinct_action_sequences);
  assert.equal(s.sources.stitch, 120);
  assert.equal(r.sources.collect, real.kept);
});

test("rejection sampling: several samples per task, at most maxKeptPerTask kept, over-quota counted", async () => {
  const small = tasks.slice(0, 10);
  const kept: Trajectory[] = [];
  const counts = await collectTrajectories({
    policy: scriptedPolicy("mixed"),
    tasks: small,
    seed: 1,
    noise: 0.1,
    samplesPerTask: 4,
    maxKeptPerTask: 2,
    chunkTasks: 3,
    onKept: (list) => {
      kept.push(...list);
    },
  });
  assert.equal(counts.episodes, 40);
  assert.equal(counts.kept, kept.length);
  assert.ok(kept.every((t) => t.correct));
  const perTask = new Map<string, number>();
  for (const t of kept) perTask.set(t.taskId, (perTask.get(t.taskId) ?? 0) + 1);
  assert.ok([...perTask.values()].every((n) => n <= 2));
  assert.equal(counts.tasksWithKept, perTask.size);
  assert.equal(counts.kept + counts.rejected, 40);
});
