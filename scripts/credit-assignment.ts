/**
 * Credit assignment on long chains: outcome-only GRPO vs MT-GRPO vs GiGPO vs MT-PPO (gae), the
 * same base, seed, tasks, reward (`turn-credit`) and rollout budget for each. A thin command line
 * over `runCreditAssignment` (src/rl/credit-assignment.ts), which writes
 * `<out>/credit-assignment.json`, one `curves-<estimator>.json` per estimator and four SVG charts
 * (training pass@1, held-out pass@1, tool calls per episode, return variance by chain length).
 *
 *   npx node scripts/credit-assignment.ts [--steps 20] [--tasks 8] [--group 8] [--family chain]
 *     [--estimators grpo,mt-grpo,gigpo,gae] [--base models/base-strong] [--out runs/credit-assignment]
 *     [--seed 1] [--eval-every 10] [--eval-tasks 32] [--eval-samples 8] [--learning-rate 2e-4]
 *     [--reward turn-credit] [--reuse]
 *
 * `--reuse` keeps an estimator's curves when `<out>/curves-<estimator>.json` has the same config,
 * so estimators can be trained in separate processes and charted together.
 */
import { parseArgs } from "node:util";
import { runCreditAssignment } from "../src/rl/credit-assignment.ts";
import type { TaskFamily } from "../src/types/task.ts";

const { values } = parseArgs({
  options: {
    steps: { type: "string", default: "20" },
    tasks: { type: "string", default: "8" },
    group: { type: "string", default: "8" },
    family: { type: "string", default: "chain" },
    base: { type: "string", default: "models/base-strong" },
    out: { type: "string", default: "runs/credit-assignment" },
    seed: { type: "string", default: "1" },
    "eval-every": { type: "string", default: "10" },
    "eval-tasks": { type: "string", default: "32" },
    "eval-samples": { type: "string", default: "8" },
    "learning-rate": { type: "string", default: "0.0002" },
    reward: { type: "string", default: "turn-credit" },
    estimators: { type: "string", default: "grpo,mt-grpo,gigpo,gae" },
    reuse: { type: "boolean", default: false },
  },
});

const started = Date.now();
const result = await runCreditAssignment({
  out: values.out,
  estimators: values.estimators.split(",").map((name) => name.trim()),
  family: values.family as TaskFamily,
  base: values.base,
  steps: Number(values.steps),
  tasksPerStep: Number(values.tasks),
  groupSize: Number(values.group),
  seed: Number(values.seed),
  learningRate: Number(values["learning-rate"]),
  reward: values.reward,
  evalEvery: Number(values["eval-every"]),
  evalTasks: Number(values["eval-tasks"]),
  evalSamples: Number(values["eval-samples"]),
  reuse: values.reuse,
  onProgress: (estimator, { step, steps, metrics, warning }) => {
    if (warning) process.stderr.write(`  WARNING ${warning}\n`);
    if (step === 0) return;
    const value = (key: string) => (metrics[key] ?? Number.NaN).toFixed(3);
    process.stderr.write(
      `  ${estimator} step ${step}/${steps}: pass@1 ${value("rollout/pass@1")} return ${value("return/mean")} ` +
        `calls ${value("rollout/tool_calls_per_episode")} kept ${metrics["rollout/kept_groups"]}` +
        (metrics["value/explained_variance"] !== undefined
          ? ` ev ${value("value/explained_variance")}`
          : "") +
        "\n",
    );
  },
});

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
console.log(
  `${result.family}, ${result.steps} steps × ${result.tasksPerStep} tasks × ${result.groupSize} rollouts, seed ${result.seed}, base ${result.base}`,
);
console.log("estimator  held-out pass@1 start → end  pass@k start → end  calls/ep first 5 → last 5  minutes");
for (const curve of result.curves) {
  const [first, last] = [curve.heldout[0], curve.heldout.at(-1)];
  const calls = (points: typeof curve.train) => mean(points.map((p) => p.toolCallsPerEpisode)).toFixed(2);
  console.log(
    `${curve.estimator.padEnd(10)} ${first?.passAt1.toFixed(3)} → ${last?.passAt1.toFixed(3)}` +
      `                 ${first?.passAtK.toFixed(3)} → ${last?.passAtK.toFixed(3)} (k=${last?.k})` +
      `      ${calls(curve.train.slice(0, 5))} → ${calls(curve.train.slice(-5))}` +
      `               ${(curve.seconds / 60).toFixed(1)}`,
  );
}
console.log(
  `written: ${Object.values(result.files).join(", ")} (${((Date.now() - started) / 60000).toFixed(1)} min)`,
);
