/**
 * The layered LoRA gradient (layered-grad.ts: block by block with recomputation, the head in
 * token chunks) against PEFT's own loss and gradients (scripts/hf-lora-fixtures.py) on the tiny
 * Qwen3, Llama 3 and GPT-2 checkpoints, and against the one-program gradient (token-loss.ts
 * through jax-js `valueAndGrad`) where PEFT has no reference: a critic's value head, with and
 * without its gradient reaching the trunk.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { np } from "../../engine/jax.ts";
import { disposeTree, flattenTree, type ParamTree, treeFromHost } from "../../engine/tree.ts";
import { ppoLoss } from "../../rl/loss.ts";
import type { PerTokenLoss, TokenLossOptions } from "../embedded/losses.ts";
import { layeredLoraGradients } from "./layered-grad.ts";
import type { LoraParams } from "./lora.ts";
import { createLoraTrainer } from "./lora-trainer.ts";
import { maxAbsDiff } from "./testing-fixtures.ts";
import {
  fusedLoraGradients,
  LORA_FIXTURE_NAMES,
  type LoraReference,
  loraLossCases,
  loraReferenceBatch,
  readLoraReference,
} from "./testing-lora.ts";
import type { HfLoraBatch, WithValueHead } from "./token-loss.ts";

const TOLERANCE = 1e-4;

async function layered(
  reference: LoraReference,
  perToken: PerTokenLoss,
  lossOptions: TokenLossOptions,
  params: WithValueHead<LoraParams>,
  extra: { headTokens?: number; groupTokens?: number; batch?: HfLoraBatch } = {},
) {
  const gradients = layeredLoraGradients(reference.base, reference.config, {
    loss: perToken,
    lossOptions,
    headTokens: extra.headTokens,
    groupTokens: extra.groupTokens,
  });
  const batch = extra.batch ?? loraReferenceBatch(reference);
  disposeTree(batch.base as never);
  const out = await gradients.gradients(params, batch, 0, 0);
  gradients.dispose();
  const grads = new Map(
    flattenTree(out.grads as ParamTree).map(([path, leaf]) => [path, leaf.dataSync() as Float32Array]),
  );
  return { loss: out.loss, metrics: out.metrics, grads };
}

for (const name of LORA_FIXTURE_NAMES) {
  const reference = readLoraReference(name);
  for (const [title, key, perToken, entropy] of loraLossCases(reference)) {
    // 8 tokens a head chunk: the fixtures' few response tokens span several chunks; groups of one
    // row: each row goes through the blocks alone and their sums make the batch's.
    for (const [headTokens, groupTokens] of [
      [undefined, undefined],
      [8, 1],
    ]) {
      test(`layered, ${name}, ${title}, head chunks of ${headTokens ?? "default"}, ${groupTokens ? "one row" : "all rows"} a group: PEFT's loss and every LoRA gradient within ${TOLERANCE}`, async () => {
        const expected = reference.losses[key];
        const params = treeFromHost<LoraParams>(reference.adapter);
        const { loss, metrics, grads } = await layered(reference, perToken, { entropy }, params, {
          headTokens,
          groupTokens,
        });
        assert.ok(Math.abs(loss - expected.value) <= TOLERANCE, `loss ${loss}, PEFT ${expected.value}`);
        assert.deepEqual([...grads.keys()].sort(), Object.keys(expected.grads).sort());
        for (const [path, want] of Object.entries(expected.grads)) {
          const error = maxAbsDiff(grads.get(path)!, want);
          assert.ok(error <= TOLERANCE, `${path}: max |Δgrad| ${error}`);
        }
        // The metrics are the one-program loss's (PEFT gives none); it consumes the params.
        const one = fusedLoraGradients(reference, perToken, { entropy }, params);
        assert.deepEqual(Object.keys(metrics).sort(), Object.keys(one.metrics).sort());
        for (const [metric, value] of Object.entries(one.metrics))
          assert.ok(Math.abs(metrics[metric] - value) <= 1e-5, `${metric}: ${metrics[metric]} vs ${value}`);
        if (key === "ppo")
          assert.ok(metrics["policy/clip_fraction"] > 0 && metrics["policy/clip_fraction"] < 1);
      });
    }
  }
}

for (const valueGradient of [false, true]) {
  test(`layered, a critic's value head (valueGradient ${valueGradient}): loss, metrics and every gradient equal the one-program gradient's`, async () => {
    const reference = readLoraReference("qwen3-tied");
    const D = reference.base.config.hiddenSize;
    const perToken = ppoLoss({ clipLow: 0.2, clipHigh: 0.28, valueCoef: 0.5, valueClip: 0.2 });
    const lossOptions = { entropy: true, values: true, valueGradient };
    const makeParams = () => {
      const params = treeFromHost<WithValueHead<LoraParams>>(reference.adapter);
      params.value = {
        w: np.array(Float32Array.from({ length: D }, (_, i) => Math.sin(i + 1) * 0.3)),
        b: np.array(Float32Array.of(0.1)),
      };
      return params;
    };
    const withCritic = (batch: HfLoraBatch) => {
      const shape = [...batch.ids.shape];
      const size = shape[0] * shape[1];
      batch.extra.oldValues = np.array(
        Float32Array.from({ length: size }, (_, i) => Math.cos(i) * 0.2),
        { shape },
      );
      batch.extra.returns = np.array(
        Float32Array.from({ length: size }, (_, i) => ((i % 3) - 1) * 0.5),
        { shape },
      );
      return batch;
    };
    const params = makeParams();
    const got = await layered(reference, perToken, lossOptions, params, {
      headTokens: 8,
      groupTokens: 1,
      batch: withCritic(loraReferenceBatch(reference)),
    });
    const want = fusedLoraGradients(
      reference,
      perToken,
      lossOptions,
      makeParams(),
      withCritic(loraReferenceBatch(reference)),
    );
    assert.ok(Math.abs(got.loss - want.loss) <= 1e-5, `loss ${got.loss} vs ${want.loss}`);
    for (const [metric, value] of Object.entries(want.metrics))
      assert.ok(
        Math.abs(got.metrics[metric] - value) <= 1e-5,
        `${metric}: ${got.metrics[metric]} vs ${value}`,
      );
    assert.deepEqual([...got.grads.keys()].sort(), [...want.grads.keys()].sort());
    for (const [path, expected] of want.grads) {
      const error = maxAbsDiff(got.grads.get(path)!, expected);
      assert.ok(error <= 1e-5, `${path}: max |Δgrad| ${error}`);
    }
    // The value head's gradient is there and not zero; through the trunk it moves the adapter.
    assert.ok(Math.max(...[...got.grads.get("value.w")!].map(Math.abs)) > 1e-3);
    disposeTree(params as never);
  });
}

test("a trainer step with layered gradients (two micro-batches) moves the adapter as the fused program's step does", async () => {
  const reference = readLoraReference("qwen3-tied");
  const perToken = ppoLoss({ clipLow: reference.clip[0], clipHigh: reference.clip[1] });
  const step = async (layered: boolean) => {
    const trainer = createLoraTrainer(reference.base, reference.config, {
      loss: perToken,
      lossOptions: { entropy: true },
      layered,
    });
    const microBatch = () => {
      const { base, ...batch } = loraReferenceBatch(reference);
      disposeTree(base as never);
      return batch;
    };
    const state = trainer.init(treeFromHost<LoraParams>(reference.adapter));
    const [next, result] = await trainer.step(state, [microBatch(), microBatch()], 1e-2);
    const params = new Map(
      flattenTree(next.params as ParamTree).map(([path, leaf]) => [
        path,
        leaf.ref.dataSync() as Float32Array,
      ]),
    );
    trainer.dispose();
    return { params, result };
  };
  const fusedStep = await step(false);
  const layeredStep = await step(true);
  assert.ok(Math.abs(layeredStep.result.loss - fusedStep.result.loss) <= 1e-5);
  assert.ok(
    Math.abs(layeredStep.result.gradNorm - fusedStep.result.gradNorm) <= 1e-4 * fusedStep.result.gradNorm,
  );
  let moved = 0;
  for (const [path, want] of fusedStep.params) {
    assert.ok(maxAbsDiff(layeredStep.params.get(path)!, want) <= 1e-5, path);
    moved = Math.max(moved, maxAbsDiff(want, reference.adapter[path].data as Float32Array));
  }
  assert.ok(moved > 1e-3, `the step moved the adapter (${moved})`);
});
