/**
 * The embedded transformer policy: tokenizer, GPT model, training losses, scoring, KV-cache
 * decoding, checkpoints, and the `Policy` built on them.
 *
 * A pretraining loop (jax-js ownership: `trainer.step` consumes the state and the batches and
 * returns the next state; nothing else needs freeing):
 *
 *   const tokenizer = createWordTokenizer([...worldVocabulary(), ...toolMessageWords]);
 *   const config: GptConfig = { vocabSize: tokenizer.vocabSize, dModel: 128, nLayers: 4, nHeads: 4, dFF: 512, maxLen: 128 };
 *   const trainer = createTrainer({ loss: tokenLoss(config, crossEntropy), optimizer: adamw({ weightDecay: 0.1 }), maxGradNorm: 1 });
 *   let state = trainer.init(initGpt(config, keyFromSeed(seed)));
 *   const lr = warmupCosine({ peak: 2e-3, warmupSteps: 100, totalSteps: steps });
 *   for (let step = state.step; step < steps; step++) {
 *     const sequences = corpus.batch(step);                     // { ids, mask }[]: mask 1 on the agent's tokens
 *     const batches = makeTokenBatches(sequences, { maxLen: config.maxLen }); // ≤ 8192 tokens per micro-batch
 *     const [next, result] = await trainer.step(state, batches, lr(step));
 *     state = next;                                            // result: { loss, gradNorm, learningRate, metrics }
 *     if (step % 500 === 0) await saveModelCheckpoint(dir, { config, tokenizer, params: state.params,
 *       training: { step: state.step, opt: state.opt, state: { corpusSeed } } });
 *   }
 *   // Resume: const c = await loadModelCheckpoint(dir); state = { params: c.params, opt: c.training!.opt, step: c.training!.step };
 */
import { disposeTree } from "../../engine/tree.ts";
import { loadModelCheckpoint } from "./checkpoint.ts";
import { EmbeddedPolicy, type EmbeddedPolicyOptions } from "./embedded-policy.ts";

export {
  bucketLength,
  makeTokenBatches,
  type TokenBatchOptions,
  type TokenSequence,
  type WeightNormalization,
} from "./batch.ts";
export {
  loadModelCheckpoint,
  type ModelCheckpoint,
  saveModelCheckpoint,
  type TrainingCheckpointState,
} from "./checkpoint.ts";
export {
  type GptConfig,
  gptParamCount,
  gptParamShapes,
  REFERENCE_CONFIG,
  validateGptConfig,
} from "./config.ts";
export {
  DecodeSession,
  type DecodeSessionOptions,
  type GenerateRequest,
  type GenerateResult,
} from "./decode-session.ts";
export { type EmbeddedModel, EmbeddedPolicy, type EmbeddedPolicyOptions } from "./embedded-policy.ts";
export {
  crossEntropy,
  type PerTokenLoss,
  type TokenBatch,
  type TokenLossOptions,
  tokenLoss,
} from "./losses.ts";
export { type GptParams, gptLogits, initGpt, type TokenStats, tokenStats } from "./model.ts";
export { type SamplingOptions, sampleToken } from "./sampler.ts";
export { type ScoreOptions, type ScoreResult, scoreTokens } from "./score.ts";
export { createWordTokenizer, WordTokenizer, type WordTokenizerJson } from "./tokenizer.ts";

/**
 * Loads a checkpoint directory (see checkpoint.ts) as a policy. The policy id defaults to
 * `embedded:<dir>`; the loaded params are owned by the policy (freed by `close()`).
 */
export async function loadEmbeddedPolicy(
  dir: string,
  options: EmbeddedPolicyOptions = {},
): Promise<EmbeddedPolicy> {
  const checkpoint = await loadModelCheckpoint(dir);
  if (checkpoint.training) {
    disposeTree(checkpoint.training.opt as never);
  }
  const policy = new EmbeddedPolicy(checkpoint, { id: `embedded:${dir}`, ...options });
  disposeTree(checkpoint.params); // the policy holds its own reference
  return policy;
}
