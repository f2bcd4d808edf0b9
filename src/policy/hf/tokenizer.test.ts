import assert from "node:assert/strict";
import { copyFile, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { type PackagedTokenizer, packagedTokenizerFolder, readTestdata } from "./testing-hf.ts";
import { hfTokenizerFromJson, loadHfTokenizer } from "./tokenizer.ts";

interface TokenizerFixture {
  vocab_size: number;
  ids: number[][];
  ids_with_special_tokens: number[][];
  decoded: string[];
  decoded_skip_special: string[];
}

const corpus = await readTestdata<string[]>("text-corpus.json");
const fixtures = await readTestdata<{ tokenizers: Record<PackagedTokenizer, TokenizerFixture> }>(
  "tokenizer-ids.json",
);

for (const name of ["qwen3", "llama3"] as const) {
  test(`${name}: ids and decoded text equal the Python tokenizers library on the corpus`, async () => {
    const tokenizer = await loadHfTokenizer(packagedTokenizerFolder(name));
    const expected = fixtures.tokenizers[name];
    assert.equal(tokenizer.vocabSize, expected.vocab_size);
    corpus.forEach((text, i) => {
      const ids = tokenizer.encode(text);
      assert.deepEqual(ids, expected.ids[i], `encode ${JSON.stringify(text)}`);
      assert.deepEqual(
        tokenizer.encode(text, { addSpecialTokens: true }),
        expected.ids_with_special_tokens[i],
      );
      assert.equal(tokenizer.decode(ids), expected.decoded[i], `decode ${JSON.stringify(text)}`);
      assert.equal(tokenizer.decode(ids, { skipSpecialTokens: true }), expected.decoded_skip_special[i]);
    });
  });
}

test("special tokens: Qwen3's eos is <|im_end|>, Llama 3.1 adds <|begin_of_text|> only when asked", async () => {
  const qwen = await loadHfTokenizer(packagedTokenizerFolder("qwen3"));
  assert.deepEqual(qwen.eosTokenIds, [qwen.tokenId("<|im_end|>")]);
  assert.equal(qwen.bosToken, undefined);
  assert.deepEqual(qwen.encode("<|im_start|>"), [qwen.tokenId("<|im_start|>")]);
  const llama = await loadHfTokenizer(packagedTokenizerFolder("llama3"));
  const bos = llama.tokenId("<|begin_of_text|>")!;
  assert.equal(llama.bosToken, "<|begin_of_text|>");
  assert.deepEqual(llama.eosTokenIds, [llama.tokenId("<|eot_id|>")]);
  assert.notEqual(llama.encode("hi")[0], bos);
  assert.equal(llama.encode("hi", { addSpecialTokens: true })[0], bos);
});

test("generation_config.json's eos_token_id list joins the tokenizer's eos, without repeats", async () => {
  const folder = await mkdtemp(join(tmpdir(), "agentrl-hf-tok-"));
  const source = packagedTokenizerFolder("qwen3");
  await copyFile(join(source, "tokenizer.json"), join(folder, "tokenizer.json"));
  await copyFile(join(source, "tokenizer_config.json"), join(folder, "tokenizer_config.json"));
  await writeFile(join(folder, "generation_config.json"), JSON.stringify({ eos_token_id: [151645, 151643] }));
  const tokenizer = await loadHfTokenizer(folder);
  assert.deepEqual(tokenizer.eosTokenIds, [151645, 151643]);
  assert.equal(tokenizer.tokenText(151643), "<|endoftext|>");
});

test("a folder without tokenizer.json is refused by path; a file without `model` by field", async () => {
  const folder = await mkdtemp(join(tmpdir(), "agentrl-hf-tok-"));
  await assert.rejects(loadHfTokenizer(folder), /cannot read .*tokenizer\.json/);
  assert.throws(() => hfTokenizerFromJson({ version: "1.0" }, {}), /`model` field/);
});
