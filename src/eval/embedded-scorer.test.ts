import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { keyFromSeed } from "../engine/init.ts";
import { disposeTree } from "../engine/tree.ts";
import { initGpt, loadEmbeddedPolicy, saveModelCheckpoint } from "../policy/embedded/index.ts";
import { createWordTokenizer } from "../policy/embedded/tokenizer.ts";
import { scriptedPolicy } from "../policy/scripted/index.ts";
import { embeddedVocabulary } from "../pretrain/corpus.ts";
import { openRunDirectory } from "../store/index.ts";
import { isCheckpointDirectory, loadEmbeddedScorer, scorerForPolicySpec } from "./embedded-scorer.ts";
import { loadEvalRun } from "./eval-run-data.ts";
import { perplexityUnder } from "./perplexity.ts";
import { evaluate } from "./run-eval.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-scorer-"));
after(() => rmSync(root, { recursive: true, force: true }));
const checkpoint = join(root, "tiny");
const tokenizer = createWordTokenizer(embeddedVocabulary());
const config = { vocabSize: tokenizer.vocabSize, dModel: 16, nLayers: 1, nHeads: 2, dFF: 32, maxLen: 192 };

test("embedded scorer: stored ids reproduce the sampling log-probs; text-only trajectories are re-encoded", async () => {
  const params = initGpt(config, keyFromSeed(3));
  await saveModelCheckpoint(checkpoint, { config, tokenizer, params });
  disposeTree(params);
  assert.equal(isCheckpointDirectory(checkpoint), true);
  assert.equal(await scorerForPolicySpec("expert"), null);

  // An eval of the (untrained) model at temperature 1, top-p 1: sampling log-probs are the model's own.
  const policy = await loadEmbeddedPolicy(checkpoint, { temperature: 1, topP: 1 });
  const tasks = {
    type: "world" as const,
    split: "test" as const,
    count: 3,
    seed: 1,
    family: "lookup" as const,
  };
  try {
    await evaluate({
      policy,
      policySpec: checkpoint,
      tasks,
      n: 2,
      runsRoot: root,
      runId: "tiny-eval",
      batchSize: 6,
    });
  } finally {
    await policy.close?.();
  }
  const run = loadEvalRun(join(root, "tiny-eval"));
  assert.equal(run.tokenizer?.vocabSize, tokenizer.vocabSize);
  const store = openRunDirectory(run.directory, { readOnly: true });
  const trajectories = store.trajectories(run.runId);
  store.close();
  assert.equal(trajectories.length, 6);

  const scorer = (await scorerForPolicySpec(checkpoint))!;
  try {
    const result = await perplexityUnder(trajectories, scorer, { storedTokenizer: run.tokenizer });
    assert.deepEqual(result.tokenSource, { stored: result.scored, reEncoded: 0 });
    assert.equal(result.scored + result.skippedTooLong + result.skippedEmpty, 6);
    assert.ok(result.scored > 0);
    // exp(−mean sampling log-prob) over the same policy tokens, from what the policy recorded.
    let sum = 0;
    let count = 0;
    for (const trajectory of trajectories) {
      for (const turn of trajectory.turns) {
        for (const logprob of turn.logprobs ?? []) {
          sum += logprob;
          count++;
        }
      }
    }
    assert.equal(result.tokens, count);
    const expected = Math.exp(-sum / count);
    assert.ok(Math.abs(result.pooled! / expected - 1) < 1e-3, `scored ${result.pooled}, sampled ${expected}`);

    // The expert writes text only: its trajectories are re-encoded with the checkpoint's tokenizer.
    const expertRun = await evaluate({
      policy: scriptedPolicy("expert"),
      tasks,
      n: 1,
      runsRoot: root,
      runId: "expert-eval",
    });
    const expertStore = openRunDirectory(expertRun.directory!, { readOnly: true });
    const expertTrajectories = expertStore.trajectories(expertRun.runId);
    expertStore.close();
    const reEncoded = await perplexityUnder(expertTrajectories, scorer, { storedTokenizer: null });
    assert.deepEqual(reEncoded.tokenSource, { stored: 0, reEncoded: 3 });
    // An untrained model is close to uniform over the vocabulary.
    assert.ok(
      reEncoded.pooled! > tokenizer.vocabSize / 3 && reEncoded.pooled! < tokenizer.vocabSize * 3,
      `untrained perplexity ${reEncoded.pooled} vs vocabulary ${tokenizer.vocabSize}`,
    );
  } finally {
    await scorer.close?.();
  }
  const again = await loadEmbeddedScorer(checkpoint);
  assert.equal(again.maxLength, 192);
  await again.close?.();
});
