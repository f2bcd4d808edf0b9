/**
 * Pretraining a base model, top to bottom (the CleanRL shape: one readable driver, no Trainer
 * class). A GPT initialised from the seed learns, with masked cross-entropy on the policy's own
 * tokens, to imitate the behaviour mix of the corpus stream. Checkpoints every `checkpointEvery`
 * steps into the run directory; `resume` continues from the last one exactly (same data, same
 * optimizer state). The finished base is written to `<out>/<name>` with its model card.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { JsonValue } from "../engine/checkpoint.ts";
import { keyFromSeed } from "../engine/init.ts";
import { wasmMemoryBytes } from "../engine/jax.ts";
import { adamw } from "../engine/optim.ts";
import { warmupCosine } from "../engine/schedule.ts";
import { createTrainer } from "../engine/train.ts";
import { disposeTree } from "../engine/tree.ts";
import { makeTokenBatches } from "../policy/embedded/batch.ts";
import { loadModelCheckpoint, saveModelCheckpoint } from "../policy/embedded/checkpoint.ts";
import type { GptConfig } from "../policy/embedded/config.ts";
import { crossEntropy, tokenLoss } from "../policy/embedded/losses.ts";
import { type GptParams, initGpt } from "../policy/embedded/model.ts";
import { createWordTokenizer, WordTokenizer } from "../policy/embedded/tokenizer.ts";
import type { Store } from "../store/index.ts";
import type { Trajectory } from "../types/trajectory.ts";
import type { PretrainConfig } from "./config.ts";
import { CORPUS_MIXES, embeddedVocabulary } from "./corpus.ts";
import { pretrainStream } from "./stream.ts";

export interface PretrainProgress {
  step: number;
  steps: number;
  loss: number;
  tokensPerSecond: number;
}

export interface PretrainResult {
  checkpointDir: string;
  steps: number;
  tokens: number;
  policyTokens: number;
  finalLoss: number;
  seconds: number;
  corpus: { episodes: number; dropped: number; successRate: number };
}

export interface PretrainOptions {
  config: PretrainConfig;
  /** Run directory (checkpoints) and its store (metrics). */
  runDir: string;
  store: Store;
  runId: string;
  onProgress?: (progress: PretrainProgress) => void;
  /** Ctrl-C / SIGTERM: the step in flight finishes, a checkpoint is saved, and the call throws. */
  signal?: AbortSignal;
  /**
   * Another corpus than `config.mix` (an orchestrator's episodes): its vocabulary (words beyond the
   * tokenizer's fixed prefix) and its episode batches. `config.mix` is then only a label.
   */
  corpus?: {
    vocabulary: readonly string[];
    episodes: (seed: number, index: number, count: number) => Promise<Trajectory[]>;
  };
}

const CHECKPOINT = "checkpoint";

export async function pretrain(options: PretrainOptions): Promise<PretrainResult> {
  const { config, store, runId } = options;
  const mix = { ...CORPUS_MIXES[config.mix], ...(config.noise !== undefined ? { noise: config.noise } : {}) };
  const checkpointDir = join(options.runDir, CHECKPOINT);

  // ---- model, tokenizer, optimizer (fresh or resumed) ------------------------------------------
  let tokenizer = createWordTokenizer(options.corpus?.vocabulary ?? embeddedVocabulary());
  const modelConfig: GptConfig = { vocabSize: tokenizer.vocabSize, ...config.model };
  const schedule = warmupCosine({
    peak: config.learningRate,
    warmupSteps: config.warmupSteps,
    totalSteps: config.steps,
  });
  const trainer = createTrainer<GptParams, ReturnType<typeof makeTokenBatches>[number]>({
    loss: tokenLoss(modelConfig, crossEntropy),
    optimizer: adamw({ weightDecay: config.weightDecay }),
    maxGradNorm: config.maxGradNorm,
  });
  let state: Awaited<ReturnType<typeof trainer.step>>[0];
  let elapsedBefore = 0;
  if (existsSync(join(checkpointDir, "checkpoint.json"))) {
    const saved = await loadModelCheckpoint(checkpointDir);
    if (!saved.training) throw new Error(`${checkpointDir} has no training state: cannot resume`);
    tokenizer = saved.tokenizer instanceof WordTokenizer ? saved.tokenizer : tokenizer;
    state = { params: saved.params, opt: saved.training.opt, step: saved.training.step };
    elapsedBefore = Number((saved.training.state as { seconds?: number } | null)?.seconds ?? 0);
  } else if (config.init) {
    const start = await loadModelCheckpoint(config.init);
    if (start.config.vocabSize !== modelConfig.vocabSize || start.config.dModel !== modelConfig.dModel) {
      throw new Error(
        `init checkpoint ${config.init} does not match model config ${JSON.stringify(modelConfig)}`,
      );
    }
    tokenizer = start.tokenizer;
    state = trainer.init(start.params);
  } else {
    state = trainer.init(initGpt(modelConfig, keyFromSeed(config.seed)));
  }

  // ---- data: the stream replays to the resumed step --------------------------------------------
  const stream = pretrainStream({
    mix,
    seed: config.seed,
    tokenizer,
    maxLen: config.model.maxLen,
    tokensPerStep: config.tokensPerStep,
    ...(options.corpus ? { episodes: options.corpus.episodes } : {}),
  });
  for (let s = 0; s < state.step; s++) await stream.next();

  // ---- the loop ----------------------------------------------------------------------------------
  const started = performance.now();
  let loss = Number.NaN;
  let tokensSinceStart = 0;
  const save = async () => {
    const seconds = elapsedBefore + (performance.now() - started) / 1000;
    await saveModelCheckpoint(checkpointDir, {
      config: modelConfig,
      tokenizer,
      params: state.params,
      training: { step: state.step, opt: state.opt, state: { seconds } },
      metadata: { config: config as unknown as JsonValue },
    });
    store.addArtifact(runId, { kind: "checkpoint", path: CHECKPOINT, step: state.step });
  };
  const lastStep = Math.min(config.steps, config.stopAfter ?? config.steps);
  while (state.step < lastStep) {
    const batch = await stream.next();
    const sequences =
      config.contextLossWeight > 0
        ? batch.episodes.map(({ ids, mask }) => ({
            ids,
            mask: mask.map((m) => (m ? 1 : config.contextLossWeight)),
          }))
        : batch.episodes;
    const microBatches = makeTokenBatches(sequences, {
      maxLen: config.model.maxLen,
      maxTokensPerMicroBatch: 4096,
      lengthMultiple: 64,
    });
    const learningRate = schedule(state.step);
    const [next, result] = await trainer.step(state, microBatches, learningRate);
    state = next;
    tokensSinceStart += batch.episodes.reduce((n, episode) => n + episode.ids.length, 0);
    if (!Number.isFinite(result.loss)) throw new Error(`pretrain: non-finite loss at step ${state.step}`);
    loss = result.loss;
    store.addMetrics(runId, state.step, {
      "loss/train": result.loss,
      "optim/grad_norm": result.gradNorm,
      "optim/learning_rate": learningRate,
      "data/row_length": batch.length,
      "perf/wasm_bytes": wasmMemoryBytes(),
    });
    const seconds = (performance.now() - started) / 1000;
    options.onProgress?.({
      step: state.step,
      steps: config.steps,
      loss,
      tokensPerSecond: tokensSinceStart / seconds,
    });
    if (state.step % config.checkpointEvery === 0 || state.step === lastStep) await save();
    else if (options.signal?.aborted) await save();
    if (options.signal?.aborted && state.step < lastStep) {
      disposeTree(state.params);
      disposeTree(state.opt as never);
      trainer.dispose();
      throw new Error(
        `pretrain: aborted at step ${state.step}; the checkpoint in ${checkpointDir} resumes it`,
      );
    }
  }

  // Resumed after the last step (a kill between its checkpoint and the end): its loss is stored.
  if (Number.isNaN(loss))
    loss = store.metrics(runId, "loss/train").find((point) => point.step === state.step)?.value ?? Number.NaN;

  // ---- the finished base --------------------------------------------------------------------------
  const outDir = join(config.out, config.name);
  mkdirSync(config.out, { recursive: true });
  await saveModelCheckpoint(outDir, {
    config: modelConfig,
    tokenizer,
    params: state.params,
    metadata: { name: config.name, pretrainConfig: config as unknown as JsonValue },
  });
  const seconds = elapsedBefore + (performance.now() - started) / 1000;
  disposeTree(state.params);
  disposeTree(state.opt as never);
  trainer.dispose();
  const corpus = stream.stats;
  const result: PretrainResult = {
    checkpointDir: outDir,
    steps: lastStep,
    tokens: corpus.tokens,
    policyTokens: corpus.policyTokens,
    finalLoss: loss,
    seconds,
    corpus: {
      episodes: corpus.episodes,
      dropped: corpus.dropped,
      successRate: corpus.episodes ? corpus.correct / corpus.episodes : 0,
    },
  };
  writeFileSync(join(outDir, "training.json"), `${JSON.stringify(result, null, 2)}\n`);
  return result;
}
