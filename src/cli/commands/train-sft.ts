/**
 * `agentrl train sft`: supervised fine-tuning of a shipped base on datasets, with the
 * assistant-only loss, held-out loss, progress with ETA, checkpoints and `--resume`.
 *
 *   agentrl train sft --data runs/sft-real --base models/base-strong --steps 300 --name sft-real
 *   agentrl train sft --config configs/sft/real.json
 *   agentrl train sft --resume runs/sft-real-1700000000000
 *
 *   agentrl train sft --policy hf:<folder> --lora-rank 16 --data runs/sft-real
 *
 * The fine-tuned checkpoint goes to `<run>/model` (or `--out`); `agentrl eval --policy <it>` and
 * every other `--policy` option load it. With `--policy hf:<folder>` (LoRA) `<run>/adapter` is the
 * PEFT adapter and `<run>/model` the merged checkpoint folder (load either with `hf:`).
 */
import { join } from "node:path";
import type { Command } from "commander";
import { parseConfigFrom, readConfigFile } from "../../core/config-file.ts";
import { isHfBase } from "../../policy/hf/spec.ts";
import { parseSftConfig, type SftConfig } from "../../sft/config.ts";
import { SFT_ADAPTER } from "../../sft/model.ts";
import { trainSft } from "../../sft/train.ts";
import { openTrainingRun, runTraining } from "../training-run.ts";
import { addLoraOptions, type LoraFlags, loraField, loraFlagsFrom } from "./lora-options.ts";
import { parseNumber } from "./options.ts";

interface SftCommandOptions extends LoraFlags {
  config?: string;
  data?: string[];
  base?: string;
  name?: string;
  steps?: string;
  learningRate?: string;
  seed?: string;
  out?: string;
  resume?: string;
  runs: string;
  runId?: string;
  json?: boolean;
}

/** The config from `--config` plus flag overrides (validated; the error names the bad field). */
function configFrom(options: SftCommandOptions): SftConfig {
  const fromFile = options.config ? readConfigFile(options.config, "train sft config") : {};
  const overrides: Record<string, unknown> = {};
  if (options.data) overrides.data = options.data;
  const { base, lora, saveDtype } = loraFlagsFrom(options, fromFile.base as string | undefined);
  if (base !== undefined) overrides.base = base;
  if (saveDtype !== undefined) overrides.saveDtype = saveDtype;
  if (lora !== undefined) overrides.lora = loraField(fromFile.lora, lora);
  if (options.name) overrides.name = options.name;
  if (options.out) overrides.out = options.out;
  if (options.steps) overrides.steps = parseNumber("--steps", options.steps, { integer: true, min: 1 });
  if (options.learningRate)
    overrides.learningRate = parseNumber("--learning-rate", options.learningRate, { min: 0 });
  if (options.seed) overrides.seed = parseNumber("--seed", options.seed, { integer: true, min: 0 });
  return parseConfigFrom(options.config, "train sft config", () =>
    parseSftConfig({ ...fromFile, ...overrides }),
  );
}

/** Adds the `sft` subcommand to a `train` command. */
export function registerSft(train: Command): void {
  const command = train
    .command("sft")
    .description("fine-tune a base on datasets with the assistant-only loss (prompt and tool output masked)")
    .option("--config <file>", "JSON config (fields of src/sft/config.ts; missing fields take defaults)")
    .option("--data <dirs...>", "dataset directories (agentrl data collect|stitch|import)")
    .option("--base <dir>", "base checkpoint to start from (default models/base-strong), or hf:<folder>")
    .option("--name <name>", "name of the fine-tuned model")
    .option("--steps <n>", "optimizer steps")
    .option("--learning-rate <lr>", "peak learning rate")
    .option("--seed <n>", "seed of the held-out split and the data order")
    .option("--out <dir>", "where the fine-tuned checkpoint goes (default <run>/model)")
    .option("--resume <runDir>", "continue an SFT run from its last checkpoint")
    .option("--runs <dir>", "root folder of run directories", "runs")
    .option("--run-id <id>", "name of the run directory (default sft-<name>-<time>)")
    .option("--json", "print the result as JSON");
  addLoraOptions(command).action(async (options: SftCommandOptions) => {
    const run = openTrainingRun({
      kind: "sft",
      resume: options.resume,
      runs: options.runs,
      runId: options.runId,
      parse: parseSftConfig,
      fresh: () => configFrom(options),
      defaultId: (c) => `sft-${c.name}-${Date.now()}`,
    });
    const { config, directory } = run;
    const result = await runTraining(
      run,
      { label: `sft ${config.name}`, steps: config.steps, quiet: Boolean(options.json) },
      ({ progress, signal }) =>
        trainSft({
          ...run,
          runDir: directory,
          signal,
          onProgress: (p) =>
            progress.update(p.step, {
              loss: p.loss,
              ...(p.heldoutLoss !== null ? { heldout: p.heldoutLoss } : {}),
              "tok/s": Math.round(p.tokensPerSecond),
            }),
        }),
    );
    if (options.json) {
      console.log(JSON.stringify({ run: directory, ...result }, null, 2));
      return;
    }
    const loss = (x: number | null) => (x === null ? "n/a" : x.toFixed(4));
    console.log(`fine-tuned model written to ${result.modelDir} (run ${directory})`);
    console.log(
      `${result.steps} steps (${result.epochs.toFixed(2)} epochs of ${result.data.trainEpisodes} episodes), ${(result.seconds / 60).toFixed(1)} min`,
    );
    console.log(
      `loss: train ${loss(result.finalLoss)}; held-out ${loss(result.initialHeldoutLoss)} → ${loss(result.finalHeldoutLoss)} (${result.data.heldoutEpisodes} episodes of ${result.data.heldoutTasks} unseen tasks)`,
    );
    // Fully fine-tuned (`lora: false`), the model folder is all there is: no adapter was written.
    if (isHfBase(config.base) && config.lora !== false)
      console.log(`LoRA adapter (PEFT) in ${join(directory, SFT_ADAPTER)}; the model above has it merged`);
    console.log(`peak memory (resident set) ${Math.round(result.peakRssMb)} MB`);
  });
}

/** The `train` command of a program, created when absent. */
export function trainCommand(program: Command): Command {
  return (
    program.commands.find((command) => command.name() === "train") ??
    program.command("train").description("train a policy: sft (supervised fine-tuning), rl")
  );
}

/** Registers `train sft`, creating `train` if the program has none. */
export function register(program: Command): void {
  registerSft(trainCommand(program));
}
