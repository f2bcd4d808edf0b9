/**
 * The critic's value head on a Hugging Face checkpoint (value-head.ts, token-loss.ts, engine.ts),
 * on the tiny Qwen3 of the LoRA parity fixtures (B random, so the adapter's gradients are not
 * zero by construction): the value loss's gradient in the head equals the hand-computed one (from
 * the forward's final normed hidden states, V of token t read at position t − 1) and a central
 * difference; without `valueGradient` the value loss leaves the adapter's (and, fully fine-tuned,
 * every weight's) gradient exactly zero, with it not; the engine's values, which GAE reads,
 * equal the trainer's; a checkpoint keeps the head and its moments in `value_head.safetensors`
 * and `trainer/`, out of the adapter and model.safetensors.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { np } from "../../engine/jax.ts";
import { readSafetensorsFile } from "../../engine/safetensors.ts";
import type { Trainer, TrainState } from "../../engine/train.ts";
import {
  disposeTree,
  flattenTree,
  type HostTensor,
  type ParamTree,
  treeFromHost,
  treeToHost,
} from "../../engine/tree.ts";
import { ppoLoss } from "../../rl/loss.ts";
import type { TokenBatch } from "../embedded/losses.ts";
import type { ValueHeadParams } from "../embedded/model.ts";
import { HfEngineModel } from "./engine.ts";
import type { LoraParams } from "./lora.ts";
import { loraAdapters } from "./lora.ts";
import {
  loadFullCheckpoint,
  loadLoraCheckpoint,
  saveFullCheckpoint,
  saveLoraCheckpoint,
} from "./lora-checkpoint.ts";
import { createFullTrainer, createLoraTrainer, fullParams } from "./lora-trainer.ts";
import { type HfParams, hfHidden } from "./model.ts";
import { maxAbsDiff } from "./testing-fixtures.ts";
import { readLoraReference } from "./testing-lora.ts";
import { hfTokenStats, type WithValueHead } from "./token-loss.ts";
import { VALUE_HEAD_BIAS, VALUE_HEAD_FILE, VALUE_HEAD_WEIGHT } from "./value-head.ts";
import { loadHfCheckpoint } from "./weights.ts";

const reference = readLoraReference("qwen3-tied");
const model = reference.base.config;
const D = model.hiddenSize;
const B = reference.ids.length;
const T = reference.ids[0].length;
const VALUE_COEF = 0.5;

/** Deterministic values in [−scale, scale). */
function uniform(n: number, seed: number, scale: number): Float32Array<ArrayBuffer> {
  let state = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return (state / 2 ** 32 - 0.5) * 2 * scale;
  });
}

const headW = uniform(D, 1, 0.2);
const headB = Float32Array.of(0.05);
const returns = uniform(B * T, 2, 1);
const mask = reference.mask.flat();
const count = mask.reduce((a, b) => a + b, 0);
const tokenWeights = Float32Array.from(mask, (m) => m / count);

const head = (): ValueHeadParams => ({
  w: np.array(headW.slice(), { shape: [D] }),
  b: np.array(headB.slice(), { shape: [1] }),
});

/**
 * The value loss alone: advantages 0 (the policy term and its gradient are exactly 0), no KL or
 * entropy; old values 0 with a clip range too wide to bind (the loss is ½ c_v (V − R)²).
 */
const valueOnlyLoss = (valueClip = 100) => ppoLoss({ valueCoef: VALUE_COEF, valueClip });

function batch(): TokenBatch {
  const shape = [B, T];
  const perToken = (values: ArrayLike<number>) => np.array(Float32Array.from(values), { shape });
  return {
    ids: np.array(Int32Array.from(reference.ids.flat()), { shape, dtype: np.int32 }),
    // The mask in the weights, the token mean in the scales (as ppo-update.ts builds them).
    weights: perToken(mask),
    extra: {
      oldLogprobs: perToken(reference.oldLogprobs),
      advantages: perToken(new Float32Array(B * T)),
      lossScale: perToken(new Float32Array(B * T).fill(1 / count)),
      metricScale: perToken(new Float32Array(B * T).fill(1 / count)),
      oldValues: perToken(new Float32Array(B * T)),
      returns: perToken(returns),
    },
  };
}

const adapterWithHead = (): WithValueHead<LoraParams> => ({
  ...treeFromHost<LoraParams>(reference.adapter),
  value: head(),
});

/** The compiled gradient program's (the trainer's) loss and gradients, by tree path. */
async function loraGradients(valueGradient: boolean, params = adapterWithHead(), valueClip = 100) {
  const trainer = createLoraTrainer(reference.base, reference.config, {
    loss: valueOnlyLoss(valueClip),
    lossOptions: { entropy: true, values: true, valueGradient },
  });
  try {
    const out = await trainer.gradients(params, [batch()]);
    const grads = new Map(
      flattenTree(out.grads).map(([path, leaf]) => [path, leaf.ref.dataSync() as Float32Array]),
    );
    disposeTree(out.grads as never);
    return { loss: out.loss, metrics: out.metrics, grads };
  } finally {
    disposeTree(params as never);
    trainer.dispose();
  }
}

const largest = (values: ArrayLike<number>) => Math.max(...Array.from(values, Math.abs));

test("the value loss's gradient in the head is the hand-computed one and a central difference", async () => {
  // The adapted model's final normed hidden states, on the host: V[b,t] = h[b,t−1]·w + b.
  const hidden = hfHidden(
    treeFromHost<HfParams>(reference.base.tensors),
    np.array(Int32Array.from(reference.ids.flat()), { shape: [B, T], dtype: np.int32 }),
    model,
    {
      gather: true,
      adapters: loraAdapters(treeFromHost<LoraParams>(reference.adapter), reference.config),
    },
  ).dataSync() as Float32Array;
  const expectedW = new Float64Array(D);
  let expectedB = 0;
  let expectedLoss = 0;
  for (let b = 0; b < B; b++) {
    for (let t = 1; t < T; t++) {
      const i = b * T + t;
      const h = hidden.subarray((i - 1) * D, i * D);
      let v = headB[0];
      for (let d = 0; d < D; d++) v += h[d] * headW[d];
      const residual = v - returns[i];
      expectedLoss += tokenWeights[i] * VALUE_COEF * 0.5 * residual ** 2;
      expectedB += tokenWeights[i] * VALUE_COEF * residual;
      for (let d = 0; d < D; d++) expectedW[d] += tokenWeights[i] * VALUE_COEF * residual * h[d];
    }
  }
  const { loss, grads, metrics } = await loraGradients(false);
  assert.ok(Math.abs(loss - expectedLoss) < 1e-5, `loss ${loss}, by hand ${expectedLoss}`);
  assert.ok(Math.abs(metrics["value/loss"] - expectedLoss / VALUE_COEF) < 1e-5);
  assert.ok(largest(expectedW) > 1e-2, "the head's gradient is far from zero");
  assert.ok(
    maxAbsDiff(grads.get("value.w")!, expectedW) < 1e-5,
    `max |Δ| ${maxAbsDiff(grads.get("value.w")!, expectedW)}`,
  );
  assert.ok(
    Math.abs(grads.get("value.b")![0] - expectedB) < 1e-5,
    `b: ${grads.get("value.b")![0]}, by hand ${expectedB}`,
  );

  // A central difference in b and in a few weights: the loss is quadratic in the head, so it is exact
  // up to float32 rounding.
  const epsilon = 1e-2;
  const lossWith = async (w: Float32Array<ArrayBuffer>, b: Float32Array<ArrayBuffer>) => {
    const params = {
      ...treeFromHost<LoraParams>(reference.adapter),
      value: { w: np.array(w, { shape: [D] }), b: np.array(b, { shape: [1] }) },
    };
    return (await loraGradients(false, params)).loss;
  };
  const shifted = (array: Float32Array<ArrayBuffer>, index: number, by: number) => {
    const out = array.slice();
    out[index] += by;
    return out;
  };
  const differenceB =
    ((await lossWith(headW, shifted(headB, 0, epsilon))) -
      (await lossWith(headW, shifted(headB, 0, -epsilon)))) /
    (2 * epsilon);
  assert.ok(
    Math.abs(differenceB - expectedB) < 1e-3 * Math.max(1, Math.abs(expectedB)),
    `b: ${differenceB} vs ${expectedB}`,
  );
  for (const d of [0, 7, D - 1]) {
    const difference =
      ((await lossWith(shifted(headW, d, epsilon), headB)) -
        (await lossWith(shifted(headW, d, -epsilon), headB))) /
      (2 * epsilon);
    assert.ok(Math.abs(difference - expectedW[d]) < 1e-3, `w[${d}]: ${difference} vs ${expectedW[d]}`);
  }
});

test("without valueGradient the value loss leaves the adapter's gradient exactly zero; with it the adapter learns from it", async () => {
  const stopped = await loraGradients(false);
  const through = await loraGradients(true);
  const adapterPaths = Object.keys(reference.adapter);
  for (const path of adapterPaths)
    assert.equal(largest(stopped.grads.get(path)!), 0, `${path} without valueGradient`);
  for (const part of [".a", ".b"]) {
    const size = Math.max(
      ...adapterPaths.filter((p) => p.endsWith(part)).map((p) => largest(through.grads.get(p)!)),
    );
    assert.ok(size > 1e-4, `with valueGradient the ${part} gradients reach ${size}`);
  }
  // The head's own gradient does not depend on where the loss stops.
  assert.ok(maxAbsDiff(stopped.grads.get("value.w")!, through.grads.get("value.w")!) < 1e-6);
  assert.equal(stopped.loss, through.loss);
});

test("fully fine-tuned, without valueGradient the value loss leaves every weight's gradient exactly zero", async () => {
  for (const valueGradient of [false, true]) {
    const trainer = createFullTrainer(reference.base, {
      loss: valueOnlyLoss(),
      lossOptions: { entropy: true, values: true, valueGradient },
    });
    const params: WithValueHead<HfParams> = { ...fullParams(reference.base), value: head() };
    try {
      const out = await trainer.gradients(params, [batch()]);
      const grads = flattenTree(out.grads).map(
        ([path, leaf]) => [path, largest(leaf.ref.dataSync() as Float32Array)] as const,
      );
      disposeTree(out.grads as never);
      const weights = grads.filter(([path]) => !path.startsWith("value."));
      assert.equal(weights.length, Object.keys(reference.base.tensors).length);
      const size = Math.max(...weights.map(([, value]) => value));
      if (valueGradient) assert.ok(size > 1e-4, `with valueGradient the weights' gradients reach ${size}`);
      else
        assert.equal(
          size,
          0,
          `without valueGradient: ${weights.filter(([, value]) => value > 0).map(([path]) => path)}`,
        );
      assert.ok(grads.find(([path]) => path === "value.w")![1] > 1e-2);
    } finally {
      disposeTree(params as never);
      trainer.dispose();
    }
  }
});

test("the engine's values (GAE's V_old, scored before the update) equal the trainer's", () => {
  const engine = new HfEngineModel(reference.base, {
    lora: { config: reference.config, tensors: reference.adapter },
  });
  try {
    const scored = engine.sequenceValues(reference.ids, { w: headW, b: headB });
    const stats = hfTokenStats(
      treeFromHost<HfParams>(reference.base.tensors),
      np.array(Int32Array.from(reference.ids.flat()), { shape: [B, T], dtype: np.int32 }),
      model,
      false,
      {
        adapters: loraAdapters(treeFromHost<LoraParams>(reference.adapter), reference.config),
        value: head(),
      },
    );
    const trained = stats.values!.dataSync() as Float32Array;
    stats.logprobs.dispose();
    stats.entropy?.dispose();
    scored.forEach((row, b) => {
      assert.equal(row.length, T);
      assert.equal(row[0], 0);
      const error = maxAbsDiff(row, trained.subarray(b * T, (b + 1) * T));
      assert.ok(error < 1e-5, `row ${b}: max |Δ| ${error}`);
    });
    assert.ok(largest(trained) > 1e-2, "the values are far from zero");
  } finally {
    engine.dispose();
  }
});

/** The state after one optimizer step (non-zero moments everywhere), and its params and moments on the host. */
async function steppedState<P extends ParamTree>(
  trainer: Trainer<P, TokenBatch>,
  params: P,
): Promise<{ state: TrainState<P>; host: Record<string, HostTensor> }> {
  const [state] = await trainer.step(trainer.init(params), [batch()], 1e-2);
  const host = await treeToHost({ params: state.params, opt: state.opt } as never);
  return { state, host };
}

test("a checkpoint keeps the value head in value_head.safetensors (TRL's names) and its moments in trainer/; the adapter and model.safetensors do not have it", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-value-head-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const options = { loss: valueOnlyLoss(), lossOptions: { entropy: true, values: true } };
  const checkFile = (dir: string, host: Record<string, HostTensor>) => {
    const file = readSafetensorsFile(join(dir, VALUE_HEAD_FILE)).tensors;
    assert.deepEqual(Object.keys(file).sort(), [VALUE_HEAD_BIAS, VALUE_HEAD_WEIGHT]);
    assert.deepEqual(file[VALUE_HEAD_WEIGHT].shape, [1, D]);
    assert.deepEqual(file[VALUE_HEAD_BIAS].shape, [1]);
    assert.deepEqual(Array.from(file[VALUE_HEAD_WEIGHT].data), Array.from(host["params.value.w"].data));
  };
  const checkRestored = async (state: TrainState<ParamTree>, host: Record<string, HostTensor>) => {
    const restored = await treeToHost({ params: state.params, opt: state.opt } as never);
    assert.deepEqual(Object.keys(restored).sort(), Object.keys(host).sort());
    for (const path of ["params.value.w", "params.value.b", "opt.mu.value.w", "opt.nu.value.w"]) {
      assert.ok(largest(host[path].data) > 0, `${path} moved`);
      assert.deepEqual(Array.from(restored[path].data), Array.from(host[path].data), path);
    }
  };

  const lora = createLoraTrainer(reference.base, reference.config, options);
  const stepped = await steppedState(lora, adapterWithHead());
  const loraDir = join(root, "lora");
  await saveLoraCheckpoint(loraDir, stepped.state, {
    lora: reference.config,
    model,
    baseFolder: reference.base.folder,
    trainer: { rlStep: 1 },
  });
  checkFile(loraDir, stepped.host);
  const adapterKeys = Object.keys(readSafetensorsFile(join(loraDir, "adapter_model.safetensors")).tensors);
  assert.ok(
    adapterKeys.length > 0 && adapterKeys.every((key) => key.includes("lora_")),
    "the adapter holds LoRA tensors only",
  );
  await checkRestored((await loadLoraCheckpoint(loraDir, model)).state, stepped.host);
  lora.dispose();

  const full = createFullTrainer(reference.base, options);
  const fullStepped = await steppedState(full, { ...fullParams(reference.base), value: head() });
  const fullDir = join(root, "full");
  await saveFullCheckpoint(fullDir, fullStepped.state, { base: reference.base, trainer: { rlStep: 1 } });
  checkFile(fullDir, fullStepped.host);
  const modelKeys = Object.keys(readSafetensorsFile(join(fullDir, "model.safetensors")).tensors);
  assert.ok(!modelKeys.some((key) => key.includes("v_head")), "model.safetensors has no value head");
  // Still the checkpoint folder transformers and hf: load: its weights and nothing else.
  assert.deepEqual(
    Object.keys(loadHfCheckpoint(fullDir).tensors).sort(),
    Object.keys(reference.base.tensors).sort(),
  );
  assert.ok(existsSync(join(fullDir, "config.json")));
  await checkRestored((await loadFullCheckpoint(fullDir)).state, fullStepped.host);
  full.dispose();
});
