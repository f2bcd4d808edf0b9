/**
 * Parity with transformers on the committed tiny random checkpoints (scripts/hf-fixtures.py):
 * logits of the full forward within 1e-4 in float32 (bf16 weights widened and computed in
 * float32, as transformers did for the reference), within bfloat16 tolerance of transformers
 * computing in bfloat16, and the same 64-token greedy continuation through the KV-cache decode.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { createRng } from "../../core/random.ts";
import { DecodeSession } from "../embedded/decode-session.ts";
import { HfEngineModel } from "./engine.ts";
import { ropeInverseFrequencies } from "./rope.ts";
import { FIXTURE_NAMES, FIXTURES, maxAbsDiff, readReference } from "./testing-fixtures.ts";

for (const name of FIXTURE_NAMES) {
  test(`${name}: full-forward logits and greedy decode equal transformers'`, async () => {
    const reference = readReference(name);
    const model = HfEngineModel.load(join(FIXTURES, name));
    try {
      if (model.config.block === "gpt2") assert.equal(reference.invFreq.length, 0);
      else assert.ok(maxAbsDiff(ropeInverseFrequencies(model.config), reference.invFreq) === 0);
      const rows = reference.ids.length;
      const logits = model.logits(Int32Array.from(reference.ids.flat()), rows);
      const diff = maxAbsDiff(logits, reference.logits);
      assert.ok(diff <= 1e-4, `${name}: logits differ from transformers' by ${diff}`);
      if (reference.bf16Logits) {
        // transformers in bfloat16 rounds every activation to 8 bits of mantissa.
        const scale = Math.max(...reference.logits.map(Math.abs));
        const bf16 = maxAbsDiff(logits, reference.bf16Logits);
        assert.ok(bf16 <= 0.05 * scale, `${name}: ${bf16} from transformers' bf16 logits (scale ${scale})`);
      }
      // Batched with another row of a different length, which must not disturb it.
      const session = new DecodeSession(model.kvModel, null, { rows: 2 });
      session.feed(0, reference.ids[0]);
      session.feed(1, reference.prompt);
      const request = (slot: number) => ({
        slot,
        maxNew: reference.greedy.length,
        stop: [],
        rng: createRng(0),
        sampling: { temperature: 0, topP: 1 },
      });
      const [, result] = await session.generate([request(0), request(1)]);
      session.dispose();
      assert.deepEqual(result.ids, reference.greedy);
    } finally {
      model.dispose();
    }
  });
}

test("tokenLogprobs: transformers' log-softmax of the logits at each next token", () => {
  const reference = readReference("smollm2");
  const model = HfEngineModel.load(join(FIXTURES, "smollm2"));
  try {
    const rows = reference.ids.length;
    const T = reference.ids[0].length;
    const V = model.config.vocabSize;
    const expected: number[] = [];
    reference.ids.forEach((row, b) => {
      for (let t = 0; t < T - 1; t++) {
        const logits = reference.logits.subarray((b * T + t) * V, (b * T + t + 1) * V);
        const top = Math.max(...logits);
        const logSum = Math.log(logits.reduce((sum, z) => sum + Math.exp(z - top), 0)) + top;
        expected.push(logits[row[t + 1]] - logSum);
      }
    });
    const got = model.tokenLogprobs(Int32Array.from(reference.ids.flat()), rows);
    assert.ok(maxAbsDiff(got, expected) <= 1e-4, `differs by ${maxAbsDiff(got, expected)}`);
  } finally {
    model.dispose();
  }
});

test("sequenceLogprobs (the body once, the head in token chunks) equals the full program's tokenLogprobs, at temperature 1 and 0.7", () => {
  const folder = join(FIXTURES, "qwen3-tied");
  const whole = HfEngineModel.load(folder);
  // Chunks of 16 tokens: a 150-token sequence spans ten of them, the last one partly.
  const chunked = HfEngineModel.load(folder, { headTokens: 16 });
  try {
    const rng = createRng(3);
    const V = whole.config.vocabSize;
    const sequences = [150, 64, 2].map((n) => Array.from({ length: n }, () => rng.int(V)));
    for (const temperature of [1, 0.7]) {
      const got = chunked.sequenceLogprobs(sequences, temperature);
      sequences.forEach((ids, i) => {
        const T = Math.ceil(ids.length / 64) * 64;
        const padded = new Int32Array(T);
        padded.set(ids);
        const expected = [0, ...whole.tokenLogprobs(padded, 1, temperature).subarray(0, ids.length - 1)];
        assert.equal(got[i].length, ids.length);
        assert.ok(
          maxAbsDiff(got[i], expected) <= 1e-5,
          `sequence ${i} at ${temperature}: ${maxAbsDiff(got[i], expected)}`,
        );
      });
    }
  } finally {
    whole.dispose();
    chunked.dispose();
  }
});

test("scattered rows (the host cache gathers their rows) decode as transformers does", async () => {
  const reference = readReference("llama3-bf16");
  const model = HfEngineModel.load(join(FIXTURES, "llama3-bf16"));
  const session = new DecodeSession(model.kvModel, null, { rows: 16 });
  try {
    session.feed(0, reference.ids[1]);
    session.feed(15, reference.prompt);
    const request = (slot: number) => ({
      slot,
      maxNew: reference.greedy.length,
      stop: [],
      rng: createRng(0),
      sampling: { temperature: 0, topP: 1 },
    });
    const [, result] = await session.generate([request(0), request(15)]);
    assert.deepEqual(result.ids, reference.greedy);
  } finally {
    session.dispose();
    model.dispose();
  }
});
