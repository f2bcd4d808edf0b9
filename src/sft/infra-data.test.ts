import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createDatasetDirectory } from "../data/dataset.ts";
import { runEpisodes } from "../env/run-episodes.ts";
import { rolloutTasks, worldToolsFor } from "../env/task-set.ts";
import { createWordTokenizer } from "../policy/embedded/tokenizer.ts";
import { scriptedPolicy } from "../policy/scripted/index.ts";
import { embeddedVocabulary } from "../pretrain/corpus.ts";
import { infraFailure } from "../types/failure.ts";
import { checkAnswer } from "../world/index.ts";
import { loadSftData } from "./data.ts";

test("SFT data never trains on an infra-failed episode, even without correctOnly, and counts it", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-sft-infra-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const tasks = rolloutTasks({ split: "train", count: 4, seed: 2 });
  const trajectories = await runEpisodes({
    policy: scriptedPolicy("expert"),
    episodes: tasks.map((task, i) => ({ task, seed: i })),
    tools: worldToolsFor(),
    verify: checkAnswer,
  });
  // An imported or older dataset may hold one (collect never keeps them): loading must still skip it.
  trajectories[1] = {
    ...trajectories[1],
    failure: infraFailure("verifier-timeout", "the verifier timed out"),
  };
  const out = join(root, "data");
  const { store, run } = createDatasetDirectory({ source: "collect", out, config: {} });
  store.addTrajectories(run.id, trajectories);
  store.finishRun(run.id, "completed");
  store.close();
  const data = loadSftData({
    data: [out],
    tokenizer: createWordTokenizer(embeddedVocabulary()),
    maxLen: 512,
    correctOnly: false,
    heldoutFraction: 0,
    seed: 1,
  });
  assert.equal(data.counts.trajectories, 4);
  assert.equal(data.counts.skippedInfra, 1);
  assert.deepEqual(
    data.train.map((episode) => episode.taskId),
    trajectories.filter((_, i) => i !== 1).map((trajectory) => trajectory.taskId),
  );
});
