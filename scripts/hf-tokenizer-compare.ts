/**
 * The measurement behind docs/real-checkpoints.md's choice of a tokenizer library: each candidate
 * on the committed corpus with the real Qwen3 and Llama 3.1 tokenizer.json files (the
 * @lenml/tokenizer-* dev dependencies), against the Python `tokenizers` ids of
 * src/policy/hf/testdata/tokenizer-ids.json, and its encoding speed.
 *
 * The candidates other than @huggingface/tokenizers are not dependencies: install them aside and
 * name that folder (its node_modules/ holds them):
 *
 *   mkdir /tmp/candidates && cd /tmp/candidates && npm init -y && \
 *     npm install --ignore-scripts @huggingface/transformers@4.3.2 @lenml/tokenizers@3.7.2
 *   node scripts/hf-tokenizer-compare.ts /tmp/candidates > docs/results/hf-tokenizer-compare.json
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus } from "node:os";
import { join } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import { packagedTokenizerFolder, TESTDATA } from "../src/policy/hf/testing-hf.ts";

type Encoder = (text: string) => number[];
interface Candidate {
  name: string;
  load: (folder: string, json: object, config: object) => Promise<Encoder>;
}

const aside = process.argv[2];
if (aside === undefined)
  throw new Error("usage: node scripts/hf-tokenizer-compare.ts <folder with the candidates' node_modules>");
// The candidates' CommonJS builds, required from the folder they were installed in.
const fromAside = async (name: string) => createRequire(join(aside, "package.json"))(name);

const candidates: Candidate[] = [
  {
    name: "@huggingface/tokenizers",
    load: async (_, json, config) => {
      const tokenizer = new Tokenizer(json, config);
      return (text) => tokenizer.encode(text, { add_special_tokens: false }).ids;
    },
  },
  {
    name: "@huggingface/transformers",
    load: async (folder) => {
      const transformers = await fromAside("@huggingface/transformers");
      transformers.env.allowRemoteModels = false;
      transformers.env.localModelPath = join(folder, "..");
      const tokenizer = await transformers.AutoTokenizer.from_pretrained(folder.split("/").at(-1));
      return (text) => tokenizer.encode(text, { add_special_tokens: false });
    },
  },
  {
    name: "@lenml/tokenizers",
    load: async (_, json, config) => {
      const { TokenizerLoader } = await fromAside("@lenml/tokenizers");
      const tokenizer = TokenizerLoader.fromPreTrained({ tokenizerJSON: json, tokenizerConfig: config });
      return (text) => tokenizer.encode(text, { add_special_tokens: false });
    },
  },
];

const corpus: string[] = JSON.parse(readFileSync(join(TESTDATA, "text-corpus.json"), "utf8"));
const expected = JSON.parse(readFileSync(join(TESTDATA, "tokenizer-ids.json"), "utf8")).tokenizers;
const long = corpus.join("\n").repeat(200);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const results = [];
for (const candidate of candidates) {
  for (const name of ["qwen3", "llama3"] as const) {
    const folder = packagedTokenizerFolder(name);
    const json = JSON.parse(readFileSync(join(folder, "tokenizer.json"), "utf8"));
    const config = JSON.parse(readFileSync(join(folder, "tokenizer_config.json"), "utf8"));
    const started = performance.now();
    const encode = await candidate.load(folder, json, config);
    const loadMs = performance.now() - started;
    const mismatches = corpus.filter(
      (text, i) => JSON.stringify(encode(text)) !== JSON.stringify(expected[name].ids[i]),
    ).length;
    const times: number[] = [];
    let tokens = 0;
    for (let run = 0; run < 5; run++) {
      const t0 = performance.now();
      tokens = encode(long).length;
      times.push(performance.now() - t0);
    }
    results.push({
      candidate: candidate.name,
      tokenizer: name,
      texts: corpus.length,
      mismatches,
      loadMs: Math.round(loadMs),
      encodeChars: long.length,
      encodeTokens: tokens,
      encodeMsMedianOf5: Math.round(median(times)),
      tokensPerSecond: Math.round((tokens / median(times)) * 1000),
    });
  }
}
console.log(
  JSON.stringify({ node: process.version, cpu: cpus()[0]?.model, cores: cpus().length, results }, null, 1),
);
