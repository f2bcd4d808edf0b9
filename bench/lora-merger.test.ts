import assert from "node:assert/strict";
import { test } from "node:test";
import { mergeLora } from "../src/policy/hf/lora.ts";
import { maxAbsDiff } from "../src/policy/hf/testing-fixtures.ts";
import { readLoraReference } from "../src/policy/hf/testing-lora.ts";
import { createLoraMerger } from "./lora-merger.ts";

test("the compiled merge gives mergeLora's weights (float32 rounding) and passes the others through", () => {
  const reference = readLoraReference("llama3-bf16");
  const { tensors, config: model } = reference.base;
  const merger = createLoraMerger(reference.config, model, tensors);
  try {
    const merged = merger.merge(tensors, reference.adapter);
    const expected = mergeLora(tensors, reference.adapter, reference.config, model);
    assert.deepEqual(Object.keys(merged).sort(), Object.keys(expected).sort());
    let adapted = 0;
    for (const [path, tensor] of Object.entries(expected)) {
      assert.deepEqual(merged[path].shape, tensor.shape, path);
      if (tensor === tensors[path]) {
        assert.equal(merged[path], tensors[path], `${path} passed through`);
        continue;
      }
      adapted++;
      const error = maxAbsDiff(merged[path].data as Float32Array, tensor.data as Float32Array);
      assert.ok(error <= 1e-5, `${path}: max |Δ| ${error}`);
      // The adapter's B is random in the fixture, so a merged weight differs from the base's.
      assert.ok(
        maxAbsDiff(merged[path].data as Float32Array, tensors[path].data as Float32Array) > 1e-4,
        path,
      );
    }
    assert.equal(adapted, reference.config.targets.length * model.layers);
  } finally {
    merger.dispose();
  }
});
