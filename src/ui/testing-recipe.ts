/**
 * A recipe output folder for the dashboard's tests, shaped like `agentrl recipe`'s (stages/<stage>/run
 * /store.sqlite, `<stage>@s2` for the second seed, report.json beside them) but written directly, as
 * test-runs.ts writes runs: two credit arms (GRPO, MT-GRPO) trained at two seeds with their curves,
 * each checkpoint's evaluation with pass@k and an episode, the base's evaluation, and a report with
 * three claims (one from before claims recorded their stages) and `arms[]` in both spellings of a
 * difference.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRunDirectory } from "../store/index.ts";
import { richTrajectory } from "../store/test-trajectories.ts";

export interface TestRecipe {
  /** The runs folder holding the recipe folder `recipe`. */
  root: string;
  /** The recipe folder, relative to the root. */
  path: string;
  /** Stage names with runs, every seed's. */
  stages: string[];
  close(): void;
}

/** GiGPO is in the experiment but not the MT-GRPO claim: the claim page must leave it out. */
const ARMS = ["grpo", "mt-grpo", "gigpo"] as const;
const SEEDS = 2;
const at = (stage: string, r: number) => (r === 0 ? stage : `${stage}@s${r + 1}`);

export function createTestRecipe(): TestRecipe {
  const folder = mkdtempSync(join(tmpdir(), "agentrl-ui-recipe-"));
  const root = join(folder, "runs");
  const out = join(root, "recipe");
  const stagesDir = join(out, "stages");
  const stages: string[] = [];
  const run = (stage: string, kind: "rl" | "eval", config: object) => {
    stages.push(stage);
    return createRunDirectory({ root: join(stagesDir, stage), id: "run", kind, config });
  };
  for (let r = 0; r < SEEDS; r++) {
    for (const estimator of ARMS) {
      const trainer = at(`credit-${estimator}`, r);
      const rl = run(trainer, "rl", {
        estimator,
        families: ["chain"],
        base: "models/base-strong",
        out: join(stagesDir, trainer, "model"),
      });
      for (let step = 1; step <= 3; step++)
        rl.store.addMetrics(rl.run.id, step, {
          "reward/mean": step / 10 + r / 100,
          "rollout/pass@1": step / 20,
        });
      rl.store.finishRun(rl.run.id, "completed", {});
      rl.store.close();
      const evaluation = run(at(`credit-eval-${estimator}`, r), "eval", {
        policy: join(stagesDir, trainer, "model"),
      });
      evaluation.store.addMetrics(evaluation.run.id, 0, {
        "eval/pass@1": 0.2 + r / 10,
        "eval/pass@2": 0.3 + r / 10,
        "eval/pass@4": 0.4 + r / 10,
      });
      evaluation.store.addTrajectory(evaluation.run.id, richTrajectory());
      evaluation.store.finishRun(evaluation.run.id, "completed", {});
      evaluation.store.close();
    }
  }
  const base = run("eval-base-strong", "eval", { policy: "models/base-strong" });
  base.store.addMetrics(base.run.id, 0, { "eval/pass@1": 0.1, "eval/pass@2": 0.2 });
  base.store.finishRun(base.run.id, "completed", {});
  base.store.close();

  const difference = { mean: 0.05, interval: { lower: 0.01, upper: 0.09 }, tasks: 12 };
  const report = {
    version: 1,
    preset: "test",
    config: { seed: 1, seeds: SEEDS },
    createdAt: "2026-01-01T00:00:00.000Z",
    verdicts: [
      {
        id: "mt-grpo-beats-grpo",
        experiment: "credit",
        claim: "MT-GRPO beats GRPO",
        status: "inconclusive",
        evidence: "pass@1 mt-grpo − grpo +0.050",
        seeds: [0.04, 0.06],
        stages: stages.filter((stage) => stage !== "eval-base-strong"),
        compares: ["credit-mt-grpo", "credit-grpo"],
      },
      {
        id: "rl-raises-pass1",
        experiment: "boundary",
        claim: "RL raises pass@1",
        status: "not reproduced",
        evidence: "pass@1 RL − base −0.010",
        cause: "an effect of the opposite sign",
        seeds: [-0.01, null],
        stages: ["eval-base-strong"],
      },
      // a report written before claims recorded the stages they read
      {
        id: "old-claim",
        experiment: "base",
        claim: "an older report's claim",
        status: "reproduced",
        evidence: "",
        seeds: [],
      },
    ],
    arms: [
      {
        run: "credit-grpo",
        stage: "credit-grpo",
        seed: 1,
        family: "chain",
        estimator: "grpo",
        start: 0.1,
        end: 0.15,
        difference,
        learned: true,
      },
      {
        stage: "credit-mt-grpo@s2",
        seed: 2,
        family: "chain",
        estimator: "mt-grpo",
        start: 0.1,
        end: 0.08,
        difference: { estimate: -0.02, low: -0.05, high: 0.01 },
        learned: false,
      },
      { run: "rl-base", stage: "rl-base", seed: 1, learned: true },
    ],
  };
  writeFileSync(join(out, "report.json"), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(out, ".agentrl-recipe"), '{"kind":"agentrl recipe output","preset":"test"}\n');
  return { root, path: "recipe", stages, close: () => rmSync(folder, { recursive: true, force: true }) };
}
