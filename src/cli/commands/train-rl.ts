/**
 * `agentrl train rl`: RL of an embedded policy on world tasks with group rollouts, turn-level
 * rewards and advantages, clip-higher PPO, dynamic sampling, live boundary tracking (sharpening is
 * flagged as it happens), checkpoints and `--resume`.
 *
 *   agentrl train rl --config configs/rl/grpo.json
 *   agentrl train rl --base models/base-strong --estimator mt-grpo --reward mt-grpo --steps 50
 *   agentrl train rl --resume runs/rl-grpo-1700000000000
 *
 *   agentrl train rl --policy hf:<folder> --lora-rank 16 --lora-targets q_proj,v_proj --task-file tasks.jsonl
 *
 * The trained checkpoint goes to `<run>/model` (or `--out`); every `--policy` option loads it. With
 * `--policy hf:<folder>` (LoRA), `<run>/adapter` holds the PEFT adapter and `<run>/model` the
 * merged checkpoint folder (`hf:<run>/model` or `hf:<run>/adapter` loads it).
 */
import { join } from "node:path";
import type { Command } from "commander";
import { agentRollout } from "../../agents/agent-rollout.ts";
import { parseRlRunConfig, type RlRunConfig, resumedRunAgent } from "../../agents/rl-run.ts";
import { parseConfigFrom, readConfigFile } from "../../core/config-file.ts";
import { isHfBase } from "../../policy/hf/spec.ts";
import { REWARD_PRESETS } from "../../reward/index.ts";
import { RL_ADAPTER } from "../../rl/checkpoints.ts";
import { parseRlConfig, RL_ESTIMATORS, type RlConfig } from "../../rl/config.ts";
import { trainRl } from "../../rl/train.ts";
import { directoryRun, openRunDirectory } from "../../store/index.ts";
import { openTrainingRun, runTraining } from "../training-run.ts";
import { addLoraOptions, type LoraFlags, loraField, loraFlagsFrom } from "./lora-options.ts";
import { parseNumber } from "./options.ts";

interface RlCommandOptions extends LoraFlags {
  config?: string;
  base?: string;
  name?: string;
  steps?: string;
  seed?: string;
  estimator?: string;
  reward?: string;
  aggregation?: string;
  families?: string;
  taskIds?: string;
  taskFile?: string;
  tasksPerStep?: string;
  groupSize?: string;
  noise?: string;
  learningRate?: string;
  ppoEpochs?: string;
  klCoef?: string;
  entropyCoef?: string;
  evalEvery?: string;
  evalTasks?: string;
  evalSamples?: string;
  checkpointEvery?: string;
  out?: string;
  resume?: string;
  runs: string;
  runId?: string;
  json?: boolean;
  agent?: string;
  agentCmd?: string;
  agentTimeout?: string;
  agentMemory?: string;
}

const INTEGER_FLAGS = [
  ["steps", "--steps", 1],
  ["seed", "--seed", 0],
  ["tasksPerStep", "--tasks-per-step", 1],
  ["groupSize", "--group-size", 2],
  ["ppoEpochs", "--ppo-epochs", 1],
  ["evalEvery", "--eval-every", 0],
  ["evalTasks", "--eval-tasks", 1],
  ["evalSamples", "--eval-samples", 2],
  ["checkpointEvery", "--checkpoint-every", 1],
] as const;
const NUMBER_FLAGS = [
  ["noise", "--noise"],
  ["learningRate", "--learning-rate"],
  ["klCoef", "--kl-coef"],
  ["entropyCoef", "--entropy-coef"],
] as const;

/** The config from `--config` plus flag overrides (validated; the error names the bad field). */
export function rlConfigFrom(options: RlCommandOptions): RlConfig {
  const fromFile = options.config ? readConfigFile(options.config, "train rl config") : {};
  const overrides: Record<string, unknown> = {};
  for (const key of ["name", "estimator", "reward", "aggregation", "taskFile", "out"] as const) {
    if (options[key] !== undefined) overrides[key] = options[key];
  }
  const { base, lora, saveDtype } = loraFlagsFrom(options, fromFile.base as string | undefined);
  if (base !== undefined) overrides.base = base;
  if (saveDtype !== undefined) overrides.saveDtype = saveDtype;
  if (lora !== undefined) overrides.lora = loraField(fromFile.lora, lora);
  if (options.families) overrides.families = options.families.split(",").map((family) => family.trim());
  if (options.taskIds) overrides.taskIds = options.taskIds.split(",").map((id) => id.trim());
  for (const [key, flag, min] of INTEGER_FLAGS) {
    const raw = options[key];
    if (raw !== undefined) overrides[key] = parseNumber(flag, raw, { integer: true, min });
  }
  for (const [key, flag] of NUMBER_FLAGS) {
    const raw = options[key];
    if (raw !== undefined) overrides[key] = parseNumber(flag, raw, { min: 0 });
  }
  return parseConfigFrom(options.config, "train rl config", () =>
    parseRlConfig({ ...fromFile, ...overrides }),
  );
}

/** The config an RL run directory was started with, read without reopening the run. */
function storedRunConfig(directory: string): RlRunConfig {
  const store = openRunDirectory(directory, { readOnly: true });
  try {
    return parseRlRunConfig(directoryRun(store, directory).config);
  } finally {
    store.close();
  }
}

function formatMetric(value: number | undefined): number | string {
  return value === undefined || Number.isNaN(value) ? "n/a" : value;
}

/** Adds the `rl` subcommand to a `train` command. */
export function registerRl(train: Command): void {
  const command = train
    .command("rl")
    .description(
      "RL of an embedded policy: group rollouts, turn-level credit, clip-higher PPO, live pass@k boundary tracking",
    )
    .option("--config <file>", "JSON config (fields of src/rl/config.ts; missing fields take defaults)")
    .option("--base <dir>", "checkpoint to start from (default models/base-strong), or hf:<folder>")
    .option("--name <name>", "name of the trained model")
    .option("--steps <n>", "RL steps")
    .option("--seed <n>", "seed of tasks, episodes and mini-batch order")
    .option(
      "--estimator <name>",
      `advantage estimator: ${RL_ESTIMATORS.join(", ")} (gae: MT-PPO with a value head)`,
    )
    .option("--reward <preset>", `reward preset: ${Object.keys(REWARD_PRESETS).join(", ")}`)
    .option("--aggregation <mode>", "token-mean, seq-mean-token-mean or seq-mean-token-sum-norm")
    .option(
      "--families <list>",
      "comma-separated task families (lookup, bridge, arithmetic, chain, distractor)",
    )
    .option("--task-ids <list>", "comma-separated task ids to train on")
    .option("--task-file <file>", "tasks.jsonl of `agentrl data select`, a JSON list, or one id per line")
    .option("--tasks-per-step <n>", "groups per step")
    .option("--group-size <n>", "rollouts per task")
    .option("--noise <rate>", "total tool failure rate during rollouts")
    .option("--learning-rate <lr>", "peak learning rate")
    .option("--ppo-epochs <n>", "PPO passes over each batch")
    .option("--kl-coef <beta>", "KL penalty to the base (0: off)")
    .option("--entropy-coef <eta>", "entropy bonus (0: off)")
    .option("--eval-every <n>", "boundary tracking every n steps (0: off)")
    .option("--eval-tasks <n>", "held-out test tasks of the boundary tracking")
    .option("--eval-samples <n>", "samples per held-out task (the large k)")
    .option("--checkpoint-every <n>", "checkpoint every n steps")
    .option("--out <dir>", "where the trained checkpoint goes (default <run>/model)")
    .option("--resume <runDir>", "continue an RL run from its last checkpoint (after a crash or Ctrl-C)")
    .option("--runs <dir>", "root folder of run directories", "runs")
    .option("--run-id <id>", "name of the run directory (default rl-<name>-<time>)")
    .option("--json", "print the result as JSON")
    .option(
      "--agent <module>",
      "roll out your agent module (as `agentrl eval --agent`) through the gateway on the live policy (kept in the run's config: --resume uses it)",
    )
    .option(
      "--agent-cmd <command>",
      "roll out an agent in any language: the command runs once per episode, the task as JSON on stdin, the answer on its last stdout line (kept in the run's config)",
    )
    .option("--agent-timeout <seconds>", "--agent: seconds an episode may run", "120")
    .option("--agent-memory <MB>", "--agent: heap limit of each agent slot (worker thread)", "2048");
  addLoraOptions(command).action(async (options: RlCommandOptions) => {
    const timeoutMs = parseNumber("--agent-timeout", options.agentTimeout ?? "120", { min: 0.001 }) * 1000;
    if (options.agent !== undefined && options.agentCmd !== undefined)
      throw new Error("give either --agent <module> or --agent-cmd <command>, not both");
    // The agent is part of the run's config: a resumed run rolls out the one it started with.
    const agent = options.resume
      ? resumedRunAgent(storedRunConfig(options.resume), options.agent, options.resume, options.agentCmd)
      : options.agent
        ? { module: options.agent, timeoutMs }
        : options.agentCmd
          ? { command: options.agentCmd, timeoutMs }
          : null;
    const memoryMb = parseNumber("--agent-memory", options.agentMemory ?? "2048", {
      integer: true,
      min: 16,
    });
    const rollout = agent
      ? agentRollout({
          agent: agent.command
            ? { kind: "command", command: agent.command }
            : { kind: "module", path: agent.module as string, memoryMb },
          timeoutMs: agent.timeoutMs,
        })
      : undefined;
    const opened = openTrainingRun<RlRunConfig>({
      kind: "rl",
      resume: options.resume,
      runs: options.runs,
      runId: options.runId,
      parse: parseRlRunConfig,
      fresh: () => ({ ...rlConfigFrom(options), ...(agent ? { agent } : {}) }),
      defaultId: (c) => `rl-${c.name}-${Date.now()}`,
    });
    const { agent: _agent, ...rlConfig } = opened.config;
    const run = { ...opened, config: rlConfig as RlConfig };
    const { config, directory } = run;
    const result = await runTraining(
      run,
      { label: `rl ${config.name}`, steps: config.steps, quiet: Boolean(options.json) },
      ({ progress, signal }) =>
        trainRl({
          ...run,
          runDir: directory,
          signal,
          ...(rollout ? { rollout } : {}),
          onProgress: ({ step, metrics, warning }) => {
            if (warning) process.stderr.write(`\nWARNING ${warning}\n`);
            if (step === 0) return;
            progress.update(step, {
              reward: formatMetric(metrics["reward/mean"]),
              "pass@1": formatMetric(metrics["rollout/pass@1"]),
              kept: formatMetric(metrics["rollout/kept_groups"]),
              clip: formatMetric(metrics["policy/clip_fraction"]),
              ent: formatMetric(metrics["policy/entropy"]),
              "tok/s": Math.round(metrics["perf/tokens_per_s"] ?? 0),
              ...(metrics["rollout/infra_failures"] ? { infra: metrics["rollout/infra_failures"] } : {}),
            });
          },
        }),
    ).finally(() => rollout?.close()); // the agent's slots, gateway and server live for the whole run
    if (options.json) {
      console.log(JSON.stringify({ run: directory, ...result }, null, 2));
      return;
    }
    console.log(`trained model written to ${result.modelDir} (run ${directory})`);
    // Fully fine-tuned (`lora: false`), the model folder is all there is: no adapter was written.
    if (isHfBase(config.base) && config.lora !== false)
      console.log(`LoRA adapter (PEFT) in ${join(directory, RL_ADAPTER)}; the model above has it merged`);
    console.log(
      `${result.steps} steps (from ${result.startStep}), ${result.episodes} episodes, ${(result.seconds / 60).toFixed(1)} min`,
    );
    console.log(`infra failures ${result.infraFailures} (left out of their groups: never trained on)`);
    for (const point of result.boundary) {
      console.log(
        `  step ${point.step}: eval pass@1 ${point.passAt1.toFixed(3)}, pass@${point.k} ${point.passAtK.toFixed(3)}`,
      );
    }
    if (result.sharpening.length > 0) {
      console.log(`sharpening flagged at steps ${result.sharpening.map((s) => s.step).join(", ")}`);
    }
    if (result.skipped.nonfinite.length > 0) {
      console.log(`steps undone for a non-finite loss or gradient: ${result.skipped.nonfinite.join(", ")}`);
    }
    console.log(`peak memory (resident set) ${Math.round(result.peakRssMb)} MB`);
  });
}
