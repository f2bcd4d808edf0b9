import type { Command } from "commander";
import type { EpisodeBudgets } from "../../env/run-episodes.ts";
import { formatCurveTable } from "../../eval/curves.ts";
import { evalJson } from "../../eval/eval-files.ts";
import { readEvalRunConfig, recordedTaskSource } from "../../eval/eval-run-data.ts";
import type { EvalToolSetup } from "../../eval/eval-tools.ts";
import {
  defaultEvalBudgets,
  type EvalConfig,
  type EvalResult,
  type EvaluateOptions,
  evaluate,
} from "../../eval/run-eval.ts";
import { UPSTREAM_KIND_HELP } from "../../policy/openai/server-kind.ts";
import { parseOpenAiSpec } from "../../policy/openai/spec.ts";
import { resolvePolicy } from "../../policy/resolve.ts";
import { TASK_FAMILIES } from "../../types/task.ts";
import { agentRunConfig, evalAgentCommand } from "./eval-agent.ts";
import { runEvalSession } from "./eval-session.ts";
import { parseNumber } from "./options.ts";
import { isTaskCount, type TaskSourceFlags, taskSourceOf, withTaskFileOptions } from "./task-options.ts";

interface EvalCommandOptions extends TaskSourceFlags {
  policy?: string;
  n: string;
  seed: string;
  temperature: string;
  topP: string;
  noise: string;
  maxTurns?: string;
  maxTurnTokens?: string;
  maxTokens?: string;
  batch: string;
  runs: string;
  runId?: string;
  resume?: string;
  json?: boolean;
  agent?: string;
  agentCmd?: string;
  concurrency?: string;
  agentTimeout?: string;
  agentRetries?: string;
  upstreamKind?: string;
  agentMemory?: string;
}

/** Options that decide the episodes: taken from the stored config on resume, so giving them then is ignored. */
const FIXED_ON_RESUME = [
  "policy",
  "split",
  "tasks",
  "n",
  "family",
  "seed",
  "taskSeed",
  "temperature",
  "topP",
  "noise",
  "verifier",
  "code",
  "python",
  "pythonWheels",
  "mcpCommand",
  "mcpUrl",
  "maxTurns",
  "maxTurnTokens",
  "maxTokens",
] as const;

function describeTools(setup: EvalToolSetup | null | undefined): string {
  if (!setup) return "world tools";
  const parts = [
    ...(setup.code ? ["code"] : []),
    ...(setup.python ? ["python"] : []),
    ...(setup.mcp
      ? [
          "command" in setup.mcp
            ? `mcp ${[setup.mcp.command, ...setup.mcp.args].join(" ")}`
            : `mcp ${setup.mcp.url}`,
        ]
      : []),
  ];
  return parts.length > 0 ? parts.join(", ") : "none";
}

/** Budgets: the defaults for this kind of eval, then any budget flag given. */
function budgetsOf(raw: EvalCommandOptions, defaults: EpisodeBudgets): EpisodeBudgets {
  return {
    ...defaults,
    ...(raw.maxTurns !== undefined
      ? { maxTurns: parseNumber("--max-turns", raw.maxTurns, { integer: true, min: 1 }) }
      : {}),
    ...(raw.maxTurnTokens !== undefined
      ? { maxTurnTokens: parseNumber("--max-turn-tokens", raw.maxTurnTokens, { integer: true, min: 1 }) }
      : {}),
    ...(raw.maxTokens !== undefined
      ? { maxTokens: parseNumber("--max-tokens", raw.maxTokens, { integer: true, min: 1 }) }
      : {}),
    // The python tool bounds the program itself (5 s); a call may first wait for a fresh interpreter
    // while a full batch of episodes calls it, which the episode's tool timeout must not count as a hang.
    ...(raw.python ? { toolTimeoutMs: Math.max(defaults.toolTimeoutMs, 120_000) } : {}),
  };
}

export function register(program: Command): void {
  withTaskFileOptions(
    program
      .command("eval")
      .description("sample n episodes per task, store them, and write pass@k curves overall and per family")
      .option(
        "--policy <policy>",
        "scripted policy name, checkpoint directory, hf:<folder>, or openai:<base-url>#<model>",
      )
      .option("--split <split>", "train or test worlds", "test")
      .option(
        "--tasks <count|file>",
        "number of world tasks, or a task file (.jsonl, .json, .parquet; needs --verifier)",
        "100",
      )
      .option("--n <n>", "samples per task (the largest k)", "64")
      .option("--family <family>", `only one family (${TASK_FAMILIES.join(", ")})`)
      .option(
        "--seed <seed>",
        "sampling seed (episode seeds derive from it, the task id and the sample index)",
        "1",
      )
      .option(
        "--task-seed <seed>",
        "seed of the task selection (keep it equal across models to compare them)",
        "1",
      )
      .option("--temperature <t>", "sampling temperature (the paper's curves: 0.6)", "0.6")
      .option("--top-p <p>", "nucleus sampling mass (the paper's curves: 0.95)", "0.95")
      .option(
        "--noise <rate>",
        "total tool failure rate, split evenly over error/empty/timeout/corrupted (labelled as injected)",
        "0",
      ),
  )
    .option("--max-turns <n>", "turns per episode (default 14)")
    .option(
      "--max-turn-tokens <n>",
      "tokens the policy may write in one turn (default 32; 4096 for openai: policies and task files)",
    )
    .option(
      "--max-tokens <n>",
      "tokens the policy may write in an episode (default 160; 16384 for openai: policies and task files)",
    )
    .option(
      "--batch <n>",
      "episodes advanced together (embedded: decode batch; endpoints: concurrency)",
      "64",
    )
    .option("--runs <dir>", "root folder of run directories", "runs")
    .option("--run-id <id>", "name of the run directory; an existing one is resumed")
    .option("--resume <dir>", "resume an eval run directory with its stored config")
    .option("--json", "print the result (config, totals, curves, per-task counts, paths) as JSON")
    .option(
      "--agent <module>",
      "evaluate your agent: a module whose default export is async (task, { baseURL, apiKey, model, signal }) => answer, run through a recording gateway in front of --policy",
    )
    .option(
      "--agent-cmd <command>",
      "evaluate an agent in any language: the command runs once per episode with the task as JSON on stdin ({id, question, metadata}), OPENAI_BASE_URL/ANTHROPIC_BASE_URL pointing at the gateway, and prints its answer on its last stdout line",
    )
    .option("--concurrency <n>", "--agent: episodes running at once", "8")
    .option("--agent-timeout <seconds>", "--agent: seconds an episode may run (default 120)")
    .option("--agent-retries <n>", "--agent: reruns of an episode whose upstream call failed (default 1)")
    .option("--upstream-kind <kind>", `--agent: ${UPSTREAM_KIND_HELP}`)
    .option("--agent-memory <MB>", "--agent: heap limit of each agent slot, a worker thread (default 2048)")
    .action(async (raw: EvalCommandOptions, command: Command) => {
      if (raw.agent !== undefined || raw.agentCmd !== undefined || (raw.resume && agentRunConfig(raw.resume)))
        return evalAgentCommand(raw);
      const batchSize = parseNumber("--batch", raw.batch, { integer: true, min: 1 });
      const mcpToken = raw.mcpToken ?? process.env.AGENTRL_MCP_TOKEN ?? undefined;
      let options: Omit<EvaluateOptions, "policy"> & { policySpec: string };
      if (raw.resume) {
        const ignored = FIXED_ON_RESUME.filter((name) => command.getOptionValueSource(name) === "cli");
        if (ignored.length > 0 && !raw.json) {
          console.error(
            `agentrl eval: --resume uses the run's stored config; ignoring ${ignored.join(", ")}`,
          );
        }
        const { config, tasks } = readEvalRunConfig(raw.resume);
        const source = recordedTaskSource(config.tasks, tasks);
        options = {
          ...resumedSetup(config),
          ...(mcpToken ? { mcpToken } : {}),
          policySpec: config.policy,
          tasks: source,
          n: config.n,
          seed: config.seed,
          ...(config.temperature !== null ? { temperature: config.temperature } : {}),
          ...(config.topP !== null ? { topP: config.topP } : {}),
          ...(config.noise !== null ? { noise: config.noise } : {}),
          budgets: config.budgets,
          resume: raw.resume,
        };
      } else {
        if (!raw.policy) throw new Error("--policy is required (or --resume <dir>)");
        const fileTasks = !isTaskCount(raw.tasks);
        const common = {
          policySpec: raw.policy,
          n: parseNumber("--n", raw.n, { integer: true, min: 1 }),
          seed: parseNumber("--seed", raw.seed, { integer: true, min: 0 }),
          temperature: parseNumber("--temperature", raw.temperature, { min: 0 }),
          topP: parseNumber("--top-p", raw.topP, { min: 0, max: 1 }),
          noise: parseNumber("--noise", raw.noise, { min: 0, max: 1 }),
          budgets: budgetsOf(
            raw,
            defaultEvalBudgets({ chat: parseOpenAiSpec(raw.policy) !== null, fileTasks }),
          ),
          runsRoot: raw.runs,
          ...(raw.runId ? { runId: raw.runId } : {}),
        };
        const source = await taskSourceOf(raw, command, mcpToken);
        options = {
          ...common,
          ...source,
          ...(source.verifier && mcpToken ? { mcpToken } : {}),
        };
      }
      const policy = await resolvePolicy(options.policySpec, {
        ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
        ...(options.topP !== undefined ? { topP: options.topP } : {}),
        // An endpoint gets as many requests in flight as episodes advance together.
        openai: { concurrency: batchSize },
      });
      try {
        const result = await runEvalSession(
          { quiet: Boolean(raw.json), resume: raw.resume, errorsLabel: "policy_errors" },
          (hooks) => evaluate({ ...options, policy, batchSize, ...hooks }),
        );
        if (raw.json) {
          console.log(
            JSON.stringify(
              {
                directory: result.directory,
                files: result.files,
                metrics: result.metrics,
                ...evalJson(result),
              },
              null,
              2,
            ),
          );
        } else {
          printResult(result);
        }
      } finally {
        await policy.close?.();
      }
    });
}

/** Verifier and tools of a stored config, as `evaluate` options. */
function resumedSetup(config: EvalConfig): Pick<EvaluateOptions, "verifier" | "toolSetup"> {
  return {
    ...(config.verifier ? { verifier: config.verifier } : {}),
    ...(config.toolSetup ? { toolSetup: config.toolSetup } : {}),
  };
}

function printResult(result: EvalResult): void {
  const { totals, config } = result;
  console.log(
    `policy ${config.policy} (${result.policyId}); ${totals.tasks} tasks x n = ${config.n}; ` +
      `${result.episodes.sampled} episodes sampled, ${result.episodes.resumed} found stored`,
  );
  if (config.tasks.type === "given") {
    console.log(
      `tasks ${config.tasks.name ?? "(given)"}; verifier ${config.verifier ?? "custom"}; tools: ${describeTools(config.toolSetup)}`,
    );
  }
  console.log(formatCurveTable(result.curves));
  console.log(
    `solved at k = n: ${totals.solved}/${totals.tasks}; correct samples ${totals.correct}/${totals.samples}; ` +
      `policy errors ${totals.policyErrors} (counted as failures); ` +
      `infra failures ${totals.infraFailures} (not samples: left out of n)`,
  );
  console.log(`run: ${result.directory}`);
  if (result.files) console.log(`files: ${result.files.json}, ${result.files.svg}, ${result.files.html}`);
}
