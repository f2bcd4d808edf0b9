/**
 * Credit assignment on long chains: learning curves of outcome-only GRPO vs MT-GRPO (turn-level
 * advantages) vs GiGPO (step advantages over identical states), the same base, seed, tasks, reward
 * and rollout budget for each. Writes `<out>/credit-assignment.json` and two SVG charts (the
 * training batch's pass@1 and reward per step; held-out pass@1 at the evaluation steps).
 *
 *   npx node scripts/credit-assignment.ts [--steps 30] [--tasks 8] [--group 8] [--family chain]
 *                                         [--base models/base-strong] [--out runs/credit-assignment]
 *
 * Every estimator sees the same reward, the MT-GRPO preset (outcome: exact match 1, answer
 * contained 0.5, format 0.2; turn: tool executed 0.2, gold evidence retrieved 0.5, calc right
 * 0.5): GRPO uses its outcome part only, MT-GRPO and GiGPO the turn part too. Groups without signal
 * (for that estimator) are dropped without refill, so all three spend the same rollouts per step.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { lineChart } from "../src/report/plots.ts";
import { parseRlConfig } from "../src/rl/config.ts";
import { trainRl } from "../src/rl/train.ts";
import { createRunDirectory } from "../src/store/index.ts";

const { values } = parseArgs({
  options: {
    steps: { type: "string", default: "30" },
    tasks: { type: "string", default: "8" },
    group: { type: "string", default: "8" },
    family: { type: "string", default: "chain" },
    base: { type: "string", default: "models/base-strong" },
    out: { type: "string", default: "runs/credit-assignment" },
    seed: { type: "string", default: "1" },
    "eval-every": { type: "string", default: "10" },
    "eval-tasks": { type: "string", default: "16" },
    "eval-samples": { type: "string", default: "8" },
    "learning-rate": { type: "string", default: "0.0002" },
    estimators: { type: "string", default: "grpo,mt-grpo,gigpo" },
  },
});

const steps = Number(values.steps);
const estimators = values.estimators.split(",");
const out = values.out;
mkdirSync(out, { recursive: true });
const stamp = Date.now();

interface Curve {
  estimator: string;
  seconds: number;
  train: { step: number; passAt1: number; reward: number; keptGroups: number; toolCalls: number }[];
  heldout: { step: number; passAt1: number; passAtK: number; k: number }[];
}
const curves: Curve[] = [];
const configs: Record<string, unknown> = {};

for (const estimator of estimators) {
  const config = parseRlConfig({
    name: `credit-${estimator}`,
    base: values.base,
    steps,
    seed: Number(values.seed),
    families: [values.family],
    tasksPerStep: Number(values.tasks),
    groupSize: Number(values.group),
    reward: "mt-grpo",
    estimator,
    dynamicSampling: true,
    maxExtraRollouts: 0,
    learningRate: Number(values["learning-rate"]),
    evalEvery: Number(values["eval-every"]),
    evalTasks: Number(values["eval-tasks"]),
    evalSamples: Number(values["eval-samples"]),
    evalTemperature: 1,
    evalTopP: 1,
    checkpointEvery: steps,
    keepCheckpoints: 1,
  });
  configs[estimator] = config;
  const { directory, store, run } = createRunDirectory({
    kind: "rl",
    root: out,
    config,
    id: `credit-${estimator}-${stamp}`,
  });
  process.stderr.write(`credit assignment: ${estimator} (${directory})\n`);
  const result = await trainRl({
    config,
    runDir: directory,
    store,
    runId: run.id,
    onProgress: ({ step, metrics, warning }) => {
      if (warning) process.stderr.write(`  WARNING ${warning}\n`);
      if (step > 0) {
        process.stderr.write(
          `  ${estimator} step ${step}/${steps}: pass@1 ${metrics["rollout/pass@1"].toFixed(3)} reward ${metrics["reward/mean"].toFixed(3)} kept ${metrics["rollout/kept_groups"]}\n`,
        );
      }
    },
  });
  const series = (key: string) =>
    new Map(store.metrics(run.id, key).map((point) => [point.step, point.value]));
  const pass = series("rollout/pass@1");
  const reward = series("reward/mean");
  const kept = series("rollout/kept_groups");
  const calls = series("rollout/tool_calls_per_episode");
  curves.push({
    estimator,
    seconds: result.seconds,
    train: [...pass.keys()].map((step) => ({
      step,
      passAt1: pass.get(step)!,
      reward: reward.get(step)!,
      keptGroups: kept.get(step)!,
      toolCalls: calls.get(step)!,
    })),
    heldout: result.boundary,
  });
  store.finishRun(run.id, "completed", { boundary: result.boundary });
  store.close();
}

/** Mean over a trailing window of `width` steps (the batch pass@1 of 64 episodes is noisy). */
function smooth(points: { x: number; y: number }[], width: number) {
  return points.map((point, i) => {
    const window = points.slice(Math.max(0, i - width + 1), i + 1);
    return { x: point.x, y: window.reduce((sum, p) => sum + p.y, 0) / window.length };
  });
}

const trainSvg = await lineChart({
  title: `training batch pass@1 (${values.family}, 5-step trailing mean)`,
  xLabel: "RL step",
  yLabel: "pass@1",
  series: curves.map((curve) => ({
    name: curve.estimator,
    points: smooth(
      curve.train.map((point) => ({ x: point.step, y: point.passAt1 })),
      5,
    ),
  })),
});
const heldoutSvg = await lineChart({
  title: `held-out pass@1 (${values.family}, test worlds)`,
  xLabel: "RL step",
  yLabel: "pass@1",
  series: curves.map((curve) => ({
    name: curve.estimator,
    points: curve.heldout.map((point) => ({ x: point.step, y: point.passAt1 })),
  })),
});
writeFileSync(join(out, "credit-assignment.svg"), trainSvg);
writeFileSync(join(out, "credit-assignment-heldout.svg"), heldoutSvg);
const summary = {
  family: values.family,
  steps,
  tasksPerStep: Number(values.tasks),
  groupSize: Number(values.group),
  seed: Number(values.seed),
  base: values.base,
  machine: "2 shared CPU cores (jax-js wasm)",
  curves,
  configs,
};
writeFileSync(join(out, "credit-assignment.json"), `${JSON.stringify(summary, null, 2)}\n`);
for (const curve of curves) {
  const first = curve.heldout[0];
  const last = curve.heldout.at(-1);
  const tail = curve.train.slice(-5);
  const tailPass = tail.reduce((sum, point) => sum + point.passAt1, 0) / Math.max(1, tail.length);
  console.log(
    `${curve.estimator.padEnd(8)} held-out pass@1 ${first?.passAt1.toFixed(3)} → ${last?.passAt1.toFixed(3)} ` +
      `(pass@${last?.k} ${first?.passAtK.toFixed(3)} → ${last?.passAtK.toFixed(3)}); ` +
      `train pass@1 last 5 steps ${tailPass.toFixed(3)}; ${(curve.seconds / 60).toFixed(1)} min`,
  );
}
console.log(`written to ${out}/credit-assignment.{json,svg} and credit-assignment-heldout.svg`);
