// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the launch scripts hold shell parameter expansions
/**
 * `agentrl verl init`: a ready-to-run verl GRPO job folder from a task set.
 *
 *   <out>/data/train.parquet, data/val.parquet   RL rows in verl's schema (RLHFDataset)
 *   <out>/run_grpo.sh                            the seed's recipe for the named verl version
 *   <out>/start_agentrl.sh                       the agentrl services the job talks to
 *   <out>/README.md                              steps, version notes, where the time goes
 *   <out>/agentrl_preflight.py                   checks the installed verl/vLLM/transformers (versions.ts)
 *   agent mode:  agentrl_agent_loop.py + agentrl_agent_loop.yaml (each sample one agentrl episode,
 *                run by `agentrl agent-server`; reward_score comes back with the tokens) and
 *                agentrl_adv_estimator.py (agentrl's MT-GRPO or GRPO, registered with verl)
 *   tool mode:   verl's own `tool_agent` with our tools (0.7.x: MCP, agentrl_mcp_tools.yaml +
 *                agentrl_mcp_servers.json; >= 0.8: function tools, agentrl_tools.py) and
 *                agentrl_reward.py (compute_score through `agentrl verify serve`)
 *
 * A row (verl/utils/dataset/rl_dataset.py, v0.7.1 to 0.10):
 *   data_source   "agentrl/<family>" (verl groups validation metrics by it)
 *   agent_name    "agentrl_agent" | "tool_agent", a TOP-LEVEL column (inside extra_info it is
 *                 ignored and verl falls back to single_turn_agent, verl #2966)
 *   prompt        LIST of {role, content} structs: the system prompt and the question
 *   ability       the family
 *   reward_model  {style: "rule", ground_truth: the answer}
 *   extra_info    {split, index, agentrl: {task_id, task: JSON text of the whole task, verifier}}
 * The task is JSON text because tasks carry different fields (metadata, gold plans, code tests):
 * as a struct, every row would gain every other row's fields as nulls (src/verl/parquet.ts).
 */
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { DEFAULT_SYSTEM_PROMPT } from "../policy/openai/messages.ts";
import type { ToolSpec } from "../types/policy.ts";
import type { Task } from "../types/task.ts";
import { jobReadme } from "./job-readme.ts";
import { launchScript, servicesScript } from "./job-scripts.ts";
import { jsonText, nestedParquetBuffer } from "./parquet.ts";
import { checkPromptLengths } from "./prompt-length.ts";
import { VERL_ESTIMATORS, VERL_VERSION_SUPPORT, type VerlEstimator, type VerlVersion } from "./versions.ts";

export { VERL_VERSIONS, type VerlVersion } from "./versions.ts";
export const VERL_MODES = ["agent", "tool"] as const;
export type VerlMode = (typeof VERL_MODES)[number];

/** The registered name of agentrl's agent loop (src/verl/python/agentrl_agent_loop.py). */
export const AGENTRL_AGENT_NAME = "agentrl_agent";

const PYTHON_DIR = new URL("./python/", import.meta.url);
const TEMPLATE_DIR = new URL("./templates/", import.meta.url);

export interface VerlInitOptions {
  train: readonly Task[];
  val: readonly Task[];
  /** Verifier name for file tasks (`world` for world tasks), recorded per row and used by the services. */
  verifier: string;
  /** How the tasks were given (`world`, a file path): shown in the README and the service commands. */
  tasksSource: string;
  /** Hugging Face model id or local path. */
  model: string;
  out: string;
  verlVersion: VerlVersion;
  mode: VerlMode;
  /** Tools the tool mode exposes (what `agentrl mcp serve <mcpArgs>` serves). */
  tools?: readonly ToolSpec[];
  /**
   * Tools an agent-mode episode gets (their schemas are part of the rendered prompt, so they count
   * toward `maxPromptLength`). Tool mode uses `tools`.
   */
  promptTools?: readonly ToolSpec[];
  /** Agent mode: `mt-grpo` (default; turn-level credit) or `grpo`, both agentrl's (agentrl_adv_estimator.py). */
  estimator?: VerlEstimator;
  /** vLLM's tool-call parser for the rollout servers (agent mode; default `hermes`, Qwen2.5/Qwen3). */
  toolCallParser?: string;
  /** Agent mode: stop the job when a step's infra failure rate passes this (default 0.2). */
  maxInfraFailureRate?: number;
  /** Arguments of `agentrl mcp serve` in tool mode (world seed, --code, …). */
  mcpArgs?: readonly string[];
  /** Arguments of `agentrl agent-server` in agent mode besides the URL flags. */
  agentServerArgs?: readonly string[];
  /** GRPO group size (rollout.n). Default 8. */
  groupSize?: number;
  /** Validation samples per task (val_kwargs.n). Default 16. */
  valN?: number;
  /** Prompts per training batch. Default 64. */
  batchSize?: number;
  maxTurns?: number;
  maxPromptLength?: number;
  maxResponseLength?: number;
  maxToolResponseLength?: number;
  epochs?: number;
  /** GPUs per node and nodes. Defaults 8, 1. */
  gpus?: number;
  nodes?: number;
  agentServerUrl?: string;
  mcpUrl?: string;
  verifyUrl?: string;
}

export interface VerlInitResult {
  out: string;
  files: string[];
  train: number;
  val: number;
}

/** One RL row of a task (see the file comment). */
export function verlRlRow(
  task: Task,
  index: number,
  split: "train" | "val",
  options: { mode: VerlMode; verifier: string },
): Record<string, unknown> {
  return {
    data_source: `agentrl/${task.family}`,
    agent_name: options.mode === "agent" ? AGENTRL_AGENT_NAME : "tool_agent",
    prompt: [
      { role: "system", content: task.systemPrompt ?? DEFAULT_SYSTEM_PROMPT },
      { role: "user", content: task.question },
    ],
    ability: task.family,
    reward_model: { style: "rule", ground_truth: task.answer },
    extra_info: {
      split,
      index,
      agentrl: { task_id: task.id, task: jsonText(task), verifier: options.verifier },
    },
  };
}

function checkPositiveInteger(name: string, value: number) {
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`verl init: ${name} must be a positive integer, got ${value}`);
}

export function shellQuote(text: string): string {
  return /^[A-Za-z0-9_./:@=+-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/** Writes the job folder; refuses a non-empty `out`. */
export function verlInit(options: VerlInitOptions): VerlInitResult {
  const settings = {
    groupSize: options.groupSize ?? 8,
    valN: options.valN ?? 16,
    batchSize: options.batchSize ?? 64,
    maxTurns: options.maxTurns ?? 8,
    maxPromptLength: options.maxPromptLength ?? 2048,
    maxResponseLength: options.maxResponseLength ?? 8192,
    maxToolResponseLength: options.maxToolResponseLength ?? 2048,
    epochs: options.epochs ?? 5,
    gpus: options.gpus ?? 8,
    nodes: options.nodes ?? 1,
  };
  for (const [name, value] of Object.entries(settings)) checkPositiveInteger(name, value);
  if (settings.groupSize < 2)
    throw new Error("verl init: the GRPO group size must be at least 2 (the seed uses 8-16)");
  if (options.train.length === 0) throw new Error("verl init: no training tasks");
  if (options.val.length === 0) throw new Error("verl init: no validation tasks");
  if (options.mode === "tool" && (!options.tools || options.tools.length === 0))
    throw new Error("verl init: tool mode needs the tools it exposes");
  const estimator = options.estimator ?? (options.mode === "agent" ? "mt-grpo" : "grpo");
  if (!VERL_ESTIMATORS.includes(estimator))
    throw new Error(`verl init: estimator must be one of ${VERL_ESTIMATORS.join(", ")}, got "${estimator}"`);
  if (options.mode === "tool" && options.estimator !== undefined)
    throw new Error(
      "verl init: --estimator applies to agent mode (tool mode trains with verl's own grpo: verl's tool_agent reports no turn rewards)",
    );
  const toolCallParser = options.toolCallParser ?? "hermes";
  if (!/^[A-Za-z0-9_.-]+$/.test(toolCallParser))
    throw new Error(
      `verl init: tool call parser must be a vLLM parser name (e.g. hermes), got "${toolCallParser}"`,
    );
  const maxInfraFailureRate = options.maxInfraFailureRate ?? 0.2;
  if (!(maxInfraFailureRate >= 0 && maxInfraFailureRate <= 1))
    throw new Error(
      `verl init: the infra failure rate threshold must lie in [0, 1], got ${maxInfraFailureRate}`,
    );
  if (existsSync(options.out) && readdirSync(options.out).length > 0)
    throw new Error(`verl init: ${options.out} exists and is not empty (give a new --out)`);
  const ids = new Set<string>();
  for (const task of [...options.train, ...options.val]) {
    if (ids.has(task.id))
      throw new Error(`verl init: task ${task.id} appears twice (train and val must not overlap)`);
    ids.add(task.id);
  }

  checkPromptLengths(
    [...options.train, ...options.val],
    (options.mode === "agent" ? options.promptTools : options.tools) ?? [],
    settings.maxPromptLength,
    DEFAULT_SYSTEM_PROMPT,
  );
  const job: JobChoices = { estimator, toolCallParser, maxInfraFailureRate };

  const out = options.out;
  mkdirSync(join(out, "data"), { recursive: true });
  const files: string[] = [];
  const write = (name: string, content: string | Uint8Array, executable = false) => {
    const path = join(out, name);
    writeFileSync(path, content);
    if (executable) chmodSync(path, 0o755);
    files.push(name);
  };
  const rowOptions = { mode: options.mode, verifier: options.verifier };
  write(
    "data/train.parquet",
    new Uint8Array(
      nestedParquetBuffer(options.train.map((task, i) => verlRlRow(task, i, "train", rowOptions))),
    ),
  );
  write(
    "data/val.parquet",
    new Uint8Array(nestedParquetBuffer(options.val.map((task, i) => verlRlRow(task, i, "val", rowOptions)))),
  );

  const urls = {
    agentServer: options.agentServerUrl ?? "http://127.0.0.1:8300",
    mcp: options.mcpUrl ?? "http://127.0.0.1:8765/mcp",
    verify: options.verifyUrl ?? "http://127.0.0.1:8301",
  };
  if (options.mode === "agent") {
    for (const name of ["agentrl_agent_loop.py", "agentrl_adv_estimator.py"]) {
      copyFileSync(new URL(name, PYTHON_DIR), join(out, name));
      files.push(name);
    }
    write(
      "agentrl_agent_loop.yaml",
      [
        "# verl agent-loop config (actor_rollout_ref.rollout.agent.agent_loop_config_path); see agentrl_agent_loop.py",
        `- name: ${AGENTRL_AGENT_NAME}`,
        "  _target_: agentrl_agent_loop.AgentrlAgentLoop",
        "  # null: $AGENTRL_AGENT_SERVER (run_grpo.sh sets it)",
        "  server_url: null",
        "  # null: $AGENTRL_AGENT_SERVER_TOKEN",
        "  server_token: null",
        "  timeout_s: 1800",
        "  max_concurrency: 256",
        "",
      ].join("\n"),
    );
  } else {
    copyFileSync(new URL("agentrl_reward.py", TEMPLATE_DIR), join(out, "agentrl_reward.py"));
    files.push("agentrl_reward.py");
    const schemas = (options.tools ?? []).map((tool) => ({
      type: "function",
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }));
    if (VERL_VERSION_SUPPORT[options.verlVersion].toolMode === "mcp") {
      write(
        "agentrl_mcp_servers.json",
        `${JSON.stringify({ mcpServers: { agentrl: { url: urls.mcp, transport: "http" } } }, null, 2)}\n`,
      );
      write(
        "agentrl_mcp_tools.yaml",
        [
          "# verl 0.7.x tool config (actor_rollout_ref.rollout.multi_turn.tool_config_path): agentrl's tools over MCP.",
          "# One server in the config, so tool names stay unprefixed. For a token, add",
          '# "headers": {"Authorization": "Bearer <token>"} beside "transport": "http" in agentrl_mcp_servers.json',
          "# (not auth_token: verl forces legacy SSE for that key, which agentrl mcp serve does not speak).",
          "tools:",
          "  - class_name: verl.tools.mcp_base_tool.MCPBaseTool",
          "    config:",
          "      type: mcp",
          "      rate_limit: 256",
          "      timeout: 120",
          "    mcp:",
          "      mcp_servers_config_path: __HERE__/agentrl_mcp_servers.json",
          `      tool_selected_list: [${schemas.map((schema) => schema.function.name).join(", ")}]`,
          "",
        ].join("\n"),
      );
    } else {
      const tools = readFileSync(new URL("agentrl_tools.py", TEMPLATE_DIR), "utf8").replace(
        "__TOOL_SCHEMAS__",
        JSON.stringify(schemas, null, 2),
      );
      write("agentrl_tools.py", tools);
    }
  }

  copyFileSync(new URL("agentrl_preflight.py", PYTHON_DIR), join(out, "agentrl_preflight.py"));
  files.push("agentrl_preflight.py");
  write("run_grpo.sh", launchScript(options, settings, urls, job), true);
  write("start_agentrl.sh", servicesScript(options, urls), true);
  write("README.md", jobReadme(options, settings, urls, job));
  return { out, files, train: options.train.length, val: options.val.length };
}

/** What the job decides besides the sizes: the estimator, vLLM's tool parser, the stop threshold. */
export interface JobChoices {
  estimator: VerlEstimator;
  toolCallParser: string;
  maxInfraFailureRate: number;
}

export type Settings = Required<
  Pick<
    VerlInitOptions,
    | "groupSize"
    | "valN"
    | "batchSize"
    | "maxTurns"
    | "maxPromptLength"
    | "maxResponseLength"
    | "maxToolResponseLength"
    | "epochs"
    | "gpus"
    | "nodes"
  >
>;
export type Urls = { agentServer: string; mcp: string; verify: string };
