/**
 * agentrl's advantage estimators for verl (python/agentrl_adv_estimator.py) against the TypeScript
 * ones they port (src/rl/advantages/mt-grpo.ts, grpo.ts): random batches are generated here, laid
 * out as verl lays out a batch (token_level_rewards with the outcome on the last response token,
 * response_mask, uid, the loop's turn_scores / turn_spans / failure class in non_tensor_batch), and
 * run through the verl double's `compute_advantage` after `install()`. Also: without `install()`
 * verl hands the estimator no extra fields, and a step whose infra failure rate passes the
 * threshold stops.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { createRng, type Rng } from "../core/random.ts";
import { grpo } from "../rl/advantages/grpo.ts";
import { mtGrpo } from "../rl/advantages/mt-grpo.ts";
import type { AdvantageBatch, AdvantageOptions } from "../rl/advantages/types.ts";
import { runWithDouble } from "./testing.ts";

const dir = mkdtempSync(join(tmpdir(), "agentrl-adv-"));
after(() => rmSync(dir, { recursive: true, force: true }));

interface Sample {
  uid: string;
  outcome: number;
  /** Unscored: failed outside the policy. */
  infra: boolean;
  /** Its class when unscored: infra, or agent (a user's agent that threw); both leave the baselines. */
  failureClass?: "infra" | "agent";
  turnScores: number[];
  spans: [number, number][];
  mask: number[];
  turnIndex: number[];
}

/** A random verl batch: groups of 1-5 episodes, 1-4 turns each, observations between turns. */
function randomBatch(rng: Rng, responseLength: number): Sample[] {
  const samples: Sample[] = [];
  const groups = rng.range(1, 4);
  for (let g = 0; g < groups; g++) {
    const size = rng.range(1, 5);
    for (let e = 0; e < size; e++) {
      const turns = rng.range(1, 4);
      const mask: number[] = [];
      const turnIndex: number[] = [];
      const spans: [number, number][] = [];
      for (let t = 0; t < turns; t++) {
        const sampled = rng.range(1, 3);
        spans.push([mask.length, mask.length + sampled]);
        for (let k = 0; k < sampled; k++) {
          mask.push(1);
          turnIndex.push(t);
        }
        const observation = t < turns - 1 ? rng.range(0, 2) : 0;
        for (let k = 0; k < observation; k++) {
          mask.push(0);
          turnIndex.push(t);
        }
      }
      assert.ok(mask.length <= responseLength);
      samples.push({
        uid: `g${g}`,
        outcome: rng.chance(0.3) ? rng.next() * 2 - 0.5 : rng.pick([0, 1]),
        ...(rng.chance(0.1)
          ? { infra: true, failureClass: rng.pick(["infra", "agent"] as const) }
          : { infra: false }),
        turnScores: Array.from({ length: turns }, () => rng.pick([0, 0, 0.5, 1, -0.2, rng.next()])),
        spans,
        mask,
        turnIndex,
      });
    }
  }
  return samples;
}

function tsBatch(samples: readonly Sample[]): AdvantageBatch {
  return {
    episodes: samples.map((sample) => ({
      group: sample.uid,
      outcomeReward: sample.infra ? null : sample.outcome,
      turnRewards: sample.turnScores,
      turnIndex: sample.turnIndex,
      lossMask: sample.mask,
    })),
  };
}

/** verl's view of the batch: padded rows, the outcome on the last response token (an infra sample's is 0). */
function verlBatch(samples: readonly Sample[], responseLength: number) {
  const pad = (row: number[]) => [...row, ...new Array(responseLength - row.length).fill(0)];
  return {
    token_level_rewards: samples.map((sample) =>
      pad(sample.mask.map((_, i) => (i === sample.mask.length - 1 && !sample.infra ? sample.outcome : 0))),
    ),
    response_mask: samples.map((sample) => pad(sample.mask)),
    non_tensor_batch: {
      uid: samples.map((sample) => sample.uid),
      turn_scores: samples.map((sample) => sample.turnScores),
      turn_spans: samples.map((sample) => sample.spans),
      agentrl_failure_class: samples.map((sample) => sample.failureClass ?? (sample.infra ? "infra" : "")),
      agentrl_correct: samples.map((sample) => sample.outcome === 1),
      agentrl_prefix_breaks: samples.map(() => 0),
      agentrl_truncated: samples.map(() => false),
    },
  };
}

const RUN_ESTIMATOR = `
import json, sys
from verl.protocol import DataProto
from verl.tensor import Tensor
from verl.trainer.ppo import ray_trainer
import agentrl_adv_estimator
agentrl_adv_estimator.install()
spec = json.load(sys.stdin)
out = []
for case in spec["cases"]:
    b = case["batch"]
    data = DataProto({"token_level_rewards": Tensor(b["token_level_rewards"]), "response_mask": Tensor(b["response_mask"])},
                     dict(b["non_tensor_batch"]), {})
    ray_trainer.compute_advantage(data, adv_estimator=case["name"], config={"norm_adv_by_std_in_grpo": case["normalize"]})
    out.append(data.batch["advantages"].tolist())
print(json.dumps(out))`;

function lastLine(stdout: string): unknown {
  return JSON.parse(stdout.trim().split("\n").at(-1) ?? "null");
}

function assertClose(actual: readonly number[], expected: ArrayLike<number>, where: string) {
  assert.equal(actual.length, expected.length, where);
  for (let i = 0; i < actual.length; i++) {
    const tolerance = 1e-5 * Math.max(1, Math.abs(expected[i]));
    assert.ok(
      Math.abs(actual[i] - expected[i]) <= tolerance,
      `${where} token ${i}: ${actual[i]} vs ${expected[i]}`,
    );
  }
}

test("agentrl_mt_grpo and agentrl_grpo in verl give the TypeScript estimators' advantages on random batches", async () => {
  const rng = createRng(27);
  const responseLength = 24;
  const settings: {
    name: string;
    normalize: boolean;
    options: AdvantageOptions;
    env: Record<string, string>;
  }[] = [
    { name: "agentrl_mt_grpo", normalize: true, options: {}, env: {} },
    {
      name: "agentrl_mt_grpo",
      normalize: false,
      options: { normalization: "none", turnWeight: 0.5, turnDiscount: 0.9 },
      env: { AGENTRL_TURN_WEIGHT: "0.5", AGENTRL_TURN_DISCOUNT: "0.9" },
    },
    { name: "agentrl_grpo", normalize: true, options: {}, env: {} },
  ];
  for (const setting of settings) {
    const batches = Array.from({ length: 40 }, () => randomBatch(rng, responseLength));
    const cases = batches.map((samples) => ({
      name: setting.name,
      normalize: setting.normalize,
      batch: verlBatch(samples, responseLength),
    }));
    // The last line: the estimator logs each step's metrics on stdout before it.
    const python = lastLine(
      await runWithDouble(
        RUN_ESTIMATOR,
        { cases },
        { env: { ...setting.env, AGENTRL_MAX_INFRA_FAILURE_RATE: "1" } },
      ),
    ) as number[][][];
    batches.forEach((samples, b) => {
      const estimator = setting.name === "agentrl_mt_grpo" ? mtGrpo : grpo;
      const expected = estimator(tsBatch(samples), setting.options).advantages;
      samples.forEach((sample, i) => {
        const where = `${setting.name} ${JSON.stringify(setting.options)} batch ${b} sample ${i}`;
        assertClose(python[b][i].slice(0, sample.mask.length), expected[i], where);
        assert.ok(
          python[b][i].slice(sample.mask.length).every((value) => value === 0),
          `${where}: padding gets 0`,
        );
      });
    });
    // The check can fail: some advantages are far from 0 and some samples are infra (all 0).
    const flat = batches.flatMap((samples) => estimatorFlat(setting.name, samples, setting.options));
    assert.ok(
      flat.some((value) => Math.abs(value) > 0.5),
      `${setting.name}: non-trivial advantages`,
    );
    assert.ok(
      batches.some((samples) => samples.some((sample) => sample.infra)),
      "infra samples occur",
    );
  }
});

function estimatorFlat(name: string, samples: Sample[], options: AdvantageOptions): number[] {
  const estimator = name === "agentrl_mt_grpo" ? mtGrpo : grpo;
  return estimator(tsBatch(samples), options).advantages.flatMap((row) => [...row]);
}

test("without install() verl passes the estimator no extra fields: it says so instead of guessing", async () => {
  const code = `
import json, sys
from verl.protocol import DataProto
from verl.tensor import Tensor
from verl.trainer.ppo import core_algos, ray_trainer
import agentrl_adv_estimator
core_algos.register_adv_est("agentrl_mt_grpo")(agentrl_adv_estimator.compute_agentrl_mt_grpo_advantage)
data = DataProto({"token_level_rewards": Tensor([[1.0]]), "response_mask": Tensor([[1]])}, {"uid": ["a"], "turn_scores": [[0.0]], "turn_spans": [[[0, 1]]]}, {})
try:
    ray_trainer.compute_advantage(data, adv_estimator="agentrl_mt_grpo")
    print("computed")
except RuntimeError as error:
    print(error)`;
  assert.match(await runWithDouble(code, {}), /verl passed no non_tensor_batch \(it does so only for gdpo\)/);
});

test("a step whose infra failure rate passes the threshold stops the job; every step's metrics are logged", async () => {
  const metrics = join(dir, "steps.jsonl");
  const samples = (infra: number) =>
    Array.from({ length: 10 }, (_, i) => ({
      uid: "g",
      outcome: i % 2,
      infra: i < infra,
      turnScores: [0],
      spans: [[0, 1]] as [number, number][],
      mask: [1],
      turnIndex: [0],
    }));
  const run = (infra: number) =>
    runWithDouble(
      RUN_ESTIMATOR,
      { cases: [{ name: "agentrl_grpo", normalize: true, batch: verlBatch(samples(infra), 4) }] },
      { env: { AGENTRL_MAX_INFRA_FAILURE_RATE: "0.2", AGENTRL_STEP_METRICS: metrics } },
    );
  await run(2);
  await assert.rejects(
    run(3),
    /InfraFailureRateExceeded: agentrl: 30\.0% of this step's samples failed outside the policy/,
  );
  const lines = readFileSync(metrics, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
  assert.equal(lines.length, 2);
  assert.equal(lines[0]["agentrl/failure_rate/infra"], 0.2);
  assert.equal(lines[1]["agentrl/failure_rate/infra"], 0.3);
  // The others: the odd outcomes are 1 (correct); the even ones not infra are policy failures.
  assert.equal(lines[0]["agentrl/failure_rate/policy"], 0.4);
  assert.equal(lines[0]["agentrl/samples"], 10);
});

test("install() as Ray's setup hook imports nothing of verl; the trainer is patched when it loads", async () => {
  const code = `
import json, sys
import agentrl_adv_estimator
agentrl_adv_estimator.install()
loaded = sorted(name for name in sys.modules if name.startswith("verl"))
from verl.trainer.ppo import core_algos, ray_trainer
print(json.dumps({"loaded": loaded, "wrapped": getattr(ray_trainer.compute_advantage, "_agentrl_wrapped", False),
                  "registered": sorted(k for k in core_algos.ADV_ESTIMATOR_REGISTRY if k.startswith("agentrl"))}))`;
  const result = JSON.parse(await runWithDouble(code, {}));
  assert.deepEqual(result, { loaded: [], wrapped: true, registered: ["agentrl_grpo", "agentrl_mt_grpo"] });
});
