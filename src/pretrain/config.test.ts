import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { DEFAULT_PRETRAIN_CONFIG, parsePretrainConfig } from "./config.ts";

test("defaults fill what a config leaves out", () => {
  const config = parsePretrainConfig({ name: "x", model: { dModel: 64 } });
  assert.equal(config.name, "x");
  assert.equal(config.model.dModel, 64);
  assert.equal(config.model.nLayers, DEFAULT_PRETRAIN_CONFIG.model.nLayers);
});

test("a bad field fails fast, naming the field and the valid values", () => {
  assert.throws(() => parsePretrainConfig({ mix: "medium" }), /mix: .*"strong".*"weak"/s);
  assert.throws(() => parsePretrainConfig({ steps: -1 }), /steps:/);
  assert.throws(
    () => parsePretrainConfig({ model: { nHeads: 3 } }),
    /model.dModel: must be divisible by model.nHeads/,
  );
  assert.throws(() => parsePretrainConfig({ lerningRate: 1 }), /lerningRate|Unrecognized/);
});

test("the shipped configs are valid", () => {
  for (const name of ["base-strong", "base-weak"]) {
    const config = parsePretrainConfig(JSON.parse(readFileSync(`configs/pretrain/${name}.json`, "utf8")));
    assert.equal(config.name, name);
  }
});
