/**
 * The README of a `verl init` job folder: how to run it on the cluster, what each file is, the
 * version notes, and where a step's time goes.
 */
import {
  AGENTRL_AGENT_NAME,
  type JobChoices,
  type Settings,
  type Urls,
  type VerlInitOptions,
} from "./init.ts";
import { VERL_ESTIMATOR_NAMES, VERL_VERSION_SUPPORT } from "./versions.ts";

export function jobReadme(options: VerlInitOptions, s: Settings, urls: Urls, job: JobChoices): string {
  const agent = options.mode === "agent";
  const support = VERL_VERSION_SUPPORT[options.verlVersion];
  const v08 = support.toolMode === "function";
  return `# agentrl → verl GRPO job

Written by \`agentrl verl init\` for **verl ${options.verlVersion}**, **${options.mode} mode**, model \`${options.model}\`,
tasks \`${options.tasksSource}\` (${options.train.length} train, ${options.val.length} validation; verifier \`${options.verifier}\`).

## Run it

1. Install \`verl${support.verl}\` with \`vllm${support.vllm}\` and transformers ${support.transformersMajor}.x on the cluster
   (\`rollout.name=vllm\`). The agent mode reads vLLM's token ids (\`return_token_ids\`, vLLM ≥ 0.10.2), which verl's
   own range does not guarantee; \`run_grpo.sh\` checks the installed versions first (\`agentrl_preflight.py\`).
2. Start the agentrl services on the node that runs the trainer's driver: \`./start_agentrl.sh\`
   (${agent ? `\`agentrl agent-server\` at ${urls.agentServer}` : `\`agentrl mcp serve\` at ${urls.mcp} and \`agentrl verify serve\` at ${urls.verify}`}).
3. \`NGPUS=${s.gpus} NNODES=${s.nodes} ./run_grpo.sh\` (Hydra overrides after it, e.g. \`trainer.total_epochs=1\`).
4. Measure: \`agentrl verl import outputs/validation --tasks data/val.parquet --out runs\` makes one agentrl eval run per
   validation step (step 0 is the base model: \`trainer.val_before_train=True\`), then
   \`agentrl boundary runs/verl-validation-step0 runs/verl-validation-step<N>\` gives unbiased pass@k, solvable sets and the crossover.
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
  the reward (agentrl's reward spec) comes back with them: verl's reward function is not called. The multi-turn
  budgets that bind are the agent-server's; verl cuts the response to \`data.max_response_length\`. Edits to the
  YAML reach every sample (verl instantiates the loop per sample from this entry). vLLM is started with
  \`--enable-auto-tool-choice --tool-call-parser ${job.toolCallParser}\` (\`engine_kwargs.vllm\`): without them it answers 400 to
  every request that carries tools.
- \`agentrl_adv_estimator.py\`: the advantage estimator \`${VERL_ESTIMATOR_NAMES[job.estimator]}\` (\`--estimator ${job.estimator}\`).
  ${job.estimator === "mt-grpo" ? "MT-GRPO: the outcome's group advantage plus a turn-level term from the turn rewards and turn spans the loop puts in `extra_fields` (agentrl's estimator: the turn baseline stays unbiased when episodes stop at different turns)." : "GRPO on the outcome, as verl's own but with infra failures left out of the group baseline."}
  verl has no turn-level estimator and passes an estimator no extra fields, so the Ray worker setup hook
  (\`ray_kwargs.ray_init.runtime_env.worker_process_setup_hook\`) registers it and hands it the batch's extra fields.
- Failures: an episode that failed outside the policy never trains. The loop raises (the step stops) when vLLM
  rejects the request (4xx: e.g. the tool flags above missing), names no such model, or returns no token ids; a
  transient failure (5xx, unreachable, timeout, the agent-server's own read timeout) comes back masked out and left
  out of the baseline, and so does a prefix-broken episode (its response stops at the break, its reward is the whole
  episode's). Each step logs
  \`agentrl-step-metrics\` (failure rate by class: policy, agent, tool, infra; prefix-break and truncation rates) to the
  driver's output and \`$OUT/agentrl_step_metrics.jsonl\`, and the job stops when the infra failure rate passes
  \`AGENTRL_MAX_INFRA_FAILURE_RATE\` (${job.maxInfraFailureRate}). Validation metrics gain \`agentrl_infra\`, \`agentrl_prefix_breaks\` and
  \`agentrl_truncated\` per data source.`
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

## verl versions

| | 0.7.x | ≥ 0.8 |
|---|---|---|
| vLLM | 0.10.2–0.12.0 | 0.8.x: 0.10.2–0.12.0; 0.9.x and main: ≥ 0.18 (transformers 5; the job sets \`trainer.use_v1=False\`) |
| our tools in \`tool_agent\` | MCP (\`MCPBaseTool\`, \`tool_config_path\`) | function tools (\`function_tool_path\`); MCP tools were removed (verl PRs #6300, #6302) |
| custom reward | \`custom_reward_function.path/name\` | \`reward.custom_reward_function.path/name\` |
| agent loop | \`rollout.agent.agent_loop_config_path\` | same |
| tool response truncation side | \`left\`/\`right\` mean the opposite of ≥ 0.8 | |
| RL data | parquet (\`.jsonl\` rejected) | parquet or \`.jsonl\` |

This folder is written for ${options.verlVersion}; \`agentrl verl init --verl-version 0.7|0.8|0.9|main\` writes another.

## Where the time goes

A GRPO step is generation (all ${s.groupSize} × ${s.batchSize} episodes on the rollout servers), then the trainer's
log-prob and update passes, then weight sync; with multi-turn agents generation dominates, and the step waits for its
slowest episode. ${agent ? "The agent-server adds HTTP and episode bookkeeping per model call; it needs enough concurrency for every episode of a batch to be in flight at once." : "The tool calls and the verify service sit on the generation path; keep them on the same nodes."}
`;
}
