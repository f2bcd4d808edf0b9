// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the launch scripts hold shell parameter expansions
/**
 * The two scripts of a `verl init` job folder: `run_grpo.sh` (verl's launch command with the
 * seed's recipe and what the verl version and the job's choices add, docs/verl-versions.md) and
 * `start_agentrl.sh` (the agentrl services the job calls).
 */
import {
  AGENTRL_AGENT_NAME,
  type JobChoices,
  type Settings,
  shellQuote,
  type Urls,
  type VerlInitOptions,
} from "./init.ts";
import { VERL_ESTIMATOR_NAMES, VERL_VERSION_SUPPORT } from "./versions.ts";

export function launchScript(options: VerlInitOptions, s: Settings, urls: Urls, job: JobChoices): string {
  const support = VERL_VERSION_SUPPORT[options.verlVersion];
  const functionTools = support.toolMode === "function";
  const rewardPrefix = support.rewardPrefix;
  const tokenLength = s.maxPromptLength + s.maxResponseLength;
  const runtimeEnv = "+ray_kwargs.ray_init.runtime_env";
  const modeLines =
    options.mode === "agent"
      ? [
          `actor_rollout_ref.rollout.agent.agent_loop_config_path="$HERE/agentrl_agent_loop.yaml"`,
          `actor_rollout_ref.rollout.agent.default_agent_loop=${AGENTRL_AGENT_NAME}`,
          // The agent sends OpenAI `tools`; vLLM answers 400 to them unless started with these two
          // flags, and verl builds vLLM's flags from engine_kwargs.vllm (build_cli_args_from_config).
          "+actor_rollout_ref.rollout.engine_kwargs.vllm.enable_auto_tool_choice=True",
          `+actor_rollout_ref.rollout.engine_kwargs.vllm.tool_call_parser=${job.toolCallParser}`,
          // agentrl's estimator: registered (and given the batch's extra fields) in every Ray worker.
          `${runtimeEnv}.worker_process_setup_hook=agentrl_adv_estimator.install`,
          // Ray takes only string env_vars: quoted, so Hydra keeps "0.2" a string, not a float.
          `${runtimeEnv}.env_vars.AGENTRL_MAX_INFRA_FAILURE_RATE="'$AGENTRL_MAX_INFRA_FAILURE_RATE'"`,
          `${runtimeEnv}.env_vars.AGENTRL_STEP_METRICS="'$OUT/agentrl_step_metrics.jsonl'"`,
          `${runtimeEnv}.env_vars.AGENTRL_TURN_WEIGHT="'$AGENTRL_TURN_WEIGHT'"`,
          `${runtimeEnv}.env_vars.AGENTRL_TURN_DISCOUNT="'$AGENTRL_TURN_DISCOUNT'"`,
        ]
      : [
          functionTools
            ? `actor_rollout_ref.rollout.multi_turn.function_tool_path="$HERE/agentrl_tools.py"`
            : `actor_rollout_ref.rollout.multi_turn.tool_config_path="$TOOL_CONFIG"`,
          "actor_rollout_ref.rollout.agent.default_agent_loop=tool_agent",
          `${rewardPrefix}.path="$HERE/agentrl_reward.py"`,
          `${rewardPrefix}.name=compute_score`,
        ];
  const overrides = [
    `algorithm.adv_estimator=${options.mode === "agent" ? VERL_ESTIMATOR_NAMES[job.estimator] : "grpo"}`,
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
    ...support.extraOverrides,
  ];
  const env =
    options.mode === "agent"
      ? [
          `export AGENTRL_AGENT_SERVER="\${AGENTRL_AGENT_SERVER:-${urls.agentServer}}"`,
          "# export AGENTRL_AGENT_SERVER_TOKEN=...   (if the agent-server was started with --token)",
          "# Stop when more than this share of a step's samples failed outside the policy (infra).",
          `AGENTRL_MAX_INFRA_FAILURE_RATE="\${AGENTRL_MAX_INFRA_FAILURE_RATE:-${job.maxInfraFailureRate}}"`,
          "# MT-GRPO: weight and discount of the turn-level term (agentrl's defaults).",
          'AGENTRL_TURN_WEIGHT="${AGENTRL_TURN_WEIGHT:-1}"',
          'AGENTRL_TURN_DISCOUNT="${AGENTRL_TURN_DISCOUNT:-1}"',
        ]
      : [
          `export AGENTRL_VERIFY_SERVER="\${AGENTRL_VERIFY_SERVER:-${urls.verify}}"`,
          "# export AGENTRL_VERIFY_TOKEN=...   (if agentrl verify serve was started with --token)",
          ...(functionTools
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
    `# Needs verl${support.verl}, vllm${support.vllm} (token ids: vLLM >= 0.10.2), transformers ${support.transformersMajor}.x.`,
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
    `[ -n "\${AGENTRL_SKIP_PREFLIGHT:-}" ] || python3 "$HERE/agentrl_preflight.py" --verl '${support.verl}' --vllm '${support.vllm}' --transformers-major ${support.transformersMajor}`,
    "python3 -m verl.trainer.main_ppo \\",
    ...overrides.map((line) => `  ${line} \\`),
    '  "$@"',
    "",
  ].join("\n");
}

export function servicesScript(options: VerlInitOptions, urls: Urls): string {
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
      "# The rollout servers the agent-server may call: any port of every address of this node's network",
      "# interfaces (--upstream-allow-local). verl's rollout servers listen on Ray's node IP, which is one",
      "# of them (docs/verl.md), whatever `hostname -i` says. For a multi-node job, add the other nodes'",
      "# in AGENTRL_ROLLOUT_ALLOW, space-separated URL prefixes (http://10.0.0.6:* http://[fd00::6]:*).",
      'read -ra URLS <<< "${AGENTRL_ROLLOUT_ALLOW:-}"',
      'ALLOW=(--upstream-allow-local); for url in ${URLS[@]+"${URLS[@]}"}; do ALLOW+=(--upstream-allow "$url"); done',
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
