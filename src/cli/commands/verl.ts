/**
 * `agentrl verl`: hand agentrl tasks to verl for GRPO on a GPU cluster, and read verl's dumps back.
 *
 *   agentrl verl init --tasks world --model Qwen/Qwen3-4B --out jobs/world-grpo
 *   agentrl verl init --tasks aime.jsonl --verifier math --model Qwen/Qwen3-4B --out jobs/aime --verl-version 0.9
 *   agentrl verl init --tasks world --mode tool --world-seed 3 --model Qwen/Qwen2.5-3B-Instruct --out jobs/tool
 *   agentrl verl import jobs/world-grpo/outputs/validation --tasks jobs/world-grpo/data/val.parquet --out runs
 *
 * `init` writes the job folder of src/verl/init.ts. World tasks: `--train-count` tasks of the train
 * worlds and `--val-count` of the test worlds (agent mode), or, in tool mode, tasks of the single
 * world `--world-seed` that `agentrl mcp serve --seed` serves, split train/val. A task file needs
 * `--verifier`; its validation tasks are `--val-tasks <file>` or a seeded `--val-fraction` of it.
 *
 * Before writing, `init` runs agentrl doctor's cheap checks (verifier, reward hacking) on the training
 * tasks and refuses a job that fails them, unless `--no-doctor` (src/doctor/preflight.ts).
 *
 * `import` turns each `<step>.jsonl` of a dump folder into an eval run (src/verl/import.ts).
 */
import { existsSync } from "node:fs";
import type { Command } from "commander";
import { hashString, mixSeeds } from "../../core/random.ts";
import { preflightJob } from "../../doctor/preflight.ts";
import { cachedWorld, rolloutTasks } from "../../env/task-set.ts";
import { readRows, readTaskFile, taskFileFormat } from "../../tasks/index.ts";
import { toolSpec } from "../../tools/index.ts";
import type { Task } from "../../types/task.ts";
import { VERIFIER_NAMES } from "../../verify/index.ts";
import { importVerlDumps } from "../../verl/import.ts";
import { VERL_MODES, VERL_VERSIONS, type VerlMode, type VerlVersion, verlInit } from "../../verl/init.ts";
import { VERL_ESTIMATORS, type VerlEstimator } from "../../verl/versions.ts";
import { generateTasks } from "../../world/index.ts";
import { servedTools } from "./mcp.ts";
import { addRenamedFlag, numberOption, parseChoice, parseNumber } from "./options.ts";

interface InitFlags {
  tasks: string;
  verifier?: string;
  model: string;
  out: string;
  verlVersion: string;
  mode: string;
  estimator?: string;
  toolCallParser: string;
  maxInfraFailureRate: number;
  valTasks?: string;
  valFraction: number;
  trainCount: number;
  valCount: number;
  taskSeed: number;
  worldSeed: number;
  code?: boolean;
  python?: boolean;
  groupSize: number;
  valN: number;
  batchSize: number;
  maxTurns: number;
  maxPromptLength: number;
  maxResponseLength: number;
  maxToolResponseLength: number;
  epochs: number;
  gpus: number;
  nodes: number;
  json?: boolean;
  doctor: boolean;
}

/** Tasks of a file: a job's parquet (`extra_info.agentrl.task`) or any task file. */
export async function readJobOrTaskFile(path: string): Promise<Task[]> {
  if (!existsSync(path)) throw new Error(`--tasks: no such file "${path}"`);
  if (taskFileFormat(path) === "parquet") {
    const rows = await readRows(path);
    const first = rows[0]?.row as { extra_info?: { agentrl?: { task?: unknown } } } | undefined;
    if (first?.extra_info?.agentrl?.task !== undefined) {
      return rows.map(({ row, where }) => {
        const raw = (row as { extra_info: { agentrl: { task: unknown } } }).extra_info.agentrl.task;
        try {
          return (typeof raw === "string" ? JSON.parse(raw) : raw) as Task;
        } catch (error) {
          throw new Error(`${where}: extra_info.agentrl.task is not JSON: ${(error as Error).message}`);
        }
      });
    }
  }
  return readTaskFile(path);
}

/** A seeded split of tasks: each task goes to validation when its hash falls under the fraction. */
function splitTasks(tasks: readonly Task[], fraction: number, seed: number): { train: Task[]; val: Task[] } {
  const train: Task[] = [];
  const val: Task[] = [];
  for (const task of tasks) {
    const draw = (mixSeeds(seed, hashString(task.id)) >>> 0) / 2 ** 32;
    (draw < fraction ? val : train).push(task);
  }
  if (val.length === 0 && train.length > 1) val.push(train.pop()!);
  return { train, val };
}

export function register(program: Command): void {
  const verl = program
    .command("verl")
    .description("write a verl GRPO job for agentrl tasks; import verl's dumps");
  const int = (name: string, min = 1) => numberOption(name, { integer: true, min });
  const init = verl
    .command("init")
    .description("write a ready-to-run verl job: RL parquet, agent loop or tools, reward, launch script")
    .requiredOption(
      "--tasks <world|file>",
      "`world` (the embedded world's tasks) or a task file (.jsonl, .json, .parquet)",
    )
    .option("--verifier <name>", `answer check of a task file (${VERIFIER_NAMES.join(", ")})`)
    .requiredOption("--model <id>", "Hugging Face model id or path for actor_rollout_ref.model.path")
    .requiredOption("--out <dir>", "job folder to create (must be new or empty)")
    .option("--verl-version <v>", `verl version the job targets (${VERL_VERSIONS.join(", ")})`, "0.7")
    .option(
      "--mode <mode>",
      "agent: agentrl's agent loop via agent-server; tool: verl's tool_agent with our tools",
      "agent",
    )
    .option(
      "--estimator <name>",
      `agent mode's advantage estimator (${VERL_ESTIMATORS.join(", ")}; default mt-grpo: turn-level credit)`,
    )
    .option(
      "--tool-call-parser <name>",
      "vLLM's tool-call parser for the rollout servers (agent mode)",
      "hermes",
    )
    .option(
      "--max-infra-failure-rate <x>",
      "agent mode: stop the job when more than this share of a step's samples failed outside the policy",
      numberOption("--max-infra-failure-rate", { min: 0, max: 1 }),
      0.2,
    )
    .option("--val-tasks <file>", "validation task file (task-file mode)")
    .option(
      "--val-fraction <f>",
      "share of a task file held out for validation",
      numberOption("--val-fraction", { min: 0, max: 0.9 }),
      0.1,
    )
    .option("--train-count <n>", "world: training tasks", int("--train-count"), 2000)
    .option("--val-count <n>", "world: validation tasks", int("--val-count"), 200)
    .option("--task-seed <n>", "task selection seed (and the held-out split's)", int("--task-seed", 0), 1)
    .option(
      "--world-seed <n>",
      "tool mode, world tasks: the one world (agentrl mcp serve --seed)",
      int("--world-seed", 0),
      0,
    )
    .option("--code", "also give the episodes the sandboxed JavaScript code tool")
    .option("--python", "also give the episodes the sandboxed Python tool")
    .option("--group-size <n>", "GRPO group size, rollout.n (the article: 8-16)", int("--group-size", 2), 8)
    .option("--val-n <n>", "validation samples per task, val_kwargs.n", int("--val-n"), 16)
    .option("--batch-size <n>", "prompts per step, data.train_batch_size", int("--batch-size"), 64)
    .option("--max-turns <n>", "assistant turns per episode", int("--max-turns"), 8)
    .option("--max-prompt-length <n>", "data.max_prompt_length (tokens)", int("--max-prompt-length"), 2048)
    .option(
      "--max-response-length <n>",
      "data.max_response_length (tokens, all turns)",
      int("--max-response-length"),
      8192,
    )
    .option(
      "--max-tool-response-length <n>",
      "multi_turn.max_tool_response_length (characters)",
      int("--max-tool-response-length"),
      2048,
    )
    .option("--epochs <n>", "trainer.total_epochs", int("--epochs"), 5)
    .option("--gpus <n>", "GPUs per node", int("--gpus"), 8)
    .option("--nodes <n>", "nodes", int("--nodes"), 1)
    .option("--json", "print the summary as JSON")
    .option("--no-doctor", "skip agentrl doctor's verifier and reward-hacking checks before writing the job")
    .action(async (flags: InitFlags) => {
      const verlVersion = parseChoice<VerlVersion>("--verl-version", flags.verlVersion, VERL_VERSIONS);
      const mode = parseChoice<VerlMode>("--mode", flags.mode, VERL_MODES);
      const estimator =
        flags.estimator === undefined
          ? undefined
          : parseChoice<VerlEstimator>("--estimator", flags.estimator, VERL_ESTIMATORS);
      let train: Task[];
      let val: Task[];
      let verifier: string;
      if (flags.tasks === "world") {
        if (flags.verifier !== undefined && flags.verifier !== "world")
          throw new Error("--verifier: world tasks use the world's answer check (leave --verifier out)");
        verifier = "world";
        if (mode === "agent") {
          train = rolloutTasks({ split: "train", count: flags.trainCount, seed: flags.taskSeed });
          val = rolloutTasks({ split: "test", count: flags.valCount, seed: flags.taskSeed });
        } else {
          const all = generateTasks(cachedWorld(flags.worldSeed), {
            count: flags.trainCount + flags.valCount,
            split: "train",
            seed: flags.taskSeed,
          });
          val = all.slice(0, flags.valCount);
          train = all.slice(flags.valCount);
        }
      } else {
        if (flags.verifier === undefined)
          throw new Error(`a task file needs --verifier <name> (one of ${VERIFIER_NAMES.join(", ")})`);
        verifier = parseChoice("--verifier", flags.verifier, VERIFIER_NAMES);
        const tasks = await readJobOrTaskFile(flags.tasks);
        if (flags.valTasks) {
          train = tasks;
          val = await readJobOrTaskFile(flags.valTasks);
        } else {
          ({ train, val } = splitTasks(tasks, flags.valFraction, flags.taskSeed));
        }
      }
      if (flags.doctor)
        await preflightJob({ tasks: train, verifier, code: flags.code, python: flags.python });
      const tools =
        mode === "tool"
          ? servedTools({ seed: flags.worldSeed, code: flags.code, python: flags.python }).map(toolSpec)
          : undefined;
      // The tools an agent-mode episode gets: the world's (with --code/--python) for world tasks,
      // only --code/--python for a task file. Their schemas count toward the prompt length.
      const promptTools =
        mode === "agent"
          ? servedTools({ seed: 0, code: flags.code, python: flags.python })
              .map(toolSpec)
              .filter((tool) => verifier === "world" || tool.name === "code" || tool.name === "python")
          : undefined;
      const mcpArgs = [
        "--seed",
        String(flags.worldSeed),
        "--top-k",
        "3",
        ...(flags.code ? ["--code"] : []),
        ...(flags.python ? ["--python"] : []),
      ];
      const result = verlInit({
        train,
        val,
        verifier,
        tasksSource: flags.tasks,
        model: flags.model,
        out: flags.out,
        verlVersion,
        mode,
        ...(tools ? { tools, mcpArgs } : {}),
        ...(promptTools ? { promptTools } : {}),
        ...(estimator ? { estimator } : {}),
        toolCallParser: flags.toolCallParser,
        maxInfraFailureRate: flags.maxInfraFailureRate,
        agentServerArgs: [
          ...(verifier === "world" ? [] : ["--verifier", verifier]),
          ...(flags.code ? ["--code"] : []),
          ...(flags.python ? ["--python"] : []),
          "--max-turns",
          String(flags.maxTurns),
          "--max-tokens",
          String(flags.maxResponseLength),
          // Every episode of a training batch in flight at once (the step waits for the slowest).
          "--concurrency",
          String(flags.batchSize * flags.groupSize),
        ],
        groupSize: flags.groupSize,
        valN: flags.valN,
        batchSize: flags.batchSize,
        maxTurns: flags.maxTurns,
        maxPromptLength: flags.maxPromptLength,
        maxResponseLength: flags.maxResponseLength,
        maxToolResponseLength: flags.maxToolResponseLength,
        epochs: flags.epochs,
        gpus: flags.gpus,
        nodes: flags.nodes,
      });
      if (flags.json) console.log(JSON.stringify({ ...result, mode, verlVersion }));
      else {
        console.log(
          `verl job in ${result.out}: ${result.train} train / ${result.val} val tasks, verl ${verlVersion}, ${mode} mode`,
        );
        console.log(`  files: ${result.files.join(", ")}`);
        console.log(
          `  next: ${result.out}/start_agentrl.sh, then ${result.out}/run_grpo.sh (see README.md there)`,
        );
      }
    });

  addRenamedFlag(init, "--seed", "--task-seed");

  const importCommand = verl
    .command("import")
    .description("verl rollout/validation dumps (<step>.jsonl) into eval runs for boundary and report")
    .argument("<dump>", "a verl rollout_data_dir or validation_data_dir, or one <step>.jsonl")
    .option(
      "--tasks <file>",
      "the job's data/val.parquet (or train.parquet, or a task file): maps prompts to tasks",
    )
    .option("--step <n...>", "only these steps (default every step in the folder)")
    .option("--threshold <x>", "score at or above which a sample without `acc` is correct", "1")
    .option("--runs <dir>", "root folder of run directories", "runs")
    .option("--prefix <name>", "run ids are <prefix>-step<N> (default verl-<folder name>)")
    .option("--label <name>", "policy label of the runs in reports")
    .option("--json", "print the imported runs as JSON")
    .action(
      async (
        dump: string,
        flags: {
          tasks?: string;
          step?: string[];
          threshold: string;
          runs: string;
          prefix?: string;
          label?: string;
          json?: boolean;
        },
      ) => {
        if (!existsSync(dump)) throw new Error(`verl import: no such folder or file "${dump}"`);
        const runs = await importVerlDumps({
          path: dump,
          ...(flags.tasks ? { tasks: await readJobOrTaskFile(flags.tasks) } : {}),
          ...(flags.step
            ? { steps: flags.step.map((step) => parseNumber("--step", step, { integer: true, min: 0 })) }
            : {}),
          threshold: parseNumber("--threshold", flags.threshold, {}),
          runsRoot: flags.runs,
          ...(flags.prefix ? { prefix: flags.prefix } : {}),
          ...(flags.label ? { label: flags.label } : {}),
        });
        const rows = runs.map((run) => ({
          step: run.step,
          directory: run.directory,
          tasks: run.tasks,
          n: run.n,
          dropped: run.dropped,
          infra: run.infra,
          alreadyImported: run.alreadyImported,
          metrics: run.result.metrics,
        }));
        if (flags.json) {
          console.log(JSON.stringify(rows));
          return;
        }
        for (const run of runs) {
          const pass1 = run.result.curves.overall.find((point) => point.k === 1)?.passAtK ?? Number.NaN;
          const passN = run.result.curves.overall.find((point) => point.k === run.n)?.passAtK ?? Number.NaN;
          console.log(
            `step ${run.step}: ${run.directory} — ${run.tasks} tasks x n = ${run.n}; pass@1 ${pass1.toFixed(3)}, pass@${run.n} ${passN.toFixed(3)}${run.dropped ? ` (${run.dropped} samples beyond n dropped)` : ""}${run.infra ? ` (${run.infra} infra failures left out)` : ""}${run.alreadyImported ? " (already imported)" : ""}`,
          );
        }
      },
    );
  addRenamedFlag(importCommand, "--out", "--runs");
}
