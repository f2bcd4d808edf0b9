/**
 * Test helpers of `train rl` on a Hugging Face checkpoint (hf-training.test.ts and its resume
 * child): a small LoRA config on fixtures/qwen3-chat and an environment of the conversation that
 * fixture was trained on. Not used at run time.
 */
import { CHAT_FOLDER, chatFixtureTask } from "../policy/hf/testing-chat-task.ts";
import { parseRlConfig, type RlConfig } from "./config.ts";
import type { RlEnvironment } from "./train.ts";

export function hfConfig(overrides: Partial<RlConfig> = {}): RlConfig {
  return parseRlConfig({
    name: "hf-tiny",
    base: `hf:${CHAT_FOLDER}`,
    steps: 2,
    families: ["lookup"],
    tasksPerStep: 1,
    groupSize: 4,
    budgets: { maxTurns: 3, maxTokens: 160, maxTurnTokens: 48 },
    dynamicSampling: false,
    learningRate: 2e-2,
    // The fixture is nearly deterministic at 1: a hot sampler makes the group's episodes differ.
    temperature: 1.5,
    rolloutBatch: 4,
    microBatchTokens: 2048,
    checkpointEvery: 1,
    evalEvery: 0,
    lora: { rank: 4, alpha: 8, targets: ["q_proj", "v_proj", "down_proj"] },
    ...overrides,
  });
}

/** The fixture's conversation, rewarded by the answer's correctness plus a length term (so groups differ). */
export function chatEnvironment(): RlEnvironment {
  const { task, search } = chatFixtureTask();
  return {
    sampler: { description: "qwen3-chat fixture", draw: (_step, _round, count) => Array(count).fill(task) },
    tools: () => [search],
    verify: (_task, answer) => answer?.includes("1200") ?? false,
    reward: (trajectory) => {
      const tokens = trajectory.turns.reduce((n, turn) => n + turn.tokenIds.length, 0);
      return { ...trajectory, outcomeReward: (trajectory.correct ? 1 : 0) - tokens / 1000 };
    },
  };
}
