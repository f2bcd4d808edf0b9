import assert from "node:assert/strict";
import { test } from "node:test";
import {
  canonicalText,
  PROTOCOL_TOKENS,
  renderAnswer,
  renderObservation,
  renderPrompt,
  renderToolCall,
} from "../../env/protocol.ts";
import { createWordTokenizer, WordTokenizer } from "./tokenizer.ts";

const WORDS = [
  "zenda",
  "city",
  "in",
  "ruritania",
  ".",
  ":",
  "population",
  "founded",
  "what",
  "is",
  "the",
  "of",
  "?",
  "-",
];

test("ids: specials, digits, protocol tags, then the words in order", () => {
  const tokenizer = createWordTokenizer(WORDS);
  assert.deepEqual(tokenizer.tokens.slice(0, 4), ["<pad>", "<bos>", "<eos>", "<unk>"]);
  assert.equal(tokenizer.idOf("0"), 4);
  assert.equal(tokenizer.idOf("9"), 13);
  assert.equal(tokenizer.idOf(PROTOCOL_TOKENS[0]), 14);
  assert.equal(tokenizer.idOf("zenda"), 14 + PROTOCOL_TOKENS.length);
  assert.equal(tokenizer.vocabSize, 14 + PROTOCOL_TOKENS.length + WORDS.length);
});

test("numbers are spelled digit by digit and join back on decode", () => {
  const tokenizer = createWordTokenizer(WORDS);
  const ids = tokenizer.encode("founded 1850 .");
  assert.deepEqual(ids.slice(1, 5), [4 + 1, 4 + 8, 4 + 5, 4 + 0]);
  assert.equal(ids.length, 6);
  assert.equal(tokenizer.decode(ids), "founded 1850 .");
});

test("canonical protocol text round-trips encode → decode", () => {
  const tokenizer = createWordTokenizer(WORDS);
  const text = canonicalText(
    renderPrompt("What is the population of Zenda?") +
      renderToolCall("search", "zenda") +
      renderObservation("zenda : city in ruritania . population 4213 . founded 1850 .") +
      renderToolCall("calc", "1850 - 1720") +
      renderAnswer("4213"),
  );
  const ids = tokenizer.encode(text);
  assert.ok(!ids.includes(tokenizer.unkId));
  assert.equal(tokenizer.decode(ids), text);
});

test("unknown words become <unk>; letters and digits in one word are split", () => {
  const tokenizer = createWordTokenizer(WORDS);
  assert.deepEqual(tokenizer.encode("zenda blorp"), [tokenizer.idOf("zenda"), tokenizer.unkId]);
  assert.deepEqual(tokenizer.encode("-42"), [tokenizer.idOf("-"), tokenizer.idOf("4"), tokenizer.idOf("2")]);
  assert.deepEqual(tokenizer.encode("x42"), [tokenizer.unkId, tokenizer.idOf("4"), tokenizer.idOf("2")]);
});

test("serialisation keeps every id; invalid lists are rejected", () => {
  const tokenizer = createWordTokenizer(WORDS);
  const copy = WordTokenizer.fromJSON(JSON.parse(JSON.stringify(tokenizer)));
  assert.deepEqual(copy.tokens, tokenizer.tokens);
  assert.throws(() => WordTokenizer.fromJSON({ type: "word-level", version: 1, tokens: ["<pad>"] }), /id 1/);
  assert.throws(() => createWordTokenizer(["12"]), /number/);
  assert.throws(() => createWordTokenizer(["two words"]), /whitespace/);
  // Duplicates in the caller's list are skipped, not doubled.
  assert.equal(createWordTokenizer(["zenda", "zenda", "<q>"]).vocabSize, 14 + PROTOCOL_TOKENS.length + 1);
});
