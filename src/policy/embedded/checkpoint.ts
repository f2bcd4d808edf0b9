/**
 * Checkpoints of the embedded policy: weights (model.safetensors), optionally the optimizer state
 * (optimizer.safetensors), and a manifest with the model config, the tokenizer's full token list
 * and the training state (step, PRNG key words, free-form trainer state such as a data cursor),
 * all covered by SHA-256 sums (src/engine/checkpoint.ts). Loading checks every tensor's shape
 * against the config, so a checkpoint either loads exactly or fails with a clear error. The value
 * head (`params.value`) is optional: saved when present, loaded when the file has it.
 */
import { CheckpointError, type JsonValue, loadCheckpoint, saveCheckpoint } from "../../engine/checkpoint.ts";
import type { AdamWState } from "../../engine/optim.ts";
import { type HostTensor, type ParamTree, treeFromHost, treeToHost } from "../../engine/tree.ts";
import { type GptConfig, gptParamShapes, validateGptConfig } from "./config.ts";
import type { GptParams } from "./model.ts";
import { WordTokenizer } from "./tokenizer.ts";

export const MODEL_KIND = "agentrl-gpt";

export interface TrainingCheckpointState {
  /** Optimizer steps taken. */
  step: number;
  opt: AdamWState<GptParams>;
  /** Words of the PRNG key to continue from (see `keyToWords`), if the run uses one. */
  rngKey?: [number, number];
  /** Anything else the trainer needs to resume exactly (data cursor, schedule, seed…). */
  state?: JsonValue;
}

export interface ModelCheckpoint {
  config: GptConfig;
  tokenizer: WordTokenizer;
  params: GptParams;
  training?: TrainingCheckpointState;
  /** Free-form description (source, corpus, metrics) stored in the manifest. */
  metadata?: Record<string, JsonValue>;
}

/** Writes a checkpoint directory (replacing it). Does not consume any array. */
export async function saveModelCheckpoint(dir: string, checkpoint: ModelCheckpoint): Promise<void> {
  const { config, tokenizer, params, training } = checkpoint;
  validateGptConfig(config);
  if (tokenizer.vocabSize !== config.vocabSize) {
    throw new Error(
      `saveModelCheckpoint: tokenizer has ${tokenizer.vocabSize} tokens, config.vocabSize is ${config.vocabSize}`,
    );
  }
  const tensors: Record<string, Record<string, HostTensor>> = { model: await treeToHost(params) };
  const manifest: Record<string, JsonValue> = {
    kind: MODEL_KIND,
    config: { ...config },
    tokenizer: tokenizer.toJSON() as unknown as JsonValue,
    metadata: checkpoint.metadata ?? {},
  };
  if (training) {
    const opt = training.opt as unknown as { count: ParamTree; mu: ParamTree; nu: ParamTree };
    tensors.optimizer = await treeToHost({ count: opt.count, mu: opt.mu, nu: opt.nu });
    manifest.training = {
      step: training.step,
      rngKey: training.rngKey ?? null,
      state: training.state ?? null,
    };
  }
  await saveCheckpoint(dir, { manifest, tensors });
}

/** Shapes of the optional value head's tensors (model.ts `ValueHeadParams`). */
export function valueHeadShapes(config: GptConfig): Record<string, number[]> {
  return { "value.w": [config.dModel], "value.b": [1] };
}

function checkShapes(
  dir: string,
  file: string,
  tensors: Record<string, HostTensor>,
  expected: Record<string, number[]>,
) {
  const names = Object.keys(expected);
  for (const name of names) {
    const tensor = tensors[name];
    if (!tensor) throw new CheckpointError(`checkpoint ${dir}: ${file} has no tensor "${name}"`);
    if (tensor.shape.join(",") !== expected[name].join(",")) {
      throw new CheckpointError(
        `checkpoint ${dir}: ${file} tensor "${name}" has shape [${tensor.shape}], expected [${expected[name]}]`,
      );
    }
  }
  const extra = Object.keys(tensors).filter((name) => !(name in expected));
  if (extra.length > 0)
    throw new CheckpointError(`checkpoint ${dir}: ${file} has unexpected tensors ${extra.join(", ")}`);
}

/** Reads and verifies a checkpoint directory written by `saveModelCheckpoint`. */
export async function loadModelCheckpoint(dir: string): Promise<ModelCheckpoint> {
  const { manifest, tensors } = await loadCheckpoint(dir);
  if (manifest.kind !== MODEL_KIND) {
    throw new CheckpointError(
      `checkpoint ${dir}: kind ${JSON.stringify(manifest.kind)}, expected "${MODEL_KIND}"`,
    );
  }
  let config: GptConfig;
  let tokenizer: WordTokenizer;
  try {
    config = validateGptConfig(manifest.config as unknown as GptConfig);
    tokenizer = WordTokenizer.fromJSON(manifest.tokenizer);
  } catch (error) {
    throw new CheckpointError(`checkpoint ${dir}: ${(error as Error).message}`);
  }
  if (tokenizer.vocabSize !== config.vocabSize) {
    throw new CheckpointError(
      `checkpoint ${dir}: tokenizer has ${tokenizer.vocabSize} tokens, config says ${config.vocabSize}`,
    );
  }
  const shapes = gptParamShapes(config);
  if (!tensors.model) throw new CheckpointError(`checkpoint ${dir}: no model.safetensors`);
  // The value head is optional (RL with a critic adds it); when present it is checked like the rest.
  if ("value.w" in tensors.model || "value.b" in tensors.model)
    Object.assign(shapes, valueHeadShapes(config));
  checkShapes(dir, "model.safetensors", tensors.model, shapes);
  const result: ModelCheckpoint = {
    config,
    tokenizer,
    params: treeFromHost<GptParams>(tensors.model),
    metadata: (manifest.metadata ?? {}) as Record<string, JsonValue>,
  };
  const training = manifest.training as { step?: unknown; rngKey?: unknown; state?: JsonValue } | undefined;
  if (training) {
    if (!tensors.optimizer)
      throw new CheckpointError(`checkpoint ${dir}: training state without optimizer.safetensors`);
    const optShapes: Record<string, number[]> = { count: [] };
    for (const [name, shape] of Object.entries(shapes)) {
      optShapes[`mu.${name}`] = shape;
      optShapes[`nu.${name}`] = shape;
    }
    checkShapes(dir, "optimizer.safetensors", tensors.optimizer, optShapes);
    const opt = treeFromHost<ParamTree>(tensors.optimizer) as unknown as AdamWState<GptParams>;
    const rngKey = training.rngKey;
    result.training = {
      step: Number(training.step),
      opt,
      rngKey: Array.isArray(rngKey) ? (rngKey as [number, number]) : undefined,
      state: training.state ?? undefined,
    };
  }
  return result;
}
