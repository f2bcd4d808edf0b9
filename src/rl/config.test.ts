import assert from "node:assert/strict";
import { test } from "node:test";
import { rlConfigFrom } from "../cli/commands/train-rl.ts";
import { DEFAULT_RL_CONFIG, parseRlConfig, RL_ESTIMATORS } from "./config.ts";

test("defaults validate and partial configs merge over them", () => {
  assert.deepEqual(parseRlConfig({}), DEFAULT_RL_CONFIG);
  const config = parseRlConfig({ estimator: "gigpo", reward: "mt-grpo-noise-aware", steps: 5 });
  assert.equal(config.estimator, "gigpo");
  assert.equal(config.steps, 5);
  assert.equal(config.clipHigh, 0.28);
  assert.deepEqual(RL_ESTIMATORS, ["grpo", "dr-grpo", "rloo", "reinforce-pp", "mt-grpo", "gigpo", "gae"]);
});

test("a bad field is named and the valid values are listed", () => {
  const fails = (input: object, ...patterns: RegExp[]) => {
    try {
      parseRlConfig(input);
    } catch (error) {
      for (const pattern of patterns) assert.match((error as Error).message, pattern);
      return;
    }
    assert.fail(`accepted ${JSON.stringify(input)}`);
  };
  fails(
    { estimator: "ppo" },
    /estimator: unknown estimator "ppo"/,
    /"grpo", "dr-grpo", "rloo", "reinforce-pp", "mt-grpo", "gigpo", "gae"/,
  );
  assert.equal(parseRlConfig({ estimator: "gae" }).valueCoef, 0.5);
  fails(
    { estimator: "gae", valueCoef: 0 },
    /valueCoef: estimator "gae" trains a critic: valueCoef must be > 0, got 0/,
  );
  fails({ valueClip: 0 }, /valueClip: /);
  fails({ advantage: { lambda: 2 } }, /advantage.lambda: /);
  fails(
    { reward: "shaped" },
    /reward: unknown reward preset "shaped"; valid: "exact-match", "demyagent", "turn-credit", "turn-credit-noise-aware", "mt-grpo"/,
  );
  fails(
    { reward: { outcome: [{ name: "bleu" }] } },
    /reward: unknown outcome reward "bleu"; valid:/,
    /or a preset/,
  );
  fails(
    { aggregation: "seq-sum" },
    /aggregation: .*token-mean.*seq-mean-token-mean.*seq-mean-token-sum-norm/,
  );
  fails({ families: ["lookup", "trivia"] }, /families\.1: .*lookup.*bridge.*chain/);
  fails({ groupSize: 1 }, /groupSize:/);
  fails({ clipLow: 1.5 }, /clipLow:/);
  fails({ noise: { error: 0.7, empty: 0.6 } }, /noise: noise: rates must sum to at most 1/);
  fails({ noise: { loss: 0.1 } }, /noise:/);
  fails({ budgets: { maxTurn: 3 } }, /budgets: .*maxTurn/);
  fails({ learningRte: 1e-3 }, /learningRte/, /valid fields: .*learningRate/);
  fails(
    { taskIds: ["w1/lookup/pop/0"], taskFile: "tasks.jsonl" },
    /taskFile: give taskIds or taskFile, not both/,
  );
  fails({ klEstimator: "k2" }, /klEstimator: .*k1.*k3/);
  fails({ steps: 2, evalSamples: 1 }, /evalSamples/);
  assert.throws(() => parseRlConfig([]), /expected a JSON object/);
});

test("CLI flags override the config file and are validated", () => {
  const config = rlConfigFrom({
    runs: "runs",
    estimator: "mt-grpo",
    reward: "mt-grpo",
    families: "lookup, chain",
    steps: "12",
    groupSize: "4",
    noise: "0.1",
    klCoef: "0.05",
  });
  assert.equal(config.estimator, "mt-grpo");
  assert.deepEqual(config.families, ["lookup", "chain"]);
  assert.equal(config.steps, 12);
  assert.equal(config.groupSize, 4);
  assert.equal(config.noise, 0.1);
  assert.equal(config.klCoef, 0.05);
  assert.throws(
    () => rlConfigFrom({ runs: "runs", steps: "1.5" }),
    /--steps must be an integer >= 1, got "1.5"/,
  );
  assert.equal(rlConfigFrom({ runs: "runs", estimator: "gae" }).estimator, "gae");
  assert.throws(() => rlConfigFrom({ runs: "runs", estimator: "ppo" }), /unknown estimator "ppo"/);
});
