/**
 * `agentrl data`: SFT and RL datasets.
 *
 *   agentrl data collect --policy expert --tasks 2000 --noise 0.2 --template-share sum3=0.25 --out runs/sft-real
 *                           (after a crash or Ctrl-C, the same command continues the collection)
 *   agentrl data collect --agent examples/agents/ai-sdk.ts --policy models/base-strong --tasks 200 --samples 4
 *   agentrl data stitch --tasks 2000 --template-share sum3=0.25 --out runs/sft-stitched
 *   agentrl data stats runs/sft-real
 *   agentrl data select --policy models/base-strong --tasks 400 --m 8 --mix easy:0.3,medium:0.4,hard:0.3
 *   agentrl data export runs/sft-real --format verl-parquet --out sft.parquet
 *
 * Collected (real) trajectories come from the episode loop with noisy tools, filtered by rejection
 * sampling; stitched ones are assembled from the gold steps with clean observations (see
 * src/data/stitch.ts for exactly how they differ). Datasets are run directories holding their
 * provenance; all use train worlds only.
 */
import type { Command } from "commander";
import { collectAgentDataset } from "../../agents/collect-agent.ts";
import { AGENT_EVAL_DEFAULTS } from "../../agents/evaluate-agent.ts";
import { type CollectDatasetResult, collectDataset } from "../../data/collect.ts";
import { loadDataset } from "../../data/dataset.ts";
import { FILTER_CRITERIA, parseFilter } from "../../data/filter.ts";
import { DEFAULT_MIX, parseMix, type SelectionMix } from "../../data/select.ts";
import { selectDataset } from "../../data/select-dataset.ts";
import { type DatasetStats, datasetStats } from "../../data/stats.ts";
import { stitchDataset } from "../../data/stitch.ts";
import type { DatasetTaskOptions } from "../../data/tasks.ts";
import { parseTemplateShares } from "../../data/tasks.ts";
import { exportVerlParquet } from "../../data/verl-parquet.ts";
import { parseUpstreamKind, UPSTREAM_KIND_HELP } from "../../policy/openai/server-kind.ts";
import { directoryRun, exportOpenAiJsonl, openRunDirectory } from "../../store/index.ts";
import { TASK_FAMILIES, type TaskFamily } from "../../types/task.ts";
import { createProgress } from "../progress.ts";
import { interruptOnSigint } from "../training-run.ts";
import { parseChoice, parseNumber } from "./options.ts";

const EXPORT_FORMATS = ["openai-jsonl", "verl-parquet"] as const;

interface TaskFlags {
  tasks: string;
  family?: string;
  template?: string;
  templateShare?: string;
  seed: string;
}

function taskOptions(flags: TaskFlags): DatasetTaskOptions {
  return {
    count: parseNumber("--tasks", flags.tasks, { integer: true, min: 1 }),
    seed: parseNumber("--seed", flags.seed, { integer: true, min: 0 }),
    ...(flags.family ? { family: parseChoice<TaskFamily>("--family", flags.family, TASK_FAMILIES) } : {}),
    ...(flags.template ? { template: flags.template } : {}),
    ...(flags.templateShare ? { templateShares: parseTemplateShares(flags.templateShare) } : {}),
  };
}

function addTaskOptions(command: Command, defaultTasks: string): Command {
  return command
    .option("--tasks <n>", "number of tasks (train worlds)", defaultTasks)
    .option("--family <family>", `only one family (${TASK_FAMILIES.join(", ")})`)
    .option("--template <name>", "only one template (e.g. sum3, capital-pop)")
    .option(
      "--template-share <list>",
      "fractions of the tasks drawn from given templates, e.g. sum3=0.25 (the rest follows --family/--template)",
    )
    .option("--seed <seed>", "seed of the task selection and the episodes", "1");
}

export function register(program: Command): void {
  const data = program
    .command("data")
    .description("collect, stitch, inspect, select and export SFT/RL datasets");

  // ---- collect ---------------------------------------------------------------------------------
  addTaskOptions(
    data
      .command("collect")
      .description(
        "run a policy through the episode loop with noisy tools and keep the trajectories that pass a filter",
      ),
    "500",
  )
    .option(
      "--policy <policy>",
      "scripted policy, checkpoint directory, hf:<folder> or openai:<base-url>#<model>",
      "expert",
    )
    .option(
      "--noise <rate>",
      "total tool failure rate, split evenly over error/empty/timeout/corrupted",
      "0.2",
    )
    .option(
      "--filter <spec>",
      `rejection-sampling criteria, comma-separated (${FILTER_CRITERIA.join(", ")})`,
      "correct",
    )
    .option("--samples <n>", "episodes per task", "1")
    .option("--keep-per-task <n>", "most passing episodes kept per task", "1")
    .option("--temperature <t>", "sampling temperature (model policies)", "1")
    .option("--max-turns <n>", "turn budget per episode (default: the episode loop's)")
    .option("--batch <n>", "episodes advanced together", "64")
    .option(
      "--out <dir>",
      "dataset directory (default: <runs>/dataset-<date>); the same command again continues an interrupted collection",
    )
    .option(
      "--chunk-tasks <n>",
      "tasks per committed chunk: a kill loses at most one chunk's episodes",
      "256",
    )
    .option("--runs <dir>", "root folder of run directories", "runs")
    .option(
      "--agent <module>",
      "collect your agent's episodes (as `agentrl eval --agent`) through the gateway in front of --policy",
    )
    .option(
      "--agent-cmd <command>",
      "collect the episodes of an agent in any language: the command runs once per episode, the task as JSON on stdin, the answer on its last stdout line",
    )
    .option("--concurrency <n>", "--agent: episodes running at once", String(AGENT_EVAL_DEFAULTS.concurrency))
    .option("--agent-timeout <seconds>", "--agent: seconds an episode may run", "120")
    .option("--agent-memory <MB>", "--agent: heap limit of each agent slot (worker thread)", "2048")
    .option("--agent-retries <n>", "--agent: reruns of an episode whose upstream call failed", "1")
    .option("--upstream-kind <kind>", `--agent: ${UPSTREAM_KIND_HELP}`)
    .option("--max-turn-tokens <n>", "--agent: tokens per call when the agent sends no max_tokens", "32")
    .option("--json", "print the result as JSON")
    .action(async (options, command: Command) => {
      const tasks = taskOptions(options);
      parseFilter(options.filter);
      const samples = parseNumber("--samples", options.samples, { integer: true, min: 1 });
      const progress = createProgress("collect", tasks.count * samples, { quiet: Boolean(options.json) });
      // Ctrl-C or SIGTERM: the run is marked interrupted; the same command continues it.
      if (options.agent || options.agentCmd) {
        const interrupt = interruptOnSigint();
        const result = await collectAgentCommand(
          options,
          command,
          tasks,
          samples,
          progress,
          interrupt.signal,
        ).finally(() => interrupt.dispose());
        progress.stop();
        printCollect(result, Boolean(options.json));
        return;
      }
      const interrupt = interruptOnSigint();
      const result = await collectDataset({
        signal: interrupt.signal,
        policy: options.policy,
        policyOptions: { temperature: parseNumber("--temperature", options.temperature, { min: 0 }) },
        tasks,
        noise: parseNumber("--noise", options.noise, { min: 0, max: 1 }),
        seed: tasks.seed,
        filter: options.filter,
        samplesPerTask: samples,
        maxKeptPerTask: parseNumber("--keep-per-task", options.keepPerTask, { integer: true, min: 1 }),
        ...(options.maxTurns
          ? { budgets: { maxTurns: parseNumber("--max-turns", options.maxTurns, { integer: true, min: 1 }) } }
          : {}),
        batchSize: parseNumber("--batch", options.batch, { integer: true, min: 1 }),
        chunkTasks: parseNumber("--chunk-tasks", options.chunkTasks, { integer: true, min: 1 }),
        out: options.out,
        runsRoot: options.runs,
        onProgress: (p) => progress.update(p.episodes, { kept: p.kept }),
      }).finally(() => interrupt.dispose());
      progress.stop();
      printCollect(result, Boolean(options.json));
    });

  // ---- stitch ----------------------------------------------------------------------------------
  addTaskOptions(
    data
      .command("stitch")
      .description(
        "assemble stitched trajectories from gold single steps with clean observations (the baseline)",
      ),
    "500",
  )
    .option("--out <dir>", "dataset directory to create (default: <runs>/dataset-<date>)")
    .option("--runs <dir>", "root folder of run directories", "runs")
    .option("--json", "print the result as JSON")
    .action((options) => {
      const result = stitchDataset({ tasks: taskOptions(options), out: options.out, runsRoot: options.runs });
      if (options.json) console.log(JSON.stringify(result, null, 2));
      else console.log(`${result.trajectories} stitched trajectories written to ${result.directory}`);
    });

  // ---- stats -----------------------------------------------------------------------------------
  data
    .command("stats")
    .description("size, families, templates, turns, tool failures, retries and diversity of a dataset")
    .argument("<dir>", "dataset (or any run) directory")
    .option("--json", "print the statistics as JSON")
    .action((dir: string, options) => {
      const dataset = loadDataset(dir);
      const stats = datasetStats(dataset.trajectories);
      if (options.json)
        console.log(JSON.stringify({ directory: dir, provenance: dataset.provenance, ...stats }, null, 2));
      else printStats(dir, dataset.provenance, stats);
    });

  // ---- select ----------------------------------------------------------------------------------
  addTaskOptions(
    data
      .command("select")
      .description(
        "model-aware task selection: m rollouts per task, drop tasks solved 0% or 100% of the time, rebalance easy/medium/hard",
      ),
    "400",
  )
    .requiredOption(
      "--policy <policy>",
      "the current model (checkpoint directory, hf:<folder>, scripted name or openai:…)",
    )
    .option("--m <n>", "rollouts per task", "8")
    .option(
      "--mix <mix>",
      "target mix of easy (pass ≥ 0.75) / medium / hard (pass ≤ 0.25), or all (every task with 0 < pass < 1, as measured)",
      "easy:0.3,medium:0.4,hard:0.3",
    )
    .option("--count <n>", "most tasks to select (default: as many as the mix allows)")
    .option("--noise <rate>", "total tool failure rate during the rollouts", "0")
    .option("--temperature <t>", "sampling temperature (model policies)", "1")
    .option("--no-recheck", "skip the fresh rollouts that measure zero-variance groups after selection")
    .option("--batch <n>", "episodes advanced together", "256")
    .option("--out <dir>", "dataset directory to create (default: <runs>/dataset-<date>)")
    .option("--runs <dir>", "root folder of run directories", "runs")
    .option("--json", "print the result as JSON")
    .action(async (options) => {
      const tasks = taskOptions(options);
      const m = parseNumber("--m", options.m, { integer: true, min: 2 });
      const mix: SelectionMix = options.mix ? parseMix(options.mix) : DEFAULT_MIX;
      const recheck = options.recheck !== false;
      const progress = createProgress("select", tasks.count * m, { quiet: Boolean(options.json) });
      const result = await selectDataset({
        policy: options.policy,
        policyOptions: { temperature: parseNumber("--temperature", options.temperature, { min: 0 }) },
        tasks,
        m,
        mix,
        ...(options.count ? { count: parseNumber("--count", options.count, { integer: true, min: 1 }) } : {}),
        noise: parseNumber("--noise", options.noise, { min: 0, max: 1 }),
        seed: tasks.seed,
        recheck,
        batchSize: parseNumber("--batch", options.batch, { integer: true, min: 1 }),
        out: options.out,
        runsRoot: options.runs,
        onProgress: (p) => {
          if (p.phase === "measure") progress.update(p.episodes);
        },
      });
      progress.stop();
      const { tasks: _selected, ...summary } = result;
      if (options.json) {
        console.log(JSON.stringify(summary, null, 2));
        return;
      }
      const s = result.selection;
      const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
      console.log(`selection written to ${result.directory} (selection.json, tasks.jsonl)`);
      console.log(
        `${s.candidates} candidates, ${m} rollouts each: ${s.dropped.unsolved} never solved, ${s.dropped.alwaysSolved} always solved (dropped)`,
      );
      console.log(
        `available easy/medium/hard: ${s.available.easy}/${s.available.medium}/${s.available.hard}`,
      );
      console.log(
        `selected ${s.selectedCount}: easy ${s.chosen.easy}, medium ${s.chosen.medium}, hard ${s.chosen.hard}${s.mixMet ? "" : " (mix not met: a bucket was empty)"}`,
      );
      console.log(
        `zero-variance groups: ${pct(s.zeroVariance.before)} of candidates before; after: ${pct(s.zeroVariance.afterInSample)} on the same rollouts` +
          (s.zeroVariance.afterFresh === null
            ? ""
            : `, ${pct(s.zeroVariance.afterFresh)} on ${m} fresh rollouts`),
      );
    });

  // ---- export ----------------------------------------------------------------------------------
  data
    .command("export")
    .description("write a dataset as OpenAI fine-tuning JSONL or verl multi-turn SFT parquet")
    .argument("<dir>", "dataset (or any run) directory")
    .requiredOption("--out <file>", "file to write")
    .option("--format <format>", `output format (${EXPORT_FORMATS.join(", ")})`, "openai-jsonl")
    .option("--correct-only", "only trajectories whose answer was correct")
    .option(
      "--no-lossless",
      "openai-jsonl: omit the `agentrl` record (OpenAI's fine-tuning API rejects unknown keys)",
    )
    .option("--system-prompt <text>", "system message to put first in every conversation")
    .option("--json", "print the summary as JSON")
    .action(async (dir: string, options) => {
      const format = parseChoice("--format", options.format, EXPORT_FORMATS);
      let written: number;
      let tools: string[];
      let datasetClass: string | undefined;
      if (format === "verl-parquet") {
        const summary = exportVerlParquet(dir, options.out, {
          correctOnly: Boolean(options.correctOnly),
          systemPrompt: options.systemPrompt,
        });
        written = summary.written;
        tools = summary.tools.map((tool) => tool.name);
        datasetClass = summary.datasetClass;
      } else {
        const store = openRunDirectory(dir, { readOnly: true });
        try {
          const summary = await exportOpenAiJsonl(store, directoryRun(store, dir).id, options.out, {
            correctOnly: Boolean(options.correctOnly),
            lossless: options.lossless,
            systemPrompt: options.systemPrompt,
          });
          written = summary.written;
          tools = summary.tools.map((tool) => tool.name);
        } finally {
          store.close();
        }
      }
      if (options.json)
        console.log(
          JSON.stringify({ directory: dir, out: options.out, format, written, tools, datasetClass }),
        );
      else {
        console.log(
          `wrote ${written} trajectories of ${dir} to ${options.out} (${format}; tools: ${tools.join(", ")})`,
        );
        if (datasetClass)
          console.log(
            `verl reads it with ${datasetClass}: data.custom_cls.path=${datasetClass} data.custom_cls.name=AgentrlMultiTurnSFTDataset`,
          );
      }
    });
}

function printCollect(result: CollectDatasetResult & { gateway?: Record<string, number> }, json: boolean) {
  if (json) {
    console.log(JSON.stringify(result, null, 2));
    return;
  }
  console.log(`dataset written to ${result.directory}`);
  console.log(
    `${result.kept} kept of ${result.episodes} episodes on ${result.tasks} tasks (${result.tasksWithKept} tasks with a kept trajectory); filter ${result.provenance.filter}`,
  );
  if (result.rejected > 0) console.log(`rejected: ${JSON.stringify(result.rejections)}`);
  console.log(`infra failures ${result.infraFailures} (upstream, sandbox or verifier broke: never kept)`);
  if (result.gateway)
    console.log(
      `gateway calls ${result.gateway.calls} (${result.gateway.failedCalls} failed), prefix breaks ${result.gateway.prefixBreaks}`,
    );
}

/** Flags of the in-process episode loop that mean nothing for an agent (it runs its own loop and tools). */
const LOOP_ONLY_FLAGS = [
  ["noise", "--noise"],
  ["maxTurns", "--max-turns"],
  ["batch", "--batch"],
] as const;

/** `data collect --agent`: the agent's episodes through the gateway (src/agents/collect-agent.ts). */
async function collectAgentCommand(
  options: Record<string, string>,
  command: Command,
  tasks: DatasetTaskOptions,
  samples: number,
  progress: ReturnType<typeof createProgress>,
  signal: AbortSignal,
) {
  if (command.getOptionValueSource("policy") !== "cli")
    throw new Error(
      "--agent needs --policy: the model behind the gateway (a checkpoint, or openai:<url>#<model>)",
    );
  for (const [key, flag] of LOOP_ONLY_FLAGS)
    if (command.getOptionValueSource(key) === "cli")
      throw new Error(`${flag} does not apply to --agent: the agent runs its own loop and tools`);
  if (options.agent && options.agentCmd)
    throw new Error("give either --agent <module> or --agent-cmd <command>, not both");
  return collectAgentDataset({
    ...(options.agentCmd
      ? { agentCommand: options.agentCmd }
      : {
          agentPath: options.agent,
          agentMemoryMb: parseNumber("--agent-memory", options.agentMemory, { integer: true, min: 16 }),
        }),
    policy: options.policy,
    temperature: parseNumber("--temperature", options.temperature, { min: 0 }),
    maxTurnTokens: parseNumber("--max-turn-tokens", options.maxTurnTokens, { integer: true, min: 1 }),
    tasks,
    seed: tasks.seed,
    filter: options.filter,
    samplesPerTask: samples,
    maxKeptPerTask: parseNumber("--keep-per-task", options.keepPerTask, { integer: true, min: 1 }),
    concurrency: parseNumber("--concurrency", options.concurrency, { integer: true, min: 1 }),
    timeoutMs: parseNumber("--agent-timeout", options.agentTimeout, { min: 0.001 }) * 1000,
    retries: parseNumber("--agent-retries", options.agentRetries, { integer: true, min: 0 }),
    chunkTasks: parseNumber("--chunk-tasks", options.chunkTasks, { integer: true, min: 1 }),
    ...(options.upstreamKind !== undefined
      ? { upstream: { upstreamKind: parseUpstreamKind(options.upstreamKind) } }
      : {}),
    out: options.out,
    runsRoot: options.runs,
    onProgress: (p) => progress.update(p.episodes, { kept: p.kept }),
    signal,
  });
}

function printStats(dir: string, provenance: Record<string, unknown>, stats: DatasetStats) {
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  const list = (record: Record<string, number>) =>
    Object.entries(record)
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .map(([key, count]) => `${key} ${count}`)
      .join(", ");
  console.log(
    `${dir}: ${stats.trajectories} trajectories on ${stats.tasks} tasks (source ${String(provenance.source ?? "?")})`,
  );
  console.log(`correct ${pct(stats.correct_rate)}; end reasons: ${list(stats.end_reasons)}`);
  console.log(`families: ${list(stats.families)}`);
  console.log(`templates: ${list(stats.templates)}`);
  console.log(
    `turns: mean ${stats.turns.mean.toFixed(2)}, min ${stats.turns.min}, max ${stats.turns.max}; tool calls: ${stats.tool_calls.mean.toFixed(2)} per trajectory (${list(stats.tool_calls.by_tool)})`,
  );
  console.log(
    `tool failures: ${pct(stats.tool_failure_rate)} of calls; ${pct(stats.trajectories_with_failure)} of trajectories have one`,
  );
  console.log(
    `retries (a call repeated): ${stats.retries.total} (${stats.retries.per_trajectory.toFixed(2)} per trajectory, ${pct(stats.retries.trajectories_with_retry)} of trajectories)` +
      (stats.retries.retry_after_failure_rate === null
        ? ""
        : `; ${pct(stats.retries.retry_after_failure_rate)} of failures followed by another call`),
  );
  console.log(`format errors per trajectory: ${stats.format_errors_per_trajectory.toFixed(3)}`);
  console.log(
    `diversity: ${stats.diversity.distinct_action_sequences} distinct action sequences, ${stats.diversity.distinct_call_sequences} distinct call sequences (with arguments), ${stats.diversity.distinct_queries_per_task.toFixed(2)} distinct queries per task`,
  );
  for (const { sequence, count } of stats.diversity.top_action_sequences)
    console.log(`  ${count}× ${sequence}`);
}
