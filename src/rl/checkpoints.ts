/**
 * RL checkpoints: one directory per saved step under `<run>/checkpoints/step-<n>` (weights,
 * optimizer state, and the trainer state: RL step, seed, elapsed time), registered as a
 * `checkpoint` artifact with its step. A save is atomic (src/engine/checkpoint.ts) and the
 * artifact is registered only after it, so the latest artifact always names a complete
 * checkpoint; a new save never replaces an older directory, and params are checked finite first,
 * so a diverged step can never overwrite a good checkpoint. Only the newest `keep` directories stay
 * on disk (0 keeps all).
 */
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { JsonValue } from "../engine/checkpoint.ts";
import type { AdamWState } from "../engine/optim.ts";
import { type ParamTree, treeToHost } from "../engine/tree.ts";
import { saveModelCheckpoint } from "../policy/embedded/checkpoint.ts";
import type { GptConfig } from "../policy/embedded/config.ts";
import type { GptParams } from "../policy/embedded/model.ts";
import type { WordTokenizer } from "../policy/embedded/tokenizer.ts";
import type { Store } from "../store/index.ts";

export const RL_CHECKPOINTS = "checkpoints";
export const CHECKPOINT_ARTIFACT = "checkpoint";
/** An hf: run's trained LoRA adapter (PEFT folder) in the run directory (hf-training.ts). */
export const RL_ADAPTER = "adapter";

/** What the trainer needs to continue exactly (everything else is a function of the step). */
export interface RlTrainerState {
  /** RL steps completed. */
  rlStep: number;
  seed: number;
  /** Training seconds before this checkpoint (summed over resumes). */
  seconds: number;
}

export function checkpointDirName(step: number): string {
  return `step-${String(step).padStart(6, "0")}`;
}

/** True when every parameter is finite (reads them to the host). */
export async function paramsFinite(params: ParamTree): Promise<boolean> {
  for (const tensor of Object.values(await treeToHost(params))) {
    for (const value of tensor.data) if (!Number.isFinite(value)) return false;
  }
  return true;
}

export interface SaveRlCheckpointOptions {
  runDir: string;
  store: Store;
  runId: string;
  model: { config: GptConfig; tokenizer: WordTokenizer };
  params: GptParams;
  opt: AdamWState<GptParams>;
  optimizerStep: number;
  trainer: RlTrainerState;
  metadata: Record<string, JsonValue>;
  keep: number;
}

/** Saves, registers and prunes; returns the directory relative to the run. Does not consume arrays. */
export async function saveRlCheckpoint(options: SaveRlCheckpointOptions): Promise<string> {
  const step = options.trainer.rlStep;
  if (!(await paramsFinite(options.params))) {
    throw new Error(`rl: params are not finite at step ${step}; the checkpoint was not written`);
  }
  const relative = join(RL_CHECKPOINTS, checkpointDirName(step));
  await saveModelCheckpoint(join(options.runDir, relative), {
    config: options.model.config,
    tokenizer: options.model.tokenizer,
    params: options.params,
    training: {
      step: options.optimizerStep,
      opt: options.opt,
      state: options.trainer as unknown as JsonValue,
    },
    metadata: options.metadata,
  });
  options.store.addArtifact(options.runId, { kind: CHECKPOINT_ARTIFACT, path: relative, step });
  if (options.keep > 0) pruneCheckpoints(join(options.runDir, RL_CHECKPOINTS), options.keep);
  return relative;
}

/** Removes all but the `keep` newest step directories. */
export function pruneCheckpoints(dir: string, keep: number): void {
  if (!existsSync(dir)) return;
  const steps = readdirSync(dir)
    .filter((name) => /^step-\d+$/.test(name))
    .sort();
  for (const name of steps.slice(0, Math.max(0, steps.length - keep))) {
    rmSync(join(dir, name), { recursive: true, force: true });
  }
}

/** Removes step directories after `step` (left by a run that died after saving, before registering). */
export function removeCheckpointsAfter(runDir: string, step: number): void {
  const dir = join(runDir, RL_CHECKPOINTS);
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    const match = /^step-(\d+)$/.exec(name);
    if (match && Number(match[1]) > step) rmSync(join(dir, name), { recursive: true, force: true });
  }
}
