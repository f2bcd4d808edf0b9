/**
 * The model side of an SFT run (train.ts), whatever the model: the lab's GPT here (full
 * fine-tuning), a Hugging Face checkpoint with LoRA in hf-model.ts. The loop sees only this: the
 * trainer and its state (fresh, or resumed from `<run>/checkpoint`), how episodes become examples,
 * the held-out loss, and how checkpoints and the fine-tuned model are written.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { JsonValue } from "../engine/checkpoint.ts";
import { adamw } from "../engine/optim.ts";
import { createTrainer, type Trainer, type TrainState } from "../engine/train.ts";
import { disposeTree, type ParamTree } from "../engine/tree.ts";
import { loadModelCheckpoint, saveModelCheckpoint } from "../policy/embedded/checkpoint.ts";
import type { TokenBatch } from "../policy/embedded/losses.ts";
import { crossEntropy, tokenLoss } from "../policy/embedded/losses.ts";
import type { GptParams } from "../policy/embedded/model.ts";
import { isHfBase } from "../policy/hf/spec.ts";
import type { EncodedEpisode } from "../pretrain/corpus.ts";
import type { Tokenizer } from "../types/policy.ts";
import type { SftConfig } from "./config.ts";
import type { loadSftData } from "./data.ts";
import { maskedLoss } from "./heldout.ts";

/** An hf: run's fine-tuned LoRA adapter (PEFT folder) in the run directory (hf-model.ts). */
export const SFT_ADAPTER = "adapter";

/** What a resumed run's checkpoint stored of the loop's own state. */
export interface SftLoopState {
  seconds?: number;
  initialHeldoutLoss?: number | null;
}

export interface SftModel<P extends ParamTree = ParamTree> {
  trainer: Trainer<P, TokenBatch>;
  state: TrainState<P>;
  /** The loop's state from the checkpoint, or null for a fresh run. */
  resumed: SftLoopState | null;
  /** Longest example (the model's context). */
  maxLen: number;
  /** Default length buckets when the config has none (default: data.ts's `defaultSftBuckets`). */
  buckets?: number[];
  tokenizer: Tokenizer;
  /** Episodes to examples (loadSftData's `encode`); absent: the embedded policy's encoding. */
  encode?: Parameters<typeof loadSftData>[0]["encode"];
  /** The base's own metadata (kept in the fine-tuned model's). */
  baseMetadata: JsonValue;
  /** The masked cross-entropy of `episodes` (nats per policy token), forward only. */
  heldoutLoss(params: P, episodes: readonly EncodedEpisode[]): Promise<number>;
  /** A resumable checkpoint in `dir` with the loop's state. */
  saveCheckpoint(dir: string, state: TrainState<P>, loop: SftLoopState): Promise<void>;
  /** The fine-tuned model in `modelDir`. */
  saveModel(modelDir: string, params: P, metadata: Record<string, JsonValue>): Promise<void>;
  /** Frees the state and the compiled programs. */
  release(state: TrainState<P>): void;
}

/** The run's model: an hf: base (LoRA) or a lab checkpoint, from the base or resumed from `checkpointDir`. */
export async function openSftModel(config: SftConfig, checkpointDir: string): Promise<SftModel> {
  if (isHfBase(config.base)) {
    const { openHfSftModel } = await import("./hf-model.ts");
    return (await openHfSftModel(config, checkpointDir)) as unknown as SftModel;
  }
  return (await openEmbeddedSftModel(config, checkpointDir)) as unknown as SftModel;
}

async function openEmbeddedSftModel(config: SftConfig, checkpointDir: string): Promise<SftModel<GptParams>> {
  const resuming = existsSync(join(checkpointDir, "checkpoint.json"));
  const loaded = await loadModelCheckpoint(resuming ? checkpointDir : config.base);
  const { tokenizer, config: modelConfig } = loaded;
  const baseMetadata = resuming ? (loaded.metadata?.baseMetadata ?? null) : (loaded.metadata ?? null);
  const trainer = createTrainer<GptParams, TokenBatch>({
    loss: tokenLoss(modelConfig, crossEntropy),
    optimizer: adamw({ weightDecay: config.weightDecay }),
    maxGradNorm: config.maxGradNorm,
  });
  let state: TrainState<GptParams>;
  let resumed: SftLoopState | null = null;
  if (resuming) {
    if (!loaded.training) throw new Error(`${checkpointDir} has no training state: cannot resume`);
    state = { params: loaded.params, opt: loaded.training.opt, step: loaded.training.step };
    resumed = (loaded.training.state ?? {}) as SftLoopState;
  } else {
    if (loaded.training) disposeTree(loaded.training.opt as never);
    state = trainer.init(loaded.params);
  }
  return {
    trainer,
    state,
    resumed,
    maxLen: modelConfig.maxLen,
    tokenizer,
    baseMetadata: baseMetadata as JsonValue,
    heldoutLoss: async (params, episodes) => (await maskedLoss(params, modelConfig, episodes)).loss,
    saveCheckpoint: async (dir, current, loop) => {
      await saveModelCheckpoint(dir, {
        config: modelConfig,
        tokenizer,
        params: current.params,
        training: { step: current.step, opt: current.opt, state: loop as unknown as JsonValue },
        metadata: { sftConfig: config as unknown as JsonValue, baseMetadata: baseMetadata as JsonValue },
      });
    },
    saveModel: async (modelDir, params, metadata) => {
      await saveModelCheckpoint(modelDir, { config: modelConfig, tokenizer, params, metadata });
    },
    release: (current) => {
      disposeTree(current.params);
      disposeTree(current.opt as never);
      trainer.dispose();
    },
  };
}
