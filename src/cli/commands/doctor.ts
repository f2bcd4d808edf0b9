/**
 * `agentrl doctor`: will RL work on these tasks, with this reward, from this policy? A pre-flight
 * before any GPU time (src/doctor): the verifier against gold and degenerate answers, an
 * adversarial panel against the reward, G samples per task for coverage, the environment run twice
 * for determinism, and (for an agent behind the recording gateway) token exactness. Prints each
 * check and the verdict (`--json`: the report), stores the run under `--runs` for the dashboard with
 * its HTML page, and exits with status 1 when not ready.
 *
 *   agentrl doctor --policy models/base-strong --tasks 32 --reward turn-credit --group-size 8
 *   agentrl doctor --policy openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-4B --tasks aime.jsonl --verifier math
 *   agentrl doctor --agent examples/agents/openai.ts --policy models/base-strong --tasks 16 --family bridge
 *
 * The task and tool options are `agentrl eval`'s: world tasks (a count, `--split`, `--family`,
 * `--task-seed`) or a task file with `--verifier` and its tools (`--code`, `--python`, MCP).
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import type { AgentSource } from "../../agents/agent-source.ts";
import { runDoctor } from "../../doctor/run-doctor.ts";
import { saveDoctorRun } from "../../doctor/save.ts";
import { CHECK_IDS, type CheckId, type DoctorReport } from "../../doctor/types.ts";
import {
  describeServer,
  detectServer,
  parseUpstreamKind,
  UPSTREAM_KIND_HELP,
} from "../../policy/openai/server-kind.ts";
import { parseOpenAiSpec } from "../../policy/openai/spec.ts";
import { resolvePolicy } from "../../policy/resolve.ts";
import { REWARD_PRESETS, type RewardSpec, resolveRewardSpec } from "../../reward/spec.ts";
import { TASK_FAMILIES } from "../../types/task.ts";
import { parseChoice, parseNumber } from "./options.ts";
import { flagOf, type TaskSourceFlags, taskSourceOf, withTaskFileOptions } from "./task-options.ts";

interface DoctorCommandOptions extends TaskSourceFlags {
  policy?: string;
  upstreamKind?: string;
  agent?: string;
  agentCmd?: string;
  seed: string;
  temperature: string;
  topP: string;
  noise: string;
  reward: string;
  groupSize: string;
  target: string;
  maxBreakRate: string;
  checks?: string;
  maxTurns?: string;
  maxTurnTokens?: string;
  maxTokens?: string;
  batch: string;
  concurrency: string;
  agentTimeout: string;
  runs: string;
  store: boolean;
  json?: boolean;
}

/** `--reward`: a preset name, or a JSON spec file (`{"outcome": [...], "turn"?: [...]}`). */
export function parseRewardOption(raw: string): RewardSpec | string {
  if (raw in REWARD_PRESETS) return raw;
  if (!existsSync(raw)) {
    throw new Error(
      `--reward: "${raw}" is neither a preset (${Object.keys(REWARD_PRESETS).join(", ")}) nor a JSON spec file`,
    );
  }
  let spec: unknown;
  try {
    spec = JSON.parse(readFileSync(raw, "utf8"));
  } catch (error) {
    throw new Error(`--reward ${raw}: not valid JSON: ${(error as Error).message}`);
  }
  if (typeof spec !== "object" || spec === null || !Array.isArray((spec as RewardSpec).outcome)) {
    throw new Error(`--reward ${raw}: a spec is {"outcome": [{"name": …, "weight"?: …}], "turn"?: […]}`);
  }
  return resolveRewardSpec(spec as RewardSpec);
}

function parseChecks(raw: string | undefined): CheckId[] | undefined {
  if (raw === undefined) return undefined;
  return raw
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean)
    .map((name) => parseChoice<CheckId>("--checks", name, CHECK_IDS));
}

function printReport(report: DoctorReport, saved: string | null): void {
  if (typeof report.setup.server === "string") console.log(`server  ${report.setup.server}`);
  for (const check of report.checks) {
    const mark = check.skipped ? "skip" : check.ok ? "pass" : "FAIL";
    console.log(`${mark.padEnd(4)}  ${check.id.padEnd(15)}  ${check.detail}`);
  }
  console.log("");
  console.log(report.ready ? "ready: every check passed." : "not ready. What to change, first things first:");
  for (const change of report.verdict.changes) console.log(`  - [${change.kind}] ${change.text}`);
  console.log(`(${report.seconds.total} s${saved ? `; report: ${saved}` : ""})`);
}

export function register(program: Command): void {
  withTaskFileOptions(
    program
      .command("doctor")
      .description(
        "pre-flight before RL: verifier, reward hacking, coverage at group size G, determinism, token exactness, and a verdict (exit status 1 when not ready)",
      )
      .option(
        "--policy <policy>",
        "the policy you will train: checkpoint directory, hf:<folder>, scripted name, or openai:<base-url>#<model>",
      )
      .option(
        "--agent <module>",
        "your agent module (default export async (task, { baseURL, apiKey, model, signal }) => answer), run through a recording gateway in front of --policy",
      )
      .option(
        "--agent-cmd <command>",
        "your agent as a command in any language (the task as JSON on stdin, the answer on stdout's last line), run through the gateway like --agent",
      )
      .option("--split <split>", "train or test worlds", "train")
      .option(
        "--tasks <count|file>",
        "number of world tasks, or a task file (.jsonl, .json, .parquet; needs --verifier)",
        "32",
      )
      .option("--family <family>", `only one family (${TASK_FAMILIES.join(", ")})`)
      .option("--seed <seed>", "sampling seed", "1")
      .option("--task-seed <seed>", "seed of the world task selection", "1")
      .option("--temperature <t>", "sampling temperature (RL samples at 1)", "1")
      .option("--top-p <p>", "nucleus sampling mass", "1")
      .option(
        "--noise <rate>",
        "total injected tool failure rate, split over error/empty/timeout/corrupted",
        "0",
      )
      .option(
        "--reward <preset|file>",
        `reward: a preset (${Object.keys(REWARD_PRESETS).join(", ")}) or a JSON spec file`,
        "exact-match",
      )
      .option("--group-size <G>", "GRPO group size: samples per task for coverage", "8")
      .option("--target <share>", "share of GRPO groups with signal coverage must reach", "0.3")
      .option("--max-break-rate <rate>", "token-exactness: largest acceptable prefix-break rate", "0.01")
      .option("--upstream-kind <kind>", UPSTREAM_KIND_HELP)
      .option("--checks <ids>", `only these checks, comma-separated (${CHECK_IDS.join(", ")})`),
  )
    .option("--max-turns <n>", "turns per episode (default 14)")
    .option("--max-turn-tokens <n>", "tokens per turn (default 32; 4096 for openai: policies and task files)")
    .option("--max-tokens <n>", "tokens per episode (default 160; 16384 for openai: policies and task files)")
    .option("--batch <n>", "episodes advanced together when sampling the policy", "64")
    .option("--concurrency <n>", "--agent: episodes running at once", "8")
    .option("--agent-timeout <seconds>", "--agent: seconds an episode may run", "120")
    .option("--runs <dir>", "root folder of run directories (the dashboard lists doctor runs there)", "runs")
    .option("--no-store", "do not store the run (nothing written)")
    .option("--json", "print the report as JSON")
    .action(async (raw: DoctorCommandOptions, command: Command) => {
      const checks = parseChecks(raw.checks);
      const needsPolicy = (checks ?? CHECK_IDS).some((id) => id === "coverage" || id === "token-exactness");
      if (!raw.policy && needsPolicy)
        throw new Error("--policy is required (the model you will train; with --agent, the model behind it)");
      const mcpToken = raw.mcpToken ?? process.env.AGENTRL_MCP_TOKEN ?? undefined;
      const { tasks, verifier, toolSetup } = await taskSourceOf(raw, command, mcpToken);
      const temperature = parseNumber("--temperature", raw.temperature, { min: 0 });
      const topP = parseNumber("--top-p", raw.topP, { min: 0, max: 1 });
      const batchSize = parseNumber("--batch", raw.batch, { integer: true, min: 1 });
      const budget = (name: string, value: string | undefined) =>
        value === undefined ? {} : { [name]: parseNumber(flagOf(name), value, { integer: true, min: 1 }) };
      const policySpec = raw.policy ?? "none";
      if (raw.agent && raw.agentCmd) throw new Error("give one of --agent and --agent-cmd, not both");
      const source: AgentSource | undefined = raw.agent
        ? { kind: "module", path: resolve(raw.agent) }
        : raw.agentCmd
          ? { kind: "command", command: raw.agentCmd }
          : undefined;
      const agent = source
        ? {
            path: raw.agent ?? `cmd:${raw.agentCmd}`,
            source,
            concurrency: parseNumber("--concurrency", raw.concurrency, { integer: true, min: 1 }),
            timeoutMs: parseNumber("--agent-timeout", raw.agentTimeout, { min: 1 }) * 1000,
          }
        : undefined;
      const policy =
        raw.policy && !agent && needsPolicy
          ? await resolvePolicy(raw.policy, { temperature, topP, openai: { concurrency: batchSize } })
          : undefined;
      const endpoint = raw.policy ? parseOpenAiSpec(raw.policy) : null;
      const server = endpoint
        ? raw.upstreamKind !== undefined
          ? {
              kind: parseUpstreamKind(raw.upstreamKind),
              version: null,
              detectedBy: "named (--upstream-kind)",
            }
          : await detectServer(endpoint.baseURL, {
              ...((process.env.OPENAI_API_KEY ?? process.env.AGENTRL_API_KEY)
                ? { apiKey: (process.env.OPENAI_API_KEY ?? process.env.AGENTRL_API_KEY) as string }
                : {}),
            })
        : undefined;
      if (server && !raw.json) console.error(`  server: ${describeServer(server)}`);
      let report: DoctorReport;
      try {
        report = await runDoctor({
          policySpec,
          ...(server ? { server } : {}),
          ...(policy ? { policy } : {}),
          ...(agent ? { agent } : {}),
          tasks,
          ...(verifier ? { verifier } : {}),
          ...(toolSetup ? { toolSetup } : {}),
          ...(mcpToken ? { mcpToken } : {}),
          reward: parseRewardOption(raw.reward),
          groupSize: parseNumber("--group-size", raw.groupSize, { integer: true, min: 2 }),
          noise: parseNumber("--noise", raw.noise, { min: 0, max: 1 }),
          seed: parseNumber("--seed", raw.seed, { integer: true, min: 0 }),
          temperature,
          topP,
          target: parseNumber("--target", raw.target, { min: 0, max: 1 }),
          maxBreakRate: parseNumber("--max-break-rate", raw.maxBreakRate, { min: 0, max: 1 }),
          budgets: {
            ...budget("maxTurns", raw.maxTurns),
            ...budget("maxTurnTokens", raw.maxTurnTokens),
            ...budget("maxTokens", raw.maxTokens),
          },
          batchSize,
          ...(checks ? { checks } : {}),
          ...(raw.json
            ? {}
            : {
                onCheck: (check, seconds) =>
                  console.error(`  ${check.id}: ${check.ok ? "pass" : "fail"} (${seconds} s)`),
              }),
        });
      } finally {
        await policy?.close?.();
      }
      const saved = raw.store ? await saveDoctorRun(report, { root: raw.runs }) : null;
      if (raw.json) console.log(JSON.stringify({ ...report, ...(saved ? { stored: saved } : {}) }, null, 2));
      else printReport(report, saved?.files.html ?? null);
      if (!report.ready) process.exitCode = 1;
    });
}
