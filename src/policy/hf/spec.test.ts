import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { resolvePolicy } from "../resolve.ts";
import { parseHfSpec } from "./spec.ts";
import { FIXTURES } from "./testing-fixtures.ts";

test("hf:<folder> specs: the folder, or null for other specs; an empty folder is refused", () => {
  assert.equal(parseHfSpec("hf:/models/qwen3"), "/models/qwen3");
  assert.equal(parseHfSpec("models/base-strong"), null);
  assert.equal(parseHfSpec("openai:http://x/v1#m"), null);
  assert.throws(() => parseHfSpec("hf:"), /hf: needs a checkpoint folder/);
});

test("resolvePolicy routes hf: to the checkpoint loader, which names what is wrong", async () => {
  await assert.rejects(
    resolvePolicy(`hf:${FIXTURES}`),
    /no config.json \(not a Hugging Face checkpoint folder\)/,
  );
  const folder = join(FIXTURES, "qwen3-tied");
  // The fixture has weights but no tokenizer or template: the text side's loader refuses it.
  await assert.rejects(resolvePolicy(`hf:${folder}`), /tokenizer|text side/i);
});
