/** LoRA's settings, scale, init, dropout and merge (lora.ts), on worked examples and the Qwen3 fixture. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { np, random } from "../../engine/jax.ts";
import { decodeSafetensors } from "../../engine/safetensors.ts";
import { type HostTensor, refTree, treeFromHost } from "../../engine/tree.ts";
import {
  dropout,
  initLora,
  LoraConfigError,
  loraAdapters,
  loraParamShapes,
  loraScale,
  mergeLora,
  resolveLoraConfig,
} from "./lora.ts";
import { type HfParams, hfLogits } from "./model.ts";
import { FIXTURES, maxAbsDiff } from "./testing-fixtures.ts";
import { hfTensorsOfParams, loadHfCheckpoint } from "./weights.ts";

const checkpoint = loadHfCheckpoint(join(FIXTURES, "qwen3-tied"));
const model = checkpoint.config;

test("invalid settings are refused naming the field and the valid values", () => {
  const refused = (settings: object, pattern: RegExp) =>
    assert.throws(
      () => resolveLoraConfig(settings, model),
      (e: Error) => e instanceof LoraConfigError && pattern.test(e.message),
    );
  refused({ rank: 0 }, /rank must be an integer ≥ 1, got 0/);
  refused({ rank: 2.5 }, /rank must be an integer/);
  refused({ alpha: -1 }, /alpha must be a finite number > 0/);
  refused({ dropout: 1 }, /dropout must be in \[0, 1\)/);
  refused({ targets: [] }, /at least one of q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj/);
  refused(
    { targets: ["q_proj", "c_attn"] },
    /"c_attn" is not a projection of qwen3's layers; valid: q_proj, k_proj/,
  );
  refused({ targets: ["lm_head"] }, /"lm_head" is not a projection/);
  // GPT-2 takes its own module names (PEFT's), and PEFT's default for it.
  const gpt2 = loadHfCheckpoint(join(FIXTURES, "gpt2")).config;
  assert.throws(
    () => resolveLoraConfig({ targets: ["q_proj"] }, gpt2),
    /"q_proj" is not a projection of gpt2's layers; valid: c_attn, c_proj, c_fc/,
  );
  assert.deepEqual(resolveLoraConfig({}, gpt2).targets, ["c_attn"]);
  assert.deepEqual(resolveLoraConfig({ targets: ["c_fc", "c_attn"] }, gpt2).targets, ["c_attn", "c_fc"]);
});

test("GPT-2: c_attn is one fused adapter (B [3D, r]) and c_proj adapts both attn.c_proj and mlp.c_proj", () => {
  const gpt2 = loadHfCheckpoint(join(FIXTURES, "gpt2")).config;
  const config = resolveLoraConfig({ rank: 2, alpha: 4, targets: ["c_attn", "c_proj"] }, gpt2);
  const layer0 = loraParamShapes(config, gpt2).filter((e) => e.layer === 0);
  assert.deepEqual(
    layer0.map((e) => [e.path, e.module, e.shape]),
    [
      ["layers.0.qkv.a", "attn.c_attn", [2, 32]],
      ["layers.0.qkv.b", "attn.c_attn", [96, 2]],
      ["layers.0.o.a", "attn.c_proj", [2, 32]],
      ["layers.0.o.b", "attn.c_proj", [32, 2]],
      ["layers.0.down.a", "mlp.c_proj", [2, 128]],
      ["layers.0.down.b", "mlp.c_proj", [32, 2]],
    ],
  );
});

test("GPT-2's checkpoint tensors are rebuilt from the engine's parameters (c_attn fused, Conv1D [in, out])", () => {
  const checkpoint = loadHfCheckpoint(join(FIXTURES, "gpt2"));
  const file = decodeSafetensors(readFileSync(join(FIXTURES, "gpt2", "model.safetensors")), "gpt2").tensors;
  const rebuilt = hfTensorsOfParams(checkpoint.config, checkpoint.tensors);
  assert.deepEqual(Object.keys(rebuilt).sort(), Object.keys(file).sort());
  for (const [name, tensor] of Object.entries(file)) {
    assert.deepEqual(rebuilt[name].shape, tensor.shape, name);
    assert.equal(maxAbsDiff(rebuilt[name].data as Float32Array, tensor.data as Float32Array), 0, name);
  }
});

test("defaults are PEFT's, targets come back in layer order, and the scale is alpha/r (rsLoRA alpha/√r)", () => {
  const defaults = resolveLoraConfig({}, model);
  assert.deepEqual(defaults, { rank: 8, alpha: 8, targets: ["q_proj", "v_proj"], dropout: 0, rslora: false });
  const config = resolveLoraConfig({ rank: 4, alpha: 8, targets: ["down_proj", "q_proj"] }, model);
  assert.deepEqual(config.targets, ["q_proj", "down_proj"]);
  assert.equal(loraScale(config), 2);
  assert.equal(loraScale({ ...config, rslora: true }), 4);
  // Qwen3 fixture: hidden 32, 4 heads of 16 (q out 64), intermediate 64.
  const shapes = loraParamShapes(config, model).filter((e) => e.layer === 0);
  assert.deepEqual(
    shapes.map((e) => [e.path, e.shape]),
    [
      ["layers.0.q.a", [4, 32]],
      ["layers.0.q.b", [64, 4]],
      ["layers.0.down.a", [4, 64]],
      ["layers.0.down.b", [32, 4]],
    ],
  );
});

test("a fresh adapter (B = 0) leaves the logits unchanged; A is within PEFT's Kaiming bound", () => {
  const config = resolveLoraConfig({ rank: 4, alpha: 8, targets: ["q_proj", "o_proj", "down_proj"] }, model);
  const lora = initLora(config, model, random.key(3));
  const a = lora.layers[1].down!.a.ref.dataSync() as Float32Array;
  const bound = 1 / Math.sqrt(64);
  assert.ok(a.every((x) => Math.abs(x) <= bound) && a.some((x) => Math.abs(x) > bound / 2), "A ~ U(±1/√in)");
  const ids = np.array(Int32Array.from([5, 17, 200, 3, 99, 41]), { shape: [1, 6], dtype: np.int32 });
  const base = treeFromHost<HfParams>(checkpoint.tensors);
  const plain = hfLogits(refTree(base), ids.ref, model, { gather: true }).dataSync() as Float32Array;
  const adapted = hfLogits(base, ids, model, { gather: true, adapters: loraAdapters(lora, config) });
  assert.deepEqual(adapted.dataSync(), plain);
});

test("dropout keeps each input with probability 1 − rate, scaled by 1/(1 − rate); rate 0 is the identity", () => {
  const x = np.ones([4000]);
  const out = dropout(x, 0.25, random.key(1)).dataSync() as Float32Array;
  const dropped = out.filter((v) => v === 0).length;
  assert.ok(
    out.every((v) => v === 0 || Math.abs(v - 4 / 3) < 1e-6),
    "kept values scaled by 4/3",
  );
  assert.ok(Math.abs(dropped / 4000 - 0.25) < 0.03, `dropped ${dropped} of 4000`);
  const same = dropout(np.array([1, 2, 3]), 0, random.key(1)).dataSync();
  assert.deepEqual([...same], [1, 2, 3]);
});

test("with a dropout key the adapter's term changes (training), without one it is deterministic", () => {
  const config = resolveLoraConfig({ rank: 2, alpha: 4, targets: ["q_proj"], dropout: 0.5 }, model);
  const lora = initLora(config, model, random.key(5));
  for (const layer of lora.layers) layer.q!.b = np.ones(layer.q!.b.shape).mul(0.1); // B ≠ 0
  const x = random.normal(random.key(6), [3, 32]);
  const term = (key?: number) =>
    loraAdapters(refTree(lora), config, { dropoutKey: key === undefined ? undefined : random.key(key) })[0]
      .q!(x.ref).dataSync() as Float32Array;
  assert.deepEqual(term(), term());
  assert.deepEqual(term(7), term(7));
  assert.ok(maxAbsDiff(term(7), term()) > 1e-3, "dropout changes the term");
  assert.ok(maxAbsDiff(term(7), term(8)) > 1e-3, "a new key, a new mask");
});

test("merge: W + (alpha/r)·B·A, worked by hand; untargeted weights pass through", () => {
  const tensor = (shape: number[], values: number[]): HostTensor => ({
    dtype: "float32",
    shape,
    data: Float32Array.from(values),
  });
  const config = resolveLoraConfig({ rank: 1, alpha: 2, targets: ["q_proj"] }, model);
  // Only the shapes of layer 0's q matter here: a toy model config with a 2×3 q.
  const toy = { ...model, layers: 1, hiddenSize: 3, heads: 1, headDim: 2 };
  const base = { "layers.0.q": tensor([2, 3], [1, 2, 3, 4, 5, 6]), norm: tensor([3], [1, 1, 1]) };
  const lora = { "layers.0.q.a": tensor([1, 3], [1, 0, -1]), "layers.0.q.b": tensor([2, 1], [0.5, 2]) };
  const merged = mergeLora(base, lora, config, toy);
  // s = 2; s·B·A = [[1, 0, −1], [4, 0, −4]].
  assert.deepEqual([...merged["layers.0.q"].data], [2, 2, 2, 8, 5, 2]);
  assert.equal(merged.norm, base.norm);
  assert.deepEqual([...base["layers.0.q"].data], [1, 2, 3, 4, 5, 6], "the base is not modified");
});
