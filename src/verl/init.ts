// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the launch scripts hold shell parameter expansions
/**
 * `agentrl verl init`: a ready-to-run verl GRPO job folder from a task set.
 *
 *   <out>/data/train.parquet, data/val.parquet   RL rows in verl's schema (RLHFDataset)
 *   <out>/run_grpo.sh                            the seed's recipe for the named verl version
 *   <out>/start_agentrl.sh                       the agentrl services the job talks to
 *   <out>/README.md                              steps, version notes, where the time goes
 *   agent mode:  agentrl_agent_loop.py + agentrl_agent_loop.yaml (each sample one agentrl episode,
 *                run by `agentrl agent-server`; reward_score comes back with the tokens)
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
import { jsonText, nestedParquetBuffer } from "./parquet.ts";

export const VERL_VERSIONS = ["0.7", "0.8+"] as const;
export type VerlVersion = (typeof VERL_VERSIONS)[number];
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

function shellQuote(text: string): string {
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
  if (existsSync(options.out) && readdirSync(options.out).length > 0)
    throw new Error(`verl init: ${options.out} exists and is not empty (give a new --out)`);
  const ids = new Set<string>();
  for (const task of [...options.train, ...options.val]) {
    if (ids.has(task.id))
      throw new Error(`verl init: task ${task.id} appears twice (train and val must not overlap)`);
    ids.add(task.id);
  }

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
    copyFileSync(new URL("agentrl_agent_loop.py", PYTHON_DIR), join(out, "agentrl_agent_loop.py"));
    files.push("agentrl_agent_loop.py");
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
    if (options.verlVersion === "0.7") {
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

  write("run_grpo.sh", launchScript(options, settings, urls), true);
  write("start_agentrl.sh", servicesScript(options, urls), true);
  write("README.md", jobReadme(options, settings, urls));
  return { out, files, train: options.train.length, val: options.val.length };
}

type Settings = Required<
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
type Urls = { agentServer: string; mcp: string; verify: string };

function launchScript(options: VerlInitOptions, s: Settings, urls: Urls): string {
  const v08 = options.verlVersion === "0.8+";
  const rewardPrefix = v08 ? "reward.custom_reward_function" : "custom_reward_function";
  const tokenLength = s.maxPromptLength + s.maxResponseLength;
  const modeLines =
    options.mode === "agent"
      ? [
          `actor_rollout_ref.rollout.agent.agent_loop_config_path="$HERE/agentrl_agent_loop.yaml"`,
          `actor_rollout_ref.rollout.agent.default_agent_loop=${AGENTRL_AGENT_NAME}`,
        ]
      : [
          v08
            ? `actor_rollout_ref.rollout.multi_turn.function_tool_path="$HERE/agentrl_tools.py"`
            : `actor_rollout_ref.rollout.multi_turn.tool_config_path="$TOOL_CONFIG"`,
          "actor_rollout_ref.rollout.agent.default_agent_loop=tool_agent",
          `${rewardPrefix}.path="$HERE/agentrl_reward.py"`,
          `${rewardPrefix}.name=compute_score`,
        ];
  const overrides = [
    "algorithm.adv_estimator=grpo",
    "algorithm.use_kl_in_reward=False",
    `data.train_files="$HERE/data/train.parquet"`,
    `data.val_files="$HERE/data/val.parquet"`,
    "data.return_raw_chat=True",
    `data.train_batch_size=${s.batchSize}`,
    `data.max_prompt_length=${s.maxPromptLength}`,
    `data.max_response_length=${s.maxResponseLength}`,
    "data.filter_overlong_prompts=True",
    "data.truncation=error",
    `actor_rollout_ref.model.path=${shellQuote(options.model)}`,
    "actor_rollout_ref.model.use_remove_padding=True",
    "actor_rollout_ref.actor.optim.lr=1e-6",
    `actor_rollout_ref.actor.ppo_mini_batch_size=${Math.max(1, Math.floor(s.batchSize / 4))}`,
    "actor_rollout_ref.actor.use_dynamic_bsz=True",
    `actor_rollout_ref.actor.ppo_max_token_len_per_gpu=${2 * tokenLength}`,
    "actor_rollout_ref.actor.use_kl_loss=False",
    "actor_rollout_ref.actor.kl_loss_coef=0.0",
    "actor_rollout_ref.actor.entropy_coeff=0",
    "actor_rollout_ref.actor.clip_ratio_low=0.2",
    "actor_rollout_ref.actor.clip_ratio_high=0.28",
    "actor_rollout_ref.actor.loss_agg_mode=token-mean",
    "actor_rollout_ref.rollout.name=vllm",
    "actor_rollout_ref.rollout.mode=async",
    "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
    "actor_rollout_ref.rollout.gpu_memory_utilization=0.6",
    `actor_rollout_ref.rollout.n=${s.groupSize}`,
    "actor_rollout_ref.rollout.calculate_log_probs=True",
    "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=True",
    `actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=${2 * tokenLength}`,
    "actor_rollout_ref.rollout.multi_turn.enable=True",
    "actor_rollout_ref.rollout.multi_turn.format=hermes",
    `actor_rollout_ref.rollout.multi_turn.max_assistant_turns=${s.maxTurns}`,
    `actor_rollout_ref.rollout.multi_turn.max_user_turns=${s.maxTurns}`,
    `actor_rollout_ref.rollout.multi_turn.max_tool_response_length=${s.maxToolResponseLength}`,
    ...modeLines,
    `actor_rollout_ref.rollout.val_kwargs.n=${s.valN}`,
    "actor_rollout_ref.rollout.val_kwargs.do_sample=True",
    "actor_rollout_ref.rollout.val_kwargs.temperature=1.0",
    "actor_rollout_ref.rollout.val_kwargs.top_p=1.0",
    "trainer.val_before_train=True",
    "trainer.test_freq=10",
    "trainer.save_freq=50",
    `trainer.total_epochs=${s.epochs}`,
    `trainer.rollout_data_dir="$OUT/rollouts"`,
    `trainer.validation_data_dir="$OUT/validation"`,
    `trainer.default_local_dir="$OUT/checkpoints"`,
    `trainer.n_gpus_per_node="$NGPUS"`,
    `trainer.nnodes="$NNODES"`,
    "trainer.logger='[\"console\"]'",
    "trainer.project_name=agentrl",
    `trainer.experiment_name="$EXPERIMENT"`,
  ];
  const env =
    options.mode === "agent"
      ? [
          `export AGENTRL_AGENT_SERVER="\${AGENTRL_AGENT_SERVER:-${urls.agentServer}}"`,
          "# export AGENTRL_AGENT_SERVER_TOKEN=...   (if the agent-server was started with --token)",
        ]
      : [
          `export AGENTRL_VERIFY_SERVER="\${AGENTRL_VERIFY_SERVER:-${urls.verify}}"`,
          "# export AGENTRL_VERIFY_TOKEN=...   (if agentrl verify serve was started with --token)",
          ...(v08
            ? [`export AGENTRL_MCP_URL="\${AGENTRL_MCP_URL:-${urls.mcp}}"`]
            : [
                "# verl reads the MCP server list from a path in the tool config: fill in this folder.",
                `TOOL_CONFIG="$OUT/agentrl_mcp_tools.yaml"`,
                `mkdir -p "$OUT" && sed "s|__HERE__|$HERE|" "$HERE/agentrl_mcp_tools.yaml" > "$TOOL_CONFIG"`,
              ]),
        ];
  return [
    "#!/usr/bin/env bash",
    `# GRPO on agentrl tasks with verl ${options.verlVersion} (${options.mode} mode), written by \`agentrl verl init\`.`,
    "# The seed's recipe: GRPO (no critic), clip-higher 0.2/0.28, token-mean loss, no KL, rollout",
    "# log-probs on, multi-turn budgets, validation before training and every test_freq steps with",
    "# val_kwargs.n samples per task, rollouts and validation dumped as JSONL for `agentrl verl import`.",
    "# Start the agentrl services first (start_agentrl.sh). Extra Hydra overrides: ./run_grpo.sh key=value ...",
    "set -euo pipefail",
    'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
    'OUT="${OUT:-$HERE/outputs}"',
    `NGPUS="\${NGPUS:-${s.gpus}}"`,
    `NNODES="\${NNODES:-${s.nodes}}"`,
    'EXPERIMENT="${EXPERIMENT:-agentrl-grpo}"',
    "# verl's workers import the agent loop / tools from this folder.",
    'export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"',
    ...env,
    "python3 -m verl.trainer.main_ppo \\",
    ...overrides.map((line) => `  ${line} \\`),
    '  "$@"',
    "",
  ].join("\n");
}

function servicesScript(options: VerlInitOptions, urls: Urls): string {
  const port = (url: string) => new URL(url).port || "80";
  const lines = [
    "#!/usr/bin/env bash",
    "# The agentrl services this job calls, on this node (they bind 127.0.0.1; give --host and --token to",
    "# expose them to other nodes). Stop them with kill on the printed process ids.",
    "set -euo pipefail",
    'AGENTRL="${AGENTRL:-npx agentrl}"',
  ];
  if (options.mode === "agent") {
    lines.push(
      "# The rollout servers the agent-server may call (--upstream-allow): any port of this node by",
      "# default; set AGENTRL_ROLLOUT_ALLOW to the space-separated list of every node's for a multi-node job.",
      "NODE_IP=\"$(hostname -i 2>/dev/null | awk '{print $1}')\"",
      'ROLLOUT_ALLOW="${AGENTRL_ROLLOUT_ALLOW:-http://127.0.0.1:*${NODE_IP:+ http://$NODE_IP:*}}"',
      'read -ra URLS <<< "$ROLLOUT_ALLOW"',
      'ALLOW=(); for url in "${URLS[@]}"; do ALLOW+=(--upstream-allow "$url"); done',
      `$AGENTRL agent-server --port ${port(urls.agentServer)} "\${ALLOW[@]}" ${(options.agentServerArgs ?? []).map(shellQuote).join(" ")} &`,
      'echo "agent-server: pid $!"',
    );
  } else {
    lines.push(
      `$AGENTRL mcp serve --transport http --port ${port(urls.mcp)} ${(options.mcpArgs ?? []).map(shellQuote).join(" ")} &`,
      'echo "mcp serve: pid $!"',
      `$AGENTRL verify serve --verifier ${shellQuote(options.verifier)} --port ${port(urls.verify)} &`,
      'echo "verify serve: pid $!"',
    );
  }
  lines.push("wait", "");
  return lines.join("\n");
}

function jobReadme(options: VerlInitOptions, s: Settings, urls: Urls): string {
  const agent = options.mode === "agent";
  const v08 = options.verlVersion === "0.8+";
  return `# agentrl → verl GRPO job

Written by \`agentrl verl init\` for **verl ${options.verlVersion}**, **${options.mode} mode**, model \`${options.model}\`,
tasks \`${options.tasksSource}\` (${options.train.length} train, ${options.val.length} validation; verifier \`${options.verifier}\`).

## Run it

1. Install verl ${v08 ? "0.8 or later" : "0.7.x (MCP tools exist only up to 0.7.1)"} with vLLM on the cluster (\`rollout.name=vllm\`).
2. Start the agentrl services on the node that runs the trainer's driver: \`./start_agentrl.sh\`
   (${agent ? `\`agentrl agent-server\` at ${urls.agentServer}` : `\`agentrl mcp serve\` at ${urls.mcp} and \`agentrl verify serve\` at ${urls.verify}`}).
3. \`NGPUS=${s.gpus} NNODES=${s.nodes} ./run_grpo.sh\` (Hydra overrides after it, e.g. \`trainer.total_epochs=1\`).
4. Measure: \`agentrl verl import outputs/validation --tasks data/val.parquet --out runs\` makes one agentrl eval run per
   validation step (step 0 is the base model: \`trainer.val_before_train=True\`), then
   \`agentrl boundary runs/verl-val-step0 runs/verl-val-step<N>\` gives unbiased pass@k, solvable sets and the crossover.
   verl's own \`best@N\` is a with-replacement bootstrap and reads low; \`mean@n\` is a fair pass@1.

### Several nodes

verl's agent-loop workers are Ray actors on every node, and they import this folder's Python files and read
${agent ? "`AGENTRL_AGENT_SERVER`" : `\`AGENTRL_VERIFY_SERVER\`${v08 ? " and `AGENTRL_MCP_URL`" : ""}`} in the Ray worker's environment, which comes from the shell that ran
\`ray start\` on that node, not from the driver. So put this folder on a shared filesystem, and on every node run
\`./start_agentrl.sh\` and then \`ray start\` with \`PYTHONPATH\` holding this folder${agent ? ` and \`AGENTRL_AGENT_SERVER=${urls.agentServer}\`` : ""} exported:
each node's workers then reach their own node's services at 127.0.0.1 (no token needed, nothing exposed).

## What is in the folder

- \`data/train.parquet\`, \`data/val.parquet\`: verl's RL schema. \`prompt\` is a list of {role, content}
  structs, \`agent_name\` a top-level column (\`${agent ? AGENTRL_AGENT_NAME : "tool_agent"}\`; inside \`extra_info\` verl would ignore it
  and silently fall back to \`single_turn_agent\`), \`reward_model.ground_truth\` the answer, \`extra_info\` = {split, index,
  agentrl: {task_id, task (the whole agentrl task as JSON text), verifier}}.
${
  agent
    ? `- \`agentrl_agent_loop.py\`, \`agentrl_agent_loop.yaml\`: verl's agent loop \`${AGENTRL_AGENT_NAME}\`. Each sample is one agentrl
  episode run by the agent-server against the rollout server verl assigned it (OpenAI API with vLLM's token-id
  extensions), so the tokens, the response mask (1 only on sampled tokens) and the rollout log-probs are exact, and
  the reward (agentrl's reward spec, turn rewards in \`extra_fields.turn_scores\`) comes back with them: verl's
  reward function is not called. The multi-turn budgets that bind are the agent-server's; verl cuts the response to
  \`data.max_response_length\`.`
    : `- ${v08 ? "`agentrl_tools.py`: our tools as verl function tools (`multi_turn.function_tool_path`), each a stateless call to `agentrl mcp serve`" : "`agentrl_mcp_tools.yaml` + `agentrl_mcp_servers.json`: our tools through verl's `MCPBaseTool` (`multi_turn.tool_config_path`); run_grpo.sh fills in the folder path"}.
- \`agentrl_reward.py\`: \`compute_score\`, which sends the last assistant message to \`agentrl verify serve\`. It returns
  \`score\`, \`acc\` and \`agentrl_task_id\` (dumped with every sample, so imports group by task).
- Tools keep no state between calls (verl opens a new tool instance, and on 0.7 a new MCP session, per call), so the
  world is the one \`agentrl mcp serve --seed\` was started with: the tasks were drawn from that world.`
}
- \`run_grpo.sh\`: GRPO with group size ${s.groupSize} (\`rollout.n\`), clip ratio 0.2 / 0.28, \`loss_agg_mode=token-mean\`,
  no KL (\`use_kl_loss=False\`, \`use_kl_in_reward=False\`), \`calculate_log_probs=True\`, ${s.maxTurns} assistant turns,
  tool responses up to ${s.maxToolResponseLength} characters (verl's default is 256), validation with
  \`val_kwargs.n=${s.valN}\` at temperature 1.0, dumps in \`$OUT/rollouts\` and \`$OUT/validation\`.

## verl 0.7.x vs ≥ 0.8

| | 0.7.x | ≥ 0.8 |
|---|---|---|
| our tools in \`tool_agent\` | MCP (\`MCPBaseTool\`, \`tool_config_path\`) | function tools (\`function_tool_path\`); MCP tools were removed (verl PRs #6300, #6302) |
| custom reward | \`custom_reward_function.path/name\` | \`reward.custom_reward_function.path/name\` |
| agent loop | \`rollout.agent.agent_loop_config_path\` | same |
| tool response truncation side | \`left\`/\`right\` mean the opposite of ≥ 0.8 | |
| RL data | parquet (\`.jsonl\` rejected) | parquet or \`.jsonl\` |

This folder is written for ${options.verlVersion}; \`agentrl verl init --verl-version ${v08 ? "0.7" : "0.8+"}\` writes the other.

## Where the time goes

A GRPO step is generation (all ${s.groupSize} × ${s.batchSize} episodes on the rollout servers), then the trainer's
log-prob and update passes, then weight sync; with multi-turn agents generation dominates, and the step waits for its
slowest episode. ${agent ? "The agent-server adds HTTP and episode bookkeeping per model call; it needs enough concurrency for every episode of a batch to be in flight at once." : "The tool calls and the verify service sit on the generation path; keep them on the same nodes."}
`;
}
