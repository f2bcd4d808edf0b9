import assert from "node:assert/strict";
import { test } from "node:test";
import { createWordTokenizer } from "../policy/embedded/tokenizer.ts";
import { CORPUS_MIXES, corpusEpisodes, corpusTasks, embeddedVocabulary, encodeEpisode } from "./corpus.ts";

const tokenizer = createWordTokenizer(embeddedVocabulary());

test("the corpus never demonstrates a withheld template and uses train worlds only", () => {
  for (let index = 0; index < 20; index++) {
    for (const task of corpusTasks(CORPUS_MIXES.strong, 5, index, 64)) {
      assert.notEqual(task.template, "sum3", task.id);
      assert.equal(task.split, "train");
    }
  }
});

test("corpus batches are deterministic and mix right and wrong behaviour", async () => {
  const a = await corpusEpisodes(CORPUS_MIXES.strong, 3, 7, 200);
  const b = await corpusEpisodes(CORPUS_MIXES.strong, 3, 7, 200);
  assert.deepEqual(
    a.map((t) => t.turns.map((turn) => turn.text)),
    b.map((t) => t.turns.map((turn) => turn.text)),
  );
  const success = a.filter((t) => t.correct).length / a.length;
  assert.ok(success > 0.3 && success < 0.85, `strong corpus success ${success}`);
  const noTools = a.filter((t) => t.turns.every((turn) => turn.action.type !== "tool-call")).length;
  assert.ok(noTools > 10, "guessing without tools is part of the mix");
  const weak = await corpusEpisodes(CORPUS_MIXES.weak, 3, 7, 200);
  assert.ok(weak.filter((t) => t.correct).length < a.filter((t) => t.correct).length, "weak mix is weaker");
});

test("encoded episodes mask exactly the policy's tokens, with no unknown words", async () => {
  const episodes = await corpusEpisodes(CORPUS_MIXES.strong, 1, 0, 100);
  for (const episode of episodes) {
    const encoded = encodeEpisode(episode, tokenizer, 1024)!;
    assert.equal(encoded.ids.length, encoded.mask.length);
    assert.ok(!encoded.ids.includes(tokenizer.unkId), tokenizer.decode(encoded.ids));
    const policyIds = encoded.ids.filter((_, i) => encoded.mask[i] === 1);
    assert.deepEqual(
      policyIds,
      episode.turns.flatMap((turn) => tokenizer.encode(turn.text)),
    );
    assert.equal(tokenizer.decode(policyIds.slice(0, 1)).startsWith("<"), true, "a turn starts with a tag");
  }
  assert.equal(encodeEpisode(episodes[0], tokenizer, 3), null, "too long for the context: dropped");
});
