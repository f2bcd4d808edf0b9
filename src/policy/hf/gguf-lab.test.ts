/**
 * A lab model (models/base-strong) exported as GGUF and run by real llama.cpp: its `gpt2` gives
 * the lab's own forward's logits within ggml's float16 GELU table (see gguf-export.test.ts: the
 * lab's GPT is GPT-2), the lab's greedy turn on a question, and the lab tokenizer's ids on protocol
 * text; the differences llama.cpp's tokenizer cannot avoid (a word outside the vocabulary) are
 * pinned as documented.
 */
import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { Token } from "node-llama-cpp";
import { np } from "../../engine/jax.ts";
import { refTree, treeToHost } from "../../engine/tree.ts";
import { runEpisodes } from "../../env/run-episodes.ts";
import { rolloutTasks, worldToolsFor } from "../../env/task-set.ts";
import { checkAnswer } from "../../world/index.ts";
import { loadModelCheckpoint } from "../embedded/checkpoint.ts";
import { EmbeddedPolicy } from "../embedded/embedded-policy.ts";
import { gptLogits, withoutValueHead } from "../embedded/model.ts";
import { AGENTRL_TEXT_TEMPLATE } from "./agentrl-text.ts";
import { parseHfConfig } from "./config.ts";
import { exportGguf } from "./gguf-export.ts";
import { TOKEN_TYPE } from "./gguf-tokenizer.ts";
import { wordMerges } from "./gguf-word-level.ts";
import { gpt2Config, gpt2Tensors } from "./gpt2-export.ts";
import { maxAbsDiff } from "./testing-fixtures.ts";
import { llamaGreedy, llamaLogits, llamaTextPolicy, loadGguf } from "./testing-gguf.ts";
import { ggmlGelu, gpt2ReferenceLogits } from "./testing-gpt2-reference.ts";
import { readTestdata } from "./testing-hf.ts";
import { selectHfParams } from "./weights.ts";

const MODEL = new URL("../../../models/base-strong", import.meta.url).pathname;
const dir = await mkdtemp(join(tmpdir(), "agentrl-gguf-lab-"));
const checkpoint = await loadModelCheckpoint(MODEL);
const { tokenizer, config } = checkpoint;
const V = config.vocabSize;
/** Protocol text the lab tokenizes (export-base-strong.json's first two cases, all vocabulary words). */
const { cases } = await readTestdata<{ cases: { text: string; ids: number[] }[] }>("export-base-strong.json");

function labLogits(ids: readonly number[]): Float32Array {
  const input = np.array(Int32Array.from(ids), { shape: [1, ids.length], dtype: np.int32 });
  return gptLogits(refTree(checkpoint.params), input, config).dataSync() as Float32Array;
}

const argmax = (row: ArrayLike<number>) => {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
  return best;
};
const argmaxes = (logits: Float32Array) =>
  Array.from({ length: logits.length / V }, (_, t) => argmax(logits.subarray(t * V, (t + 1) * V)));

test("merges join every two substrings of a vocabulary word into a longer one, each once", () => {
  // "ab": a+b; "abc": a+b (again), a+bc, ab+c, b+c.
  assert.deepEqual(wordMerges(["ab", "abc"]), ["a b", "a bc", "ab c", "b c"]);
  assert.deepEqual(wordMerges(["x", "7"]), []);
});

test("base-strong f32: llama.cpp's gpt2 gives the lab's logits within ggml's GELU table, and its greedy turn", async (t) => {
  const out = join(dir, "base-strong.gguf");
  const summary = await exportGguf(MODEL, out, { type: "f32" });
  assert.deepEqual(
    [summary.source, summary.architecture, summary.tokenizer],
    ["lab", "gpt2", "gpt2/whitespace"],
  );
  const model = await loadGguf(out);
  try {
    const ids = [...cases[0]!.ids, ...cases[1]!.ids];
    const lab = labLogits(ids);
    const theirs = await llamaLogits(model, ids, V);
    const diff = maxAbsDiff(lab, theirs);
    const hfConfig = parseHfConfig(gpt2Config(config, tokenizer));
    const host = await treeToHost(withoutValueHead(checkpoint.params));
    const params = selectHfParams(hfConfig, gpt2Tensors(host, config), MODEL);
    const withTable = maxAbsDiff(theirs, gpt2ReferenceLogits(hfConfig, params, ids, ggmlGelu));
    assert.ok(diff <= 1e-2, `max |Δlogit| ${diff}`);
    assert.ok(
      withTable <= 1e-3 && withTable < diff / 3,
      `${withTable} from the forward with ggml's GELU table`,
    );
    assert.deepEqual(argmaxes(theirs), argmaxes(lab));
    // The lab's greedy turn after a question, as its policy samples at temperature 0.
    const prompt = tokenizer.encode("<q> what is the population of notinia ? </q>");
    const turn: number[] = [];
    while (turn.length < 12) turn.push(argmax(labLogits([...prompt, ...turn]).subarray(-V)));
    assert.deepEqual(await llamaGreedy(model, prompt, turn.length), turn);
    t.diagnostic(
      `max |Δlogit| ${diff.toExponential(2)} (${withTable.toExponential(2)} from the GELU-table forward); greedy turn: ${tokenizer.decode(turn)}`,
    );
  } finally {
    await model.dispose();
  }
});

test("base-strong: llama.cpp tokenizes protocol text as the lab does; an out-of-vocabulary word is the difference", async () => {
  const out = join(dir, "base-strong-tokenizer.gguf");
  await exportGguf(MODEL, out, { type: "f16" });
  const model = await loadGguf(out, { vocabOnly: true });
  try {
    for (const { text, ids } of cases.slice(0, 2)) {
      assert.deepEqual(tokenizer.encode(text), ids);
      assert.deepEqual([...model.tokenize(text, true)], ids, text);
      assert.deepEqual([...model.tokenize(text, false)], ids, text);
    }
    // Every vocabulary word alone is its one id, specials matched as text or not.
    tokenizer.tokens.forEach((token, id) => {
      assert.deepEqual([...model.tokenize(token, true)], [id], token);
      assert.deepEqual([...model.tokenize(token, false)], [id], token);
    });
    // Outside the vocabulary the lab gives <unk>; llama.cpp the pieces the merges reach that are
    // tokens: for these words none, so they vanish. Digits split alike.
    for (const { text, ids } of [
      cases[2]!,
      { text: "notinia its born1850 ?", ids: tokenizer.encode("notinia its born1850 ?") },
    ]) {
      assert.ok(ids.includes(tokenizer.unkId), text);
      assert.deepEqual(
        [...model.tokenize(text, true)],
        ids.filter((id) => id !== tokenizer.unkId),
        text,
      );
    }
    const metadata = model.fileInfo.metadata.tokenizer as unknown as Record<string, unknown>;
    assert.equal(metadata.chat_template, AGENTRL_TEXT_TEMPLATE);
    const ggml = metadata.ggml as Record<string, unknown>;
    assert.deepEqual(
      [ggml.bos_token_id, ggml.eos_token_id, ggml.unknown_token_id, ggml.padding_token_id],
      [tokenizer.bosId, tokenizer.eosId, tokenizer.unkId, tokenizer.padId],
    );
    assert.deepEqual((ggml.token_type as number[]).slice(0, 6), [
      TOKEN_TYPE.control,
      TOKEN_TYPE.control,
      TOKEN_TYPE.control,
      TOKEN_TYPE.control,
      TOKEN_TYPE.normal,
      TOKEN_TYPE.normal,
    ]);
    // Detokenized text has no spaces: llama.cpp's BPE keeps spaces in tokens, and these have none.
    assert.equal(
      model.detokenize(cases[0]!.ids as Token[]),
      "<q>whatisthecapitalofvushiland?</q><search>capitalvushiland</search>",
    );
  } finally {
    await model.dispose();
  }
});

test("base-strong f16 and q8_0: llama.cpp keeps the lab's argmax within the bounds of gguf-export.test.ts", async (t) => {
  const ids = [...cases[0]!.ids, ...cases[1]!.ids];
  const lab = labLogits(ids);
  const scale = Math.max(...lab.map(Math.abs));
  for (const [type, bound] of [
    ["f16", 1e-2],
    ["q8_0", 0.15],
  ] as const) {
    const out = join(dir, `base-strong-${type}.gguf`);
    await exportGguf(MODEL, out, { type });
    const model = await loadGguf(out);
    const theirs = await llamaLogits(model, ids, V);
    await model.dispose();
    const diff = maxAbsDiff(lab, theirs);
    assert.ok(diff <= bound * scale, `${type}: max |Δlogit| ${diff} (largest ${scale})`);
    assert.deepEqual(argmaxes(theirs), argmaxes(lab), type);
    t.diagnostic(
      `${type}: max |Δlogit| ${diff.toExponential(2)} = ${(diff / scale).toExponential(2)} of the largest`,
    );
  }
});

for (const family of ["chain", "arithmetic"] as const)
  test(`${family}, temperature 0: the exported base on llama.cpp plays the lab policy's episodes`, async (t) => {
    const out = join(dir, `base-strong-${family}.gguf`);
    await exportGguf(MODEL, out, { type: "f32" });
    const model = await loadGguf(out);
    const tasks = rolloutTasks({ split: "test", count: 6, seed: 3, family });
    const episodes = tasks.map((task, i) => ({ task, seed: 100 + i }));
    const tools = worldToolsFor();
    const embedded = new EmbeddedPolicy(checkpoint, { temperature: 0, capacity: 8 });
    try {
      const want = await runEpisodes({ policy: embedded, episodes, tools, verify: checkAnswer });
      const got = await runEpisodes({
        policy: llamaTextPolicy(model, tokenizer),
        episodes,
        tools,
        verify: checkAnswer,
      });
      let turns = 0;
      want.forEach((expected, i) => {
        const actual = got[i]!;
        assert.deepEqual(
          actual.turns.map((turn) => turn.tokenIds),
          expected.turns.map((turn) => turn.tokenIds),
          `${expected.id}: sampled ids`,
        );
        assert.deepEqual(
          actual.turns.map((turn) => turn.action),
          expected.turns.map((turn) => turn.action),
        );
        assert.equal(actual.finalAnswer, expected.finalAnswer);
        assert.equal(actual.correct, expected.correct);
        turns += actual.turns.length;
      });
      const correct = got.filter((trajectory) => trajectory.correct).length;
      t.diagnostic(`${family}: ${episodes.length} episodes, ${turns} turns, ${correct} correct, alike`);
    } finally {
      await embedded.close();
      await model.dispose();
    }
  });
