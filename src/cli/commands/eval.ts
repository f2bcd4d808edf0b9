/**
 * `agentrl eval`: pass@k of a policy on world tasks or on a task file. Samples n episodes per task,
 * stores every trajectory in an eval run directory, and prints the pass@k table (overall and per
 * family) and the paths of `passk.json`, `passk.svg` and `passk.html`. A killed eval resumes with
 * `--resume <dir>` (or by rerunning with the same `--run-id`): stored episodes are kept, the rest are
 * sampled, with the task list, verifier, tools and budgets the run recorded.
 *
 *   agentrl eval --policy models/base-strong --n 64 --tasks 100
 *   agentrl eval --policy openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-4B --tasks aime.jsonl --verifier math --code
 *   agentrl eval --resume runs/eval-20250101-120000
 *
 * A task file (src/tasks) needs `--verifier`; its episodes get no tools unless `--code` (the QuickJS
 * sandbox) and/or an MCP server (`--mcp-command "<cmd>"` or `--mcp-url`) give them, with `--noise`
 * injected client-side and labelled. Budgets: the episode loop's defaults (14 turns, 32 tokens per
 * turn, 160 per episode) for world tasks on in-process policies; 4096 per turn and 16384 per
 * episode for `openai:` policies and task files.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import type { EpisodeBudgets } from "../../env/run-episodes.ts";
import { formatCurveTable } from "../../eval/curves.ts";
import { evalJson } from "../../eval/eval-files.ts";
import { readEvalRunConfig, recordedTaskSource } from "../../eval/eval-run-data.ts";
import type { EvalMcpSetup, EvalToolSetup } from "../../eval/eval-tools.ts";
import {
  defaultEvalBudgets,
  type EvalConfig,
  type EvalResult,
  type EvaluateOptions,
  evaluate,
} from "../../eval/run-eval.ts";
import { parseOpenAiSpec } from "../../policy/openai/spec.ts";
import { resolvePolicy } from "../../policy/resolve.ts";
import { readTaskFile } from "../../tasks/index.ts";
import { TASK_FAMILIES, type TaskFamily } from "../../types/task.ts";
import { VERIFIER_NAMES, type VerifierName } from "../../verify/index.ts";
import { agentRunConfig, evalAgentCommand } from "./eval-agent.ts";
import { runEvalSession } from "./eval-session.ts";
import { parseChoice, parseNumber } from "./options.ts";

interface EvalCommandOptions {
  policy?: string;
  split: string;
  tasks: string;
  n: string;
  family?: string;
  seed: string;
  taskSeed: string;
  temperature: string;
  topP: string;
  noise: string;
  verifier?: string;
  code?: boolean;
  python?: boolean;
  pythonWheels?: string;
  mcpCommand?: string;
  mcpUrl?: string;
  mcpToken?: string;
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

/** Options that only make sense with world tasks, and those that need a task file. */
const WORLD_ONLY = ["split", "family", "taskSeed"] as const;
const FILE_ONLY = ["verifier", "code", "python", "pythonWheels", "mcpCommand", "mcpUrl", "mcpToken"] as const;

/** `--tasks` is a count of world tasks when it is a whole number, else the path of a task file. */
function isTaskCount(raw: string): boolean {
  return /^\s*\d+\s*$/.test(raw);
}

/**
 * Splits a command line into words the way a POSIX shell would for plain words, '…' and "…"
 * quoting and backslash escapes, without running a shell (no variables, globs or pipes).
 */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < line.length; i++) {
    const char = line[i];
    if (quote === "'") {
      if (char === "'") quote = null;
      else word += char;
    } else if (quote === '"') {
      if (char === '"') quote = null;
      else if (char === "\\" && i + 1 < line.length && '"\\$`'.includes(line[i + 1])) word += line[++i];
      else word += char;
    } else if (char === "'" || char === '"') {
      quote = char;
      inWord = true;
    } else if (char === "\\" && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += char;
      inWord = true;
    }
  }
  if (quote) throw new Error(`--mcp-command: unclosed ${quote} quote in ${JSON.stringify(line)}`);
  if (inWord) words.push(word);
  return words;
}

/** The tool setup of a task file from the flags (none by default). */
function toolSetupOf(raw: EvalCommandOptions, token: string | undefined): EvalToolSetup {
  if (raw.mcpCommand !== undefined && raw.mcpUrl !== undefined) {
    throw new Error("give --mcp-command or --mcp-url, not both");
  }
  let mcp: EvalMcpSetup | null = null;
  if (raw.mcpCommand !== undefined) {
    const [command, ...args] = splitCommandLine(raw.mcpCommand);
    if (!command)
      throw new Error('--mcp-command needs a command, e.g. --mcp-command "npx agentrl mcp serve"');
    mcp = { command, args };
  } else if (raw.mcpUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(raw.mcpUrl);
    } catch {
      throw new Error(`--mcp-url must be an http(s) URL, got "${raw.mcpUrl}"`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new Error(`--mcp-url must be an http(s) URL, got "${raw.mcpUrl}"`);
    }
    mcp = { url: raw.mcpUrl, token: token !== undefined };
  }
  if (raw.pythonWheels !== undefined && !raw.python) throw new Error("--python-wheels needs --python");
  return {
    code: Boolean(raw.code),
    ...(raw.python ? { python: true } : {}),
    ...(raw.pythonWheels !== undefined ? { pythonWheels: resolve(raw.pythonWheels) } : {}),
    mcp,
  };
}

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
  program
    .command("eval")
    .description("sample n episodes per task, store them, and write pass@k curves overall and per family")
    .option("--policy <policy>", "scripted policy name, checkpoint directory, or openai:<base-url>#<model>")
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
    )
    .option("--verifier <name>", `answer check of a task file (${VERIFIER_NAMES.join(", ")})`)
    .option("--code", "task files: offer the sandboxed JavaScript code tool")
    .option("--python", "task files: offer the sandboxed Python tool (Pyodide in a locked-down process)")
    .option(
      "--python-wheels <dir>",
      "--python: a folder of pure-Python wheels installed offline (e.g. sympy)",
    )
    .option(
      "--mcp-command <cmd>",
      'task files: offer the tools of an MCP server started by this command (stdio), e.g. "npx agentrl mcp serve"',
    )
    .option("--mcp-url <url>", "task files: offer the tools of an MCP server at this Streamable HTTP URL")
    .option("--mcp-token <token>", "bearer token for --mcp-url, never stored (default: $AGENTRL_MCP_TOKEN)")
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
        if (fileTasks) {
          const worldOnly = WORLD_ONLY.filter((name) => command.getOptionValueSource(name) === "cli");
          if (worldOnly.length > 0) {
            throw new Error(
              `${worldOnly.map(flagOf).join(", ")} only apply to world tasks, not to a task file`,
            );
          }
          if (raw.verifier === undefined) {
            throw new Error(
              `a task file needs --verifier <name> to check answers (one of ${VERIFIER_NAMES.join(", ")})`,
            );
          }
          const verifier = parseChoice<VerifierName>("--verifier", raw.verifier, VERIFIER_NAMES);
          if (!existsSync(raw.tasks)) {
            throw new Error(
              `--tasks: no such file "${raw.tasks}" (give a number of world tasks or a task file)`,
            );
          }
          const toolSetup = toolSetupOf(raw, mcpToken);
          options = {
            ...common,
            tasks: { type: "given", tasks: await readTaskFile(raw.tasks), name: raw.tasks },
            verifier,
            toolSetup,
            ...(mcpToken ? { mcpToken } : {}),
          };
        } else {
          const fileOnly = FILE_ONLY.filter((name) => raw[name] !== undefined);
          if (fileOnly.length > 0) {
            throw new Error(
              `${fileOnly.map(flagOf).join(", ")} need a task file (--tasks <file>); world tasks use the world's tools and answer check`,
            );
          }
          const family = raw.family
            ? parseChoice<TaskFamily>("--family", raw.family, TASK_FAMILIES)
            : undefined;
          options = {
            ...common,
            tasks: {
              type: "world",
              split: parseChoice("--split", raw.split, ["train", "test"] as const),
              count: parseNumber("--tasks", raw.tasks, { integer: true, min: 1 }),
              seed: parseNumber("--task-seed", raw.taskSeed, { integer: true, min: 0 }),
              ...(family ? { family } : {}),
            },
          };
        }
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

/** `--max-turn-tokens` from `maxTurnTokens`. */
function flagOf(name: string): string {
  return `--${name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`;
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
