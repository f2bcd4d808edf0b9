/**
 * `agentrl eval --agent <module>` (or `--agent-cmd "<command>"`): pass@k of a user's agent (src/agents), run n times per task
 * through an in-process recording gateway in front of `--policy`. Shares `agentrl eval`'s task,
 * sampling and run flags; `--concurrency` episodes run at once, each under `--agent-timeout`
 * seconds, and an episode whose upstream call failed is rerun up to `--agent-retries` times. A killed run resumes with `--resume <dir>` (or the same `--run-id`).
 */
import { existsSync } from "node:fs";
import { AGENT_EVAL_DEFAULTS, type AgentEvalConfig, evaluateAgent } from "../../agents/evaluate-agent.ts";
import { formatCurveTable } from "../../eval/curves.ts";
import { evalJson } from "../../eval/eval-files.ts";
import { readEvalRunConfig, recordedTaskSource } from "../../eval/eval-run-data.ts";
import type { EvalTaskSource } from "../../eval/eval-tasks.ts";
import { parseUpstreamKind } from "../../policy/openai/server-kind.ts";
import { readTaskFile } from "../../tasks/index.ts";
import { TASK_FAMILIES, type TaskFamily } from "../../types/task.ts";
import { VERIFIER_NAMES, type VerifierName } from "../../verify/index.ts";
import { runEvalSession } from "./eval-session.ts";
import { parseChoice, parseNumber } from "./options.ts";

export interface AgentEvalFlags {
  agent?: string;
  agentCmd?: string;
  agentMemory?: string;
  policy?: string;
  split: string;
  tasks: string;
  n: string;
  family?: string;
  seed: string;
  taskSeed: string;
  temperature: string;
  topP: string;
  verifier?: string;
  maxTurnTokens?: string;
  concurrency?: string;
  agentTimeout?: string;
  agentRetries?: string;
  upstreamKind?: string;
  runs: string;
  runId?: string;
  resume?: string;
  json?: boolean;
}

/** The agent config of an eval run directory, or null when the run is not an agent eval. */
export function agentRunConfig(directory: string): AgentEvalConfig | null {
  const { config } = readEvalRunConfig(directory);
  return "agent" in config ? (config as AgentEvalConfig) : null;
}

export async function evalAgentCommand(raw: AgentEvalFlags): Promise<void> {
  const concurrency = parseNumber(
    "--concurrency",
    raw.concurrency ?? String(AGENT_EVAL_DEFAULTS.concurrency),
    {
      integer: true,
      min: 1,
    },
  );
  let options: Parameters<typeof evaluateAgent>[0];
  if (raw.resume) {
    const config = agentRunConfig(raw.resume);
    if (!config) throw new Error(`${raw.resume} is not an --agent eval run`);
    const { tasks } = readEvalRunConfig(raw.resume);
    const source = recordedTaskSource(config.tasks, tasks);
    options = {
      ...(config.agent.command !== undefined
        ? { agentCommand: config.agent.command }
        : {
            agentPath: config.agent.module,
            ...(config.agent.memoryMb !== undefined ? { agentMemoryMb: config.agent.memoryMb } : {}),
          }),
      policy: config.agent.policy,
      tasks: source,
      n: config.n,
      seed: config.seed,
      ...(config.temperature !== null ? { temperature: config.temperature } : {}),
      ...(config.topP !== null ? { topP: config.topP } : {}),
      ...(config.verifier ? { verifier: config.verifier } : {}),
      maxTurnTokens: config.budgets.maxTurnTokens,
      timeoutMs: config.agent.timeoutMs,
      resume: raw.resume,
    };
  } else {
    if (raw.agent === undefined && raw.agentCmd === undefined)
      throw new Error("--agent <module> or --agent-cmd <command> is required");
    if (raw.agent !== undefined && raw.agentCmd !== undefined)
      throw new Error("give either --agent <module> or --agent-cmd <command>, not both");
    if (!raw.policy) throw new Error("--agent needs --policy: the model behind the gateway");
    const fileTasks = !/^\s*\d+\s*$/.test(raw.tasks);
    let tasks: EvalTaskSource;
    let verifier: VerifierName | undefined;
    if (fileTasks) {
      if (!existsSync(raw.tasks)) throw new Error(`--tasks: no such file "${raw.tasks}"`);
      if (raw.verifier === undefined) throw new Error("a task file needs --verifier <name>");
      verifier = parseChoice<VerifierName>("--verifier", raw.verifier, VERIFIER_NAMES);
      tasks = { type: "given", tasks: await readTaskFile(raw.tasks), name: raw.tasks };
    } else {
      const family = raw.family ? parseChoice<TaskFamily>("--family", raw.family, TASK_FAMILIES) : undefined;
      tasks = {
        type: "world",
        split: parseChoice("--split", raw.split, ["train", "test"] as const),
        count: parseNumber("--tasks", raw.tasks, { integer: true, min: 1 }),
        seed: parseNumber("--task-seed", raw.taskSeed, { integer: true, min: 0 }),
        ...(family ? { family } : {}),
      };
    }
    options = {
      ...(raw.agentCmd !== undefined
        ? { agentCommand: raw.agentCmd }
        : {
            agentPath: raw.agent,
            ...(raw.agentMemory !== undefined
              ? { agentMemoryMb: parseNumber("--agent-memory", raw.agentMemory, { integer: true, min: 16 }) }
              : {}),
          }),
      policy: raw.policy,
      tasks,
      n: parseNumber("--n", raw.n, { integer: true, min: 1 }),
      seed: parseNumber("--seed", raw.seed, { integer: true, min: 0 }),
      temperature: parseNumber("--temperature", raw.temperature, { min: 0 }),
      topP: parseNumber("--top-p", raw.topP, { min: 0, max: 1 }),
      ...(verifier ? { verifier } : {}),
      ...(raw.maxTurnTokens !== undefined
        ? { maxTurnTokens: parseNumber("--max-turn-tokens", raw.maxTurnTokens, { integer: true, min: 1 }) }
        : {}),
      timeoutMs:
        raw.agentTimeout !== undefined
          ? parseNumber("--agent-timeout", raw.agentTimeout, { min: 0.001 }) * 1000
          : AGENT_EVAL_DEFAULTS.timeoutMs,
      runsRoot: raw.runs,
      ...(raw.runId ? { runId: raw.runId } : {}),
    };
  }
  const result = await runEvalSession(
    { quiet: Boolean(raw.json), resume: raw.resume, errorsLabel: "failed_episodes" },
    (hooks) =>
      evaluateAgent({
        ...options,
        concurrency,
        ...(raw.upstreamKind !== undefined
          ? { upstream: { upstreamKind: parseUpstreamKind(raw.upstreamKind) } }
          : {}),
        ...(raw.agentRetries !== undefined
          ? { retries: parseNumber("--agent-retries", raw.agentRetries, { integer: true, min: 0 }) }
          : {}),
        ...hooks,
      }),
  );
  if (raw.json) {
    console.log(
      JSON.stringify(
        {
          directory: result.directory,
          files: result.files,
          metrics: result.metrics,
          episodes: result.episodes,
          ...evalJson(result),
        },
        null,
        2,
      ),
    );
    return;
  }
  const { totals, config } = result;
  console.log(
    `agent ${options.agentPath} on ${options.policy}; ${totals.tasks} tasks x n = ${config.n}; ` +
      `${result.episodes.sampled} episodes run, ${result.episodes.resumed} found stored`,
  );
  console.log(formatCurveTable(result.curves));
  console.log(
    `solved at k = n: ${totals.solved}/${totals.tasks}; correct ${totals.correct}/${totals.samples}; ` +
      `failed episodes (agent error, timeout) ${totals.policyErrors}; ` +
      `infra failures (upstream, verifier; not samples) ${totals.infraFailures}; gateway calls ${result.metrics["gateway/calls"]}, prefix breaks ${result.metrics["gateway/prefix_breaks"]}`,
  );
  const textOnly = result.metrics["gateway/text_only_calls"] ?? 0;
  if (textOnly > 0)
    console.log(`text-only calls (the server returned no token ids: measured, never trained on) ${textOnly}`);
  console.log(`run: ${result.directory}`);
}
