/**
 * The verl versions `agentrl verl init` writes for, and what each needs around it. Read from verl's
 * own source (verl-project/verl tags v0.7.0, v0.7.1, v0.8.0, v0.9.0 and main of August 2026;
 * docs/verl-versions.md has the table and the reasons).
 *
 * - vLLM: the agent mode reads vLLM's `return_token_ids` answers (vLLM PR #22587, in 0.10.2), so
 *   the lower bound is 0.10.2 even where verl accepts older (0.7.x and 0.8.x: setup.py
 *   `vllm>=0.8.5,<=0.12.0`); 0.9.0 and main require `vllm>=0.18.0`.
 * - transformers: 0.9.0 and main require `transformers>=5.5.3,!=5.6.0,<5.11` (setup.py:43); the
 *   vLLM range of 0.7/0.8 runs on transformers 4.
 * - Trainer: 0.9.0 and main default to the v1 trainer (`trainer.use_v1: true`); the job sets
 *   `trainer.use_v1=False`, the trainer whose agent-loop worker and `compute_advantage` this job was
 *   checked against (the legacy trainer is still in main).
 */

export const VERL_VERSIONS = ["0.7", "0.8", "0.9", "main"] as const;
export type VerlVersion = (typeof VERL_VERSIONS)[number];

export interface VerlVersionSupport {
  /** The verl releases the series covers (pip specifier). */
  verl: string;
  /** vLLM the job needs (pip specifier): verl's own range cut to the versions that return token ids. */
  vllm: string;
  /** transformers' major version under that vLLM. */
  transformersMajor: number;
  /** Reward function keys: `custom_reward_function` (0.7) or `reward.custom_reward_function`. */
  rewardPrefix: "custom_reward_function" | "reward.custom_reward_function";
  /** Tool mode: MCP tools (removed from verl in 0.8.0, PRs #6300/#6302) or function tools. */
  toolMode: "mcp" | "function";
  /** Overrides this version needs besides the common ones. */
  extraOverrides: readonly string[];
}

export const VERL_VERSION_SUPPORT: Record<VerlVersion, VerlVersionSupport> = {
  "0.7": {
    verl: ">=0.7.0,<0.8",
    vllm: ">=0.10.2,<=0.12.0",
    transformersMajor: 4,
    rewardPrefix: "custom_reward_function",
    toolMode: "mcp",
    extraOverrides: [],
  },
  "0.8": {
    verl: ">=0.8.0,<0.9",
    vllm: ">=0.10.2,<=0.12.0",
    transformersMajor: 4,
    rewardPrefix: "reward.custom_reward_function",
    toolMode: "function",
    extraOverrides: [],
  },
  "0.9": {
    verl: ">=0.9.0,<0.10",
    vllm: ">=0.18.0",
    transformersMajor: 5,
    rewardPrefix: "reward.custom_reward_function",
    toolMode: "function",
    extraOverrides: ["trainer.use_v1=False"],
  },
  main: {
    verl: ">=0.10.0.dev0",
    vllm: ">=0.18.0",
    transformersMajor: 5,
    rewardPrefix: "reward.custom_reward_function",
    toolMode: "function",
    extraOverrides: ["trainer.use_v1=False"],
  },
};

/** Advantage estimators the job can use: agentrl's, registered with verl by agentrl_adv_estimator.py. */
export const VERL_ESTIMATORS = ["mt-grpo", "grpo"] as const;
export type VerlEstimator = (typeof VERL_ESTIMATORS)[number];
export const VERL_ESTIMATOR_NAMES: Record<VerlEstimator, string> = {
  "mt-grpo": "agentrl_mt_grpo",
  grpo: "agentrl_grpo",
};
