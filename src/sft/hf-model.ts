/**
 * The model side of `train sft` on a Hugging Face checkpoint (`base: "hf:<folder>"`), with LoRA
 * or full fine-tuning (`lora: false`) behind policy/hf/tuning.ts's seam (model.ts's seam here):
 * the lab's masked cross-entropy (lora-trainer.ts), episodes rendered by the checkpoint's chat
 * template (sft-encode.ts), the held-out loss scored on the engine with the step's weights (the
 * adapter applied, or the trained weights), the checkpoint a PEFT adapter folder or a full
 * checkpoint folder with the trainer's state (lora-checkpoint.ts), and the fine-tuned model the
 * adapter (`<run>/adapter`) and the merged folder, or the fully trained folder (`<run>/model` or
 * `out`).
 */
import { existsSync, rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { mixSeeds } from "../core/random.ts";
import type { JsonValue } from "../engine/checkpoint.ts";
import { disposeTree, type ParamTree } from "../engine/tree.ts";
import { QUESTION_CLOSE, QUESTION_OPEN } from "../env/protocol.ts";
import { crossEntropy } from "../policy/embedded/losses.ts";
import type { HfEngineModel } from "../policy/hf/engine.ts";
import { loadHfTextSide } from "../policy/hf/load.ts";
import { isHfTrainerCheckpoint } from "../policy/hf/lora-checkpoint.ts";
import { encodeChatEpisode } from "../policy/hf/sft-encode.ts";
import { parseHfSpec } from "../policy/hf/spec.ts";
import { openHfTuning } from "../policy/hf/tuning.ts";
import { loadHfCheckpoint } from "../policy/hf/weights.ts";
import { chatTools } from "../policy/openai/messages.ts";
import type { EncodedEpisode } from "../pretrain/corpus.ts";
import type { Trajectory } from "../types/trajectory.ts";
import type { SftConfig } from "./config.ts";
import { SFT_ADAPTER, type SftLoopState, type SftModel } from "./model.ts";

/** Longest example by default: real contexts are long, and every bucket pads to its length. */
const HF_SFT_MAX_LEN = 4096;

/** The question of an episode-loop trajectory (its prompt is `<q> question </q>`). */
function questionOf(trajectory: Trajectory): string {
  const text = trajectory.prompt.text;
  const open = `${QUESTION_OPEN} `;
  const close = ` ${QUESTION_CLOSE}`;
  return text.startsWith(open) && text.endsWith(close) ? text.slice(open.length, -close.length) : text;
}

export async function openHfSftModel(config: SftConfig, checkpointDir: string): Promise<SftModel<ParamTree>> {
  const folder = resolve(parseHfSpec(config.base)!);
  const runDir = dirname(checkpointDir);
  const checkpoint = loadHfCheckpoint(folder);
  const text = await loadHfTextSide(folder, checkpoint.config.modelType);
  const maxLen = Math.min(checkpoint.config.maxPositions, HF_SFT_MAX_LEN);
  const tuning = openHfTuning(checkpoint, folder, config.lora, {
    loss: crossEntropy,
    optimizer: { weightDecay: config.weightDecay },
    maxGradNorm: config.maxGradNorm,
    seed: config.seed,
  });
  const trainer = tuning.trainer;
  let state: SftModel<ParamTree>["state"];
  let resumed: SftLoopState | null = null;
  if (isHfTrainerCheckpoint(checkpointDir)) {
    const loaded = await tuning.load(checkpointDir);
    state = loaded.state;
    resumed = loaded.trainer as SftLoopState;
  } else {
    state = tuning.init(mixSeeds(config.seed, 0x5f7));
  }
  return {
    trainer,
    state,
    resumed,
    maxLen,
    buckets: [64, 128, 256, 512, 1024, 2048, 4096].filter((length) => length <= maxLen),
    tokenizer: {
      encode: (s) => text.tokenizer.encode(s),
      decode: (ids) => text.tokenizer.decode(ids),
      vocabSize: text.tokenizer.vocabSize,
    },
    encode: (trajectory, tools) =>
      encodeChatEpisode(trajectory, { question: questionOf(trajectory) }, text, {
        ...(tools ? { tools: chatTools(tools) } : {}),
        maxLen,
      }),
    baseMetadata: { hf: folder },
    heldoutLoss: async (params, episodes) => {
      const engine = await tuning.engine(params, maxLen);
      try {
        return pooledLoss(engine, episodes);
      } finally {
        engine.dispose();
      }
    },
    saveCheckpoint: async (dir, current, loop) => {
      await tuning.save(dir, current, loop as unknown as JsonValue);
    },
    saveModel: async (modelDir, params, metadata) => {
      if (existsSync(modelDir) && !config.out) rmSync(modelDir, { recursive: true, force: true });
      await tuning.saveModel(modelDir, params, join(runDir, SFT_ADAPTER), { dtype: config.saveDtype });
      await writeFile(join(modelDir, "agentrl-training.json"), `${JSON.stringify(metadata, null, 2)}\n`);
    },
    release: (current) => {
      disposeTree(current.params as never);
      disposeTree(current.opt as never);
      trainer.dispose();
    },
  };
}

/** Pooled NLL of the masked tokens (nats per token), each episode scored alone (`sequenceLogprobs`). */
function pooledLoss(engine: HfEngineModel, episodes: readonly EncodedEpisode[]): number {
  let nll = 0;
  let tokens = 0;
  for (const episode of episodes) {
    // logprobs[t] = log p(ids[t] | ids[<t]).
    const [logprobs] = engine.sequenceLogprobs([episode.ids]);
    for (let t = 1; t < episode.ids.length; t++) {
      if (episode.mask[t] !== 1) continue;
      nll -= logprobs[t];
      tokens++;
    }
  }
  return tokens === 0 ? Number.NaN : nll / tokens;
}
