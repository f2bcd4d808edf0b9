import assert from "node:assert/strict";
import { test } from "node:test";
import { keyFromSeed } from "../engine/init.ts";
import { np } from "../engine/jax.ts";
import { adamw } from "../engine/optim.ts";
import { createTrainer } from "../engine/train.ts";
import { disposeTree, treeToHost } from "../engine/tree.ts";
import { makeTokenBatches, type TokenSequence } from "../policy/embedded/batch.ts";
import type { GptConfig } from "../policy/embedded/config.ts";
import type { TokenBatch } from "../policy/embedded/losses.ts";
import { tokenLoss } from "../policy/embedded/losses.ts";
import { type GptParams, initGpt } from "../policy/embedded/model.ts";
import { scoreTokens } from "../policy/embedded/score.ts";
import { klPenalty, ppoLoss } from "./loss.ts";

async function values(x: ReturnType<typeof np.array>): Promise<number[]> {
  return [...(await x.data())];
}

function near(actual: number, expected: number, tolerance = 1e-5, label = "") {
  assert.ok(Math.abs(actual - expected) <= tolerance, `${label} ${actual} != ${expected}`);
}

test("ppoLoss: the worked example on 3 tokens (clip 0.2 / 0.28, token mean)", async () => {
  // Token 1: r = 1.5, A = +1 → clipped at 1 + 0.28: −min(1.5, 1.28) = −1.28 (clipped).
  // Token 2: r = 0.7, A = −1 → clip(0.7) = 0.8: −min(−0.7, −0.8) = 0.8 (clipped).
  // Token 3: r = 1.1, A = +2 → inside the range: −2.2.
  // Token mean: (−1.28 + 0.8 − 2.2) / 3 = −0.89333. Clip fraction 2/3.
  // kl_old = (r − 1) − log r: 0.094535, 0.056675, 0.004690 → mean 0.051967.
  const logprobs = [-1, -2, -0.5];
  const ratios = [1.5, 0.7, 1.1];
  const third = [1 / 3, 1 / 3, 1 / 3];
  const out = ppoLoss({ clipLow: 0.2, clipHigh: 0.28 })(
    { logprobs: np.array(logprobs), entropy: np.array([1, 2, 3]) },
    {
      oldLogprobs: np.array(logprobs.map((lp, i) => lp - Math.log(ratios[i]))),
      advantages: np.array([1, -1, 2]),
      lossScale: np.array(third),
      metricScale: np.array(third),
    },
  );
  const perToken = await values(out.loss);
  for (const [i, expected] of [-1.28, 0.8, -2.2].entries())
    near(perToken[i] * 3, expected, 1e-5, `token ${i}`);
  near(
    perToken.reduce((a, b) => a + b, 0),
    -0.893333,
    1e-5,
    "loss",
  );
  const metric = async (name: string) => (await values(out.metrics![name])).reduce((a, b) => a + b, 0);
  near(await metric("policy/clip_fraction"), 2 / 3, 1e-6, "clip fraction");
  near(await metric("policy/kl_old"), 0.051967, 1e-5, "kl_old");
  near(await metric("policy/entropy"), 2, 1e-6, "entropy");
  near(await metric("policy/ratio"), (1.5 + 0.7 + 1.1) / 3, 1e-5, "ratio");
  near(await metric("loss/policy"), -0.893333, 1e-5, "loss/policy");
});

test("ppoLoss: symmetric clipping cuts r = 1.25 at 1.2, clip-higher 0.28 lets it through", async () => {
  const run = async (clipHigh: number) => {
    const out = ppoLoss({ clipLow: 0.2, clipHigh })(
      { logprobs: np.array([0]), entropy: np.array([0]) },
      {
        oldLogprobs: np.array([-Math.log(1.25)]),
        advantages: np.array([1]),
        lossScale: np.array([1]),
        metricScale: np.array([1]),
      },
    );
    for (const metric of Object.values(out.metrics!)) metric.dispose();
    return (await values(out.loss))[0];
  };
  near(await run(0.2), -1.2);
  near(await run(0.28), -1.25);
});

test("KL estimators and the penalty/entropy terms, by hand", async () => {
  // logp = −1, ref = −1.5: k1 = 0.5; k3 = exp(−0.5) − (−0.5) − 1 = 0.106531.
  near((await values(klPenalty(np.array([-1]), np.array([-1.5]), "k1")))[0], 0.5);
  near((await values(klPenalty(np.array([-1]), np.array([-1.5]), "k3")))[0], 0.106531);
  // k3 is guarded: an extreme difference stays finite (clipped to 10).
  near((await values(klPenalty(np.array([-200]), np.array([0]), "k3")))[0], 10);
  // r = 1, A = 0.5: pg = −0.5; + 0.1·k3 (0.106531) − 0.01·H (H = 2) = −0.509347.
  const out = ppoLoss({ klCoef: 0.1, klEstimator: "k3", entropyCoef: 0.01 })(
    { logprobs: np.array([-1]), entropy: np.array([2]) },
    {
      oldLogprobs: np.array([-1]),
      advantages: np.array([0.5]),
      lossScale: np.array([1]),
      metricScale: np.array([1]),
      refLogprobs: np.array([-1.5]),
    },
  );
  near((await values(out.loss))[0], -0.5 + 0.0106531 - 0.02);
  near((await values(out.metrics!["policy/kl_ref"]))[0], 0.106531);
  for (const [name, metric] of Object.entries(out.metrics!)) if (name !== "policy/kl_ref") metric.dispose();
});

// ---- with a real (tiny) GPT: masking, micro-batching ------------------------------------------------

const config: GptConfig = { vocabSize: 24, dModel: 16, nLayers: 1, nHeads: 2, dFF: 32, maxLen: 32 };

/** Seeded sequences with a prompt (mask 0), policy tokens, an observation and a trailing observation. */
function sequences(seed: number): TokenSequence[] {
  let s = seed;
  const rand = () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
  return Array.from({ length: 5 }, (_, row) => {
    const length = 12 + row * 3;
    const ids = Array.from({ length }, () => Math.floor(rand() * config.vocabSize));
    // prompt 0..3, policy 4..7, observation 8..9, policy 10..length-4, trailing observation (3 tokens).
    const mask: number[] = ids.map((_, t) => ((t >= 4 && t < 8) || (t >= 10 && t < length - 3) ? 1 : 0));
    const policyTokens = mask.reduce((a, b) => a + b, 0);
    return {
      ids,
      mask,
      extra: {
        oldLogprobs: ids.map((_, t) => (mask[t] ? -3 - rand() : 0)),
        advantages: ids.map((_, t) => (mask[t] ? rand() * 2 - 1 : 0)),
        lossScale: mask.map((m) => (m ? 1 / (5 * policyTokens) : 0)),
        metricScale: mask.map((m) => m / 100),
      },
    };
  });
}

async function lossAndGrads(params: GptParams, batch: TokenSequence[], rows?: number, bucketTokens?: number) {
  const trainer = createTrainer<GptParams, TokenBatch>({
    loss: tokenLoss(config, ppoLoss({ klCoef: 0 }), { temperature: 0.8, entropy: true }),
    jit: false,
  });
  const micro = makeTokenBatches(batch, {
    maxLen: config.maxLen,
    normalization: "sum",
    microBatchSize: rows,
    ...(bucketTokens ? { lengthBuckets: true, maxTokensPerMicroBatch: bucketTokens } : {}),
  });
  const { loss, grads } = await trainer.gradients(params, micro);
  const host = await treeToHost(grads);
  disposeTree(grads);
  trainer.dispose();
  return { loss, grads: Object.values(host).map((tensor) => Array.from(tensor.data)) };
}

function maxDifference(a: number[][], b: number[][]): number {
  let worst = 0;
  a.forEach((leaf, i) => {
    leaf.forEach((value, j) => {
      worst = Math.max(worst, Math.abs(value - b[i][j]));
    });
  });
  return worst;
}

test("masked tokens change neither the loss nor the gradient", async () => {
  const params = initGpt(config, keyFromSeed(5));
  const original = sequences(1);
  // Under mask 0: garbage old log-probs and advantages everywhere, new ids in the trailing
  // observation (nothing after it is predicted, so it conditions no policy token).
  const changed = original.map((sequence) => {
    const mask = sequence.mask!;
    const length = sequence.ids.length;
    return {
      ids: sequence.ids.map((id, t) => (t >= length - 3 ? (id + 7) % config.vocabSize : id)),
      mask,
      extra: {
        ...sequence.extra,
        oldLogprobs: sequence.extra!.oldLogprobs.map((value, t) => (mask[t] ? value : 50 + t)),
        advantages: sequence.extra!.advantages.map((value, t) => (mask[t] ? value : -1e4 * (t + 1))),
      },
    };
  });
  const a = await lossAndGrads(params, original);
  const b = await lossAndGrads(params, changed);
  assert.ok(Number.isFinite(a.loss) && a.loss !== 0);
  assert.equal(b.loss, a.loss);
  assert.equal(maxDifference(a.grads, b.grads), 0);
  // A change ON the mask does change the loss (the test can fail).
  const onMask = original.map((sequence) => ({
    ...sequence,
    extra: { ...sequence.extra, advantages: sequence.extra!.advantages.map((v, t) => (t === 5 ? v + 1 : v)) },
  }));
  assert.notEqual((await lossAndGrads(params, onMask)).loss, a.loss);
  disposeTree(params);
});

test("micro-batched gradients equal the whole-batch gradient", async () => {
  const params = initGpt(config, keyFromSeed(6));
  const batch = sequences(2);
  const whole = await lossAndGrads(params, batch, 5);
  const micro = await lossAndGrads(params, batch, 2); // 3 micro-batches, the last padded
  near(micro.loss, whole.loss, 1e-6, "loss");
  assert.ok(
    maxDifference(whole.grads, micro.grads) < 1e-6,
    `max grad difference ${maxDifference(whole.grads, micro.grads)}`,
  );
  assert.ok(whole.grads.some((leaf) => leaf.some((value) => value !== 0)));
  disposeTree(params);
});

test("length-bucketed micro-batches give the whole-batch loss and gradient", async () => {
  const params = initGpt(config, keyFromSeed(6));
  const batch = sequences(2); // 12, 15, 18, 21 and 24 tokens: T 16 and 32
  const whole = await lossAndGrads(params, batch, 5);
  const bucketed = await lossAndGrads(params, batch, undefined, 64);
  near(bucketed.loss, whole.loss, 1e-6, "loss");
  const difference = maxDifference(whole.grads, bucketed.grads);
  assert.ok(difference < 1e-6, `max grad difference ${difference}`);
  disposeTree(params);
});

test("one update raises the log-probs of positive-advantage tokens and lowers the negative ones", async () => {
  const params = initGpt(config, keyFromSeed(8));
  const trainer = createTrainer<GptParams, TokenBatch>({
    loss: tokenLoss(config, ppoLoss(), { temperature: 1, entropy: true }),
    optimizer: adamw({ weightDecay: 0 }),
  });
  // Two sequences; old log-probs are the current ones (ratio 1), advantages +1 and −1.
  const ids = [
    [1, 2, 3, 4, 5, 6, 7, 8],
    [1, 2, 3, 9, 10, 11, 12, 13],
  ];
  const mask = [0, 0, 0, 1, 1, 1, 1, 1];
  const before = await scoreTokens(params, config, ids);
  const sequences = ids.map((row, i) => ({
    ids: row,
    mask,
    extra: {
      oldLogprobs: Array.from(before.logprobs[i], (lp, t) => (mask[t] ? lp : 0)),
      advantages: mask.map((m) => m * (i === 0 ? 1 : -1)),
      lossScale: mask.map((m) => m / 10),
      metricScale: mask.map((m) => m / 10),
    },
  }));
  const [state] = await trainer.step(
    trainer.init(params),
    makeTokenBatches(sequences, { maxLen: config.maxLen, normalization: "sum" }),
    1e-3,
  );
  const after = await scoreTokens(state.params, config, ids);
  const policySum = (logprobs: Float32Array) => logprobs.reduce((sum, lp, t) => sum + (mask[t] ? lp : 0), 0);
  assert.ok(policySum(after.logprobs[0]) > policySum(before.logprobs[0]), "A = +1: log-probs rise");
  assert.ok(policySum(after.logprobs[1]) < policySum(before.logprobs[1]), "A = −1: log-probs fall");
  disposeTree(state.params);
  disposeTree(state.opt as never);
  trainer.dispose();
});

test("ppoLoss: the clipped value loss, worked example on 3 tokens (c = 0.5, c_v = 2)", async () => {
  // Token 1: V = 1.0, V_old = 0.2, R = 1.0: clip(V) = 0.7, max((0)², (−0.3)²)/2 = 0.045 (clipped).
  // Token 2: V = 0.4, V_old = 0.2, R = 1.0: inside the range, (−0.6)²/2 = 0.18.
  // Token 3: V = −0.5, V_old = 0.5, R = 0: clip(V) = 0, max(0.25, 0)/2 = 0.125 (unclipped is larger).
  // Mean vf 0.35/3 = 0.116667; the loss adds c_v · vf = 0.233333 (A = 0: no policy term).
  const third = [1 / 3, 1 / 3, 1 / 3];
  const out = ppoLoss({ valueCoef: 2, valueClip: 0.5 })(
    { logprobs: np.array([-1, -1, -1]), entropy: np.array([0, 0, 0]), values: np.array([1, 0.4, -0.5]) },
    {
      oldLogprobs: np.array([-1, -1, -1]),
      advantages: np.array([0, 0, 0]),
      lossScale: np.array(third),
      metricScale: np.array(third),
      oldValues: np.array([0.2, 0.2, 0.5]),
      returns: np.array([1, 1, 0]),
    },
  );
  const perToken = await values(out.loss);
  for (const [i, expected] of [0.045, 0.18, 0.125].entries())
    near(perToken[i] * 3, 2 * expected, 1e-5, `token ${i}`);
  const metric = async (name: string) => (await values(out.metrics![name])).reduce((a, b) => a + b, 0);
  near(await metric("value/loss"), 0.35 / 3, 1e-6, "value/loss");
  near(await metric("value/clip_fraction"), 1 / 3, 1e-6, "value/clip_fraction");
  near(await metric("value/mean"), (1 + 0.4 - 0.5) / 3, 1e-6, "value/mean");
  for (const name of Object.keys(out.metrics!).filter((name) => !name.startsWith("value/")))
    out.metrics![name].dispose();
  // Without a critic the value extras are not needed; with one they are.
  assert.throws(
    () =>
      ppoLoss({ valueCoef: 1 })(
        { logprobs: np.array([0]), entropy: np.array([0]) },
        {
          oldLogprobs: np.array([0]),
          advantages: np.array([0]),
          lossScale: np.array([1]),
          metricScale: np.array([1]),
        },
      ),
    /valueCoef > 0 needs stats.values/,
  );
});
