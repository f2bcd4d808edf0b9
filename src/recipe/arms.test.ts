import assert from "node:assert/strict";
import { test } from "node:test";
import type { TaskCount } from "../eval/task-counts.ts";
import type { Verdict } from "./analysis.ts";
import { type ArmSpec, armSpecs, comparedRuns, gateOnArms, measureArm, measureArms } from "./arms.ts";
import { learnedCell, learnedSummary } from "./arms-report.ts";
import { parseRecipeConfig } from "./config.ts";
import type { ReportContext } from "./experiments/context.ts";
import { creditExperiment } from "./experiments/credit.ts";
import { creditEvalStageName, creditStageName, isReplicated, replicaStage } from "./pipeline.ts";
import type { EvalStageResult, RlStageResult } from "./stage-runs.ts";

/** `tasks` tasks of n samples with c(i) correct each. */
const counts = (tasks: number, n: number, c: (i: number) => number): TaskCount[] =>
  Array.from({ length: tasks }, (_, i) => ({
    taskId: `t${i}`,
    family: "chain",
    n,
    c: c(i),
    policyErrors: 0,
  }));

const spec = (start: TaskCount[], end: TaskCount[]): ArmSpec => ({
  run: "credit-grpo",
  family: "chain",
  estimator: "grpo",
  startStage: () => "credit-eval-base",
  endStage: () => "credit-eval-grpo",
  startCounts: () => start,
  endCounts: () => end,
});

test("an arm learned when end − start, paired over its tasks, has its interval above 0", () => {
  // 4 tasks × 4 samples: start 1/4 on each; end 3/4 on each → +0.5 on every task, interval [0.5, 0.5]
  const up = measureArm(
    spec(
      counts(4, 4, () => 1),
      counts(4, 4, () => 3),
    ),
    0,
    [1],
    0,
  );
  assert.equal(up.start, 0.25);
  assert.equal(up.end, 0.75);
  assert.equal(up.difference?.mean, 0.5);
  assert.equal(up.learned, true);
  assert.equal(up.stage, "credit-grpo");
  // at the second seed the stage is the replica's; a run that fell is not learned
  const down = measureArm(
    spec(
      counts(4, 4, () => 2),
      counts(4, 4, () => 1),
    ),
    1,
    [1, 2],
    0,
  );
  assert.equal(down.stage, "credit-grpo@s2");
  assert.equal(down.seed, 2);
  assert.equal(down.difference?.mean, -0.25);
  assert.equal(down.learned, false);
  // one task up by 1, three unchanged: the mean is +0.25 but a resample of only unchanged tasks is
  // 0, so the interval touches 0 and the arm is not called learned
  const one = measureArm(
    spec(
      counts(4, 4, () => 0),
      counts(4, 4, (i) => (i === 0 ? 4 : 0)),
    ),
    0,
    [1],
    0,
  );
  assert.equal(one.difference?.mean, 0.25);
  assert.equal(one.difference?.interval.lower, 0);
  assert.equal(one.learned, false);
  // its start solved none of the tasks: flagged, as an arm that cannot learn by construction
  assert.equal(one.startSolvedNone, true);
  assert.equal(up.startSolvedNone, false);
  assert.equal(down.startSolvedNone, false);
});

test("the learned count sets apart arms whose start solves none of their tasks", () => {
  const start0 = counts(4, 4, () => 0);
  const arm = (run: string, start: TaskCount[], end: TaskCount[]) => ({
    ...measureArm(spec(start, end), 0, [1], 0),
    run,
  });
  const arms = [
    arm(
      "credit-grpo",
      counts(4, 4, () => 1),
      counts(4, 4, () => 3),
    ),
    arm(
      "credit-gigpo",
      counts(4, 4, () => 2),
      counts(4, 4, () => 1),
    ),
    arm("rl-weak", start0, start0),
  ];
  assert.deepEqual(
    arms.map((a) => learnedCell(a)),
    ["yes", "NO", "no (start solves none)"],
  );
  assert.match(
    learnedSummary(arms),
    /^1 of the 2 arm-seeds that could learn did; 1 more \(rl-weak\) start from/,
  );
  assert.equal(learnedSummary(arms.slice(0, 2)), "1 of 2 arm-seeds learned");
});

test("gateOnArms: a comparison whose arm did not learn at a seed is inconclusive, naming the arm and seed", () => {
  const verdict = (id: string): Verdict => ({
    id,
    experiment: "credit",
    claim: id,
    status: "reproduced",
    evidence: "e",
    seeds: [0.1, 0.1],
    difference: { mean: 0.1, interval: { lower: 0.05, upper: 0.15 }, tasks: 4 },
    smallerThanMargin: true,
  });
  const arms = [
    measureArm(
      spec(
        counts(4, 4, () => 1),
        counts(4, 4, () => 3),
      ),
      0,
      [1, 2],
      0,
    ),
    measureArm(
      spec(
        counts(4, 4, () => 2),
        counts(4, 4, () => 1),
      ),
      1,
      [1, 2],
      0,
    ),
  ];
  const verdicts = gateOnArms([verdict("mt-grpo-beats-grpo"), verdict("credit-fidelity")], arms, {
    "mt-grpo-beats-grpo": ["credit-mt-grpo", "credit-grpo"],
  });
  assert.equal(verdicts[0].status, "inconclusive");
  assert.match(verdicts[0].cause ?? "", /^arms did not learn: credit-grpo at seed 2 \(0\.500 → 0\.250/);
  assert.doesNotMatch(verdicts[0].cause ?? "", /seed 1/, "the seed that learned is not named");
  assert.equal(verdicts[0].smallerThanMargin, undefined);
  assert.match(verdicts[0].evidence, /the difference alone would say reproduced/);
  assert.equal(verdicts[1].status, "reproduced", "a claim that compares no arms is not gated");
});

test("a report whose GRPO arm did not learn calls MT-GRPO − GRPO inconclusive: arms did not learn", async () => {
  const config = parseRecipeConfig({ seeds: 2, credit: { estimators: ["grpo", "mt-grpo"] } }, "quick");
  const seeds = [config.seed, config.seed + 1];
  const tasks = 12;
  const evalOf = (c: (i: number) => number): EvalStageResult =>
    ({ counts: counts(tasks, 6, c), curves: { overall: [], templates: {} } }) as unknown as EvalStageResult;
  const rl = (estimator: string): RlStageResult => ({
    modelDir: "m",
    directory: "d",
    runId: "r",
    estimator,
    reward: config.credit.reward,
    steps: config.credit.steps,
    episodes: 0,
    skipped: { nonfinite: [], noSignal: [] },
    boundary: [
      { step: 0, passAt1: 0.3, passAtK: 0.5, k: 2 },
      { step: config.credit.steps, passAt1: 0.4, passAtK: 0.6, k: 2 },
    ],
    sharpening: [],
    history: { "reward/mean": [[1, 0.3]], "rollout/tool_calls_per_episode": [[1, 3]] },
    seconds: 1,
  });
  // the base solves 2 or 3 of 6 on each task; MT-GRPO learned at both seeds (5 of 6); GRPO learned
  // at seed 1 (4 of 6) and fell at seed 2 (1 of 6): MT-GRPO − GRPO is large and positive at both
  const results: Record<string, unknown> = {
    // the runs' task pool (credit.select): what the section says they trained on
    "credit-select": {
      directory: "d",
      taskIds: ["t1", "t2", "t3"],
      candidates: 16,
      zeroVarianceBefore: 0.8,
      zeroVarianceAfter: null,
      dropped: { unsolved: 12, alwaysSolved: 1 },
    },
  };
  const base = (i: number) => 2 + (i % 2);
  for (const r of [0, 1]) {
    // the base's two evaluations differ by their sampling: 2 or 3 of 6 on a task, the other way round
    results[replicaStage(creditEvalStageName("base"), r)] = evalOf((i) => base(i + r));
    results[replicaStage(creditEvalStageName("mt-grpo"), r)] = evalOf(() => 5);
    results[replicaStage(creditEvalStageName("grpo"), r)] = evalOf(r === 0 ? () => 4 : () => 1);
    results[replicaStage(creditStageName("grpo"), r)] = rl("grpo");
    results[replicaStage(creditStageName("mt-grpo"), r)] = rl("mt-grpo");
  }
  const get = <T>(name: string) => {
    assert.ok(name in results, `the test has no stage ${name}`);
    return results[name] as T;
  };
  const at = <T>(name: string, r: number) => {
    const stage = isReplicated(name, config) ? replicaStage(name, r) : name;
    return { name: stage, result: get<T>(stage) };
  };
  const arms = measureArms(
    armSpecs(config, at).filter((arm) => arm.run.startsWith("credit-")),
    seeds,
    config.seed,
  );
  assert.deepEqual(
    arms.map((arm) => [arm.run, arm.seed, arm.learned]),
    [
      ["credit-grpo", 1, true],
      ["credit-grpo", 2, false],
      ["credit-mt-grpo", 1, true],
      ["credit-mt-grpo", 2, true],
    ],
  );
  // the start is the same untrained base at both seeds: its pass@1 pools both evaluations, 5 of 12 on every task
  for (const arm of arms) assert.ok(Math.abs(arm.start! - 5 / 12) < 1e-12, `${arm.stage} start ${arm.start}`);
  const context = {
    config,
    results,
    get,
    evals: { base: evalOf(base) },
    n: config.eval.n,
    seed: config.seed,
    margin: config.margin,
    seeds,
    replicas: <T>(name: string) => [0, 1].map((r) => at<T>(name, r).result),
    examplesOf: () => [],
    armGate: { arms, compared: comparedRuns(config) },
  } as unknown as ReportContext;
  const part = await creditExperiment(context);
  const setup = part.sections[0].blocks[0];
  assert.ok(setup.type === "paragraph");
  assert.match(
    setup.text,
    /on the same 3 chain train tasks the strong base solved sometimes in 2 samples \(of 16 candidates; 12 never solved, 1 always\)/,
  );
  const claim = part.verdicts.find((v) => v.id === "mt-grpo-beats-grpo")!;
  // the difference alone would call it reproduced: +1/6 at seed 1, +4/6 at seed 2
  assert.ok(claim.difference && claim.difference.interval.lower > 0, "the difference lies above 0");
  assert.equal(claim.status, "inconclusive");
  assert.match(claim.cause ?? "", /^arms did not learn: credit-grpo at seed 2 /);
  // without the gate the same numbers are reproduced: the gate, not the difference, decided it
  const ungated = await creditExperiment({ ...context, armGate: { arms: [], compared: {} } });
  assert.equal(ungated.verdicts.find((v) => v.id === "mt-grpo-beats-grpo")!.status, "reproduced");
});
