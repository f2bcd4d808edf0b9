/**
 * LoRA RL on a lab base exported as a Hugging Face checkpoint (issue 37): does `train rl --policy
 * hf:<folder>` with LoRA raise held-out pass@1 on a world family over its start, at three seeds?
 *
 *   node scripts/hf-lab-base-rl.ts [--out runs/hf-lab-base-rl] [--record docs/results/hf-lab-base-rl.json]
 *
 * Runs, through the CLI as a user would: `export hf models/base-strong` (GPT-2 with the lab's
 * template), `eval` of the export on held-out lookup tasks, then per seed `train rl` with a LoRA
 * adapter on c_attn, c_proj and c_fc and `eval` of the adapter (hf:<adapter folder>) on the same
 * tasks and sampling seed. Writes each arm's pass@1, pass@k and the paired per-task difference
 * end − start with its 95% bootstrap interval (the recipe's `pairedDifference`).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { countByTask, type TaskCount } from "../src/eval/task-counts.ts";
import { pairedDifference, taskPassAtK } from "../src/recipe/analysis.ts";
import { openRunDirectory } from "../src/store/index.ts";

const { values } = parseArgs({
  options: { out: { type: "string", default: "runs/hf-lab-base-rl" }, record: { type: "string" } },
});
const out = resolve(values.out!);
mkdirSync(out, { recursive: true });
const FAMILY = "lookup";
const SEEDS = [1, 2, 3];
const EVAL = [
  "--family",
  FAMILY,
  "--tasks",
  "64",
  "--n",
  "8",
  "--split",
  "test",
  "--task-seed",
  "7",
  "--seed",
  "11",
];
const SAMPLING = ["--temperature", "1", "--top-p", "1"];
const RL = {
  steps: 16,
  tasksPerStep: 8,
  groupSize: 8,
  learningRate: 5e-4,
  loraRank: 8,
  loraAlpha: 16,
  loraTargets: "c_attn,c_proj,c_fc",
};

const agentrl = (...args: string[]) => {
  const started = performance.now();
  execFileSync(process.execPath, [resolve("bin/agentrl.js"), ...args], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  return (performance.now() - started) / 1000;
};
const counts = (runId: string): TaskCount[] => {
  const store = openRunDirectory(join(out, "runs", runId), { readOnly: true });
  try {
    return countByTask(store.trajectories(runId));
  } finally {
    store.close();
  }
};
const passAt = (c: readonly TaskCount[], k: number) =>
  c.reduce((sum, count) => sum + taskPassAtK(count, k), 0) / c.length;

const base = join(out, "base-hf");
agentrl("export", "hf", "models/base-strong", "--out", base);
agentrl(
  "eval",
  "--runs",
  join(out, "runs"),
  "--policy",
  `hf:${base}`,
  ...EVAL,
  ...SAMPLING,
  "--run-id",
  "eval-start",
);
const start = counts("eval-start");
const arms = SEEDS.map((seed) => {
  const seconds = agentrl(
    "train",
    "rl",
    "--runs",
    join(out, "runs"),
    "--policy",
    `hf:${base}`,
    "--families",
    FAMILY,
    "--seed",
    String(seed),
    "--steps",
    String(RL.steps),
    "--tasks-per-step",
    String(RL.tasksPerStep),
    "--group-size",
    String(RL.groupSize),
    "--learning-rate",
    String(RL.learningRate),
    "--lora-rank",
    String(RL.loraRank),
    "--lora-alpha",
    String(RL.loraAlpha),
    "--lora-targets",
    RL.loraTargets,
    "--eval-every",
    "0",
    "--run-id",
    `rl-s${seed}`,
  );
  const adapter = join(out, "runs", `rl-s${seed}`, "adapter");
  agentrl(
    "eval",
    "--runs",
    join(out, "runs"),
    "--policy",
    `hf:${adapter}`,
    ...EVAL,
    ...SAMPLING,
    "--run-id",
    `eval-s${seed}`,
  );
  const end = counts(`eval-s${seed}`);
  const difference = pairedDifference(start, end, undefined, seed);
  return {
    seed,
    trainSeconds: Math.round(seconds),
    passAt1: passAt(end, 1),
    passAt8: passAt(end, 8),
    difference,
    learned: difference !== null && difference.interval.lower > 0,
  };
});
const record = {
  what: `LoRA RL (train rl --policy hf:) on models/base-strong exported as a GPT-2 checkpoint; held-out ${FAMILY} pass@1`,
  eval: { family: FAMILY, tasks: 64, samples: 8, split: "test", temperature: 1, topP: 1 },
  rl: RL,
  start: { passAt1: passAt(start, 1), passAt8: passAt(start, 8) },
  arms,
  createdAt: new Date().toISOString(),
};
console.log(JSON.stringify(record, null, 2));
if (values.record) writeFileSync(values.record, `${JSON.stringify(record, null, 2)}\n`);
