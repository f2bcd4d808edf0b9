/**
 * Test helpers of the RL trainer: a tiny random base over the embedded vocabulary, saved in a temp
 * directory, and a small config that runs a step in about a second. Not used at run time.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { keyFromSeed } from "../engine/init.ts";
import { disposeTree } from "../engine/tree.ts";
import { saveModelCheckpoint } from "../policy/embedded/checkpoint.ts";
import type { GptConfig } from "../policy/embedded/config.ts";
import { initGpt } from "../policy/embedded/model.ts";
import { createWordTokenizer } from "../policy/embedded/tokenizer.ts";
import { embeddedVocabulary } from "../pretrain/corpus.ts";
import { parseRlConfig, type RlConfig } from "./config.ts";

export const TINY_MODEL = { dModel: 32, nLayers: 1, nHeads: 2, dFF: 64, maxLen: 128 } as const;

/** Saves a randomly initialised tiny model; returns its directory. */
export async function saveTinyBase(seed = 3, root?: string): Promise<string> {
  const dir = join(root ?? mkdtempSync(join(tmpdir(), "agentrl-rl-")), "base");
  const tokenizer = createWordTokenizer(embeddedVocabulary());
  const config: GptConfig = { vocabSize: tokenizer.vocabSize, ...TINY_MODEL };
  const params = initGpt(config, keyFromSeed(seed));
  await saveModelCheckpoint(dir, { config, tokenizer, params, metadata: { name: "tiny-test-base" } });
  disposeTree(params);
  return dir;
}

/** A config small enough for tests: 2 tasks × 4 episodes, short budgets, no boundary tracking. */
export function tinyRlConfig(base: string, overrides: Partial<RlConfig> = {}): RlConfig {
  return parseRlConfig({
    name: "tiny",
    base,
    steps: 2,
    families: ["lookup"],
    tasksPerStep: 2,
    groupSize: 4,
    budgets: { maxTurns: 3, maxTokens: 24, maxTurnTokens: 8 },
    reward: "mt-grpo",
    estimator: "mt-grpo",
    dynamicSampling: false,
    learningRate: 1e-3,
    rolloutBatch: 8,
    microBatchTokens: 1024,
    checkpointEvery: 1,
    evalEvery: 0,
    ...overrides,
  });
}

/**
 * Starts testing-resume-child.ts on `directory` and waits until it stalls inside step `step` (after
 * storing that step's trajectories, before updating); `kill()` then SIGKILLs it and waits for its
 * exit. `environment` names the child's environment ("hf-chat"), absent for the lab's.
 */
export async function stallResumeChild(
  directory: string,
  step: number,
  environment?: string,
): Promise<{ kill(): Promise<void> }> {
  const child = spawn(
    process.execPath,
    [
      fileURLToPath(new URL("./testing-resume-child.ts", import.meta.url)),
      directory,
      String(step),
      ...(environment ? [environment] : []),
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  while (!existsSync(join(directory, "stalled"))) {
    if (Date.now() > deadline || child.exitCode !== null)
      throw new Error(`the child never reached step ${step}: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return {
    async kill() {
      child.kill("SIGKILL");
      await exited;
    },
  };
}
