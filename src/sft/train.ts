/**
 * Supervised fine-tuning, top to bottom (the CleanRL shape: one readable driver, no Trainer class).
 * A shipped base learns, with the assistant-only loss (masked cross-entropy on the tokens the
 * policy wrote; prompt and tool-output tokens masked), to imitate the trajectories of one or more
 * datasets: real end-to-end ones (`agentrl data collect`) or stitched ones (`agentrl data stitch`).
 *
 * Each step is one batch of the length-bucketed plan (data.ts), padded to its bucket length and
 * split into micro-batches of at most `microBatchTokens` (gradients summed; token-mean weights over
 * the whole step, so micro-batching does not change the gradient). The held-out loss is computed
 * before the first step, every `heldoutEvery` steps and after the last. Checkpoints every
 * `checkpointEvery` steps (and when `signal` aborts) go to `<runDir>/checkpoint` with the optimizer
 * state; a run whose checkpoint exists resumes from it exactly (the batch plan is a function of the step). The
 * fine-tuned model is written in the base's checkpoint format, so `resolvePolicy(dir)` loads it,
 * with its provenance (base, datasets, config, losses) in the manifest's metadata.
 */
import { writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { peakRssMb } from "../core/peak-rss.ts";
import type { JsonValue } from "../engine/checkpoint.ts";
import { warmupCosine } from "../engine/schedule.ts";
import { makeTokenBatches } from "../policy/embedded/batch.ts";
import type { Store } from "../store/index.ts";
import type { SftConfig } from "./config.ts";
import { defaultSftBuckets, loadSftData, type SftDataCounts, sftBatchPlan } from "./data.ts";
import { openSftModel } from "./model.ts";

export interface SftProgress {
  step: number;
  steps: number;
  loss: number;
  heldoutLoss: number | null;
  tokensPerSecond: number;
}

export interface SftOptions {
  config: SftConfig;
  /** Run directory (checkpoints, and the model unless `config.out`) and its store (metrics). */
  runDir: string;
  store: Store;
  runId: string;
  onProgress?: (progress: SftProgress) => void;
  /** Checked after every step: when aborted, a checkpoint is saved and `trainSft` throws (resume continues). */
  signal?: AbortSignal;
}

export interface SftResult {
  /** The fine-tuned checkpoint (load it with `resolvePolicy(dir)`). */
  modelDir: string;
  steps: number;
  /** The step the run started from (0, or the checkpoint's step when resumed). */
  startStep: number;
  /** Training loss of the last step (nats per policy token). */
  finalLoss: number;
  /** Held-out loss before fine-tuning (null when resumed or without held-out data). */
  initialHeldoutLoss: number | null;
  finalHeldoutLoss: number | null;
  epochs: number;
  data: SftDataCounts;
  seconds: number;
  /** The process's peak resident set (MB) at the end: the run's memory high-water mark. */
  peakRssMb: number;
}

export const SFT_CHECKPOINT = "checkpoint";
export const SFT_MODEL = "model";

export async function trainSft(options: SftOptions): Promise<SftResult> {
  const { config, store, runId } = options;
  const checkpointDir = join(options.runDir, SFT_CHECKPOINT);
  const modelDir = config.out ?? join(options.runDir, SFT_MODEL);

  // ---- model, tokenizer, optimizer (from the base, or resumed): model.ts ----------------------
  const model = await openSftModel(config, checkpointDir);
  const resuming = model.resumed !== null;
  let state = model.state;
  const elapsedBefore = Number(model.resumed?.seconds ?? 0);
  let initialHeldoutLoss: number | null = model.resumed?.initialHeldoutLoss ?? null;
  const startStep = state.step;
  const modelConfig = { maxLen: model.maxLen };

  // ---- data ------------------------------------------------------------------------------------
  const buckets = config.buckets ?? model.buckets ?? defaultSftBuckets(modelConfig.maxLen);
  if (buckets.at(-1)! > modelConfig.maxLen) {
    throw new Error(`sft: bucket ${buckets.at(-1)} is longer than the model's context ${modelConfig.maxLen}`);
  }
  const data = loadSftData({
    data: config.data,
    tokenizer: model.tokenizer,
    ...(model.encode ? { encode: model.encode } : {}),
    maxLen: buckets.at(-1)!,
    correctOnly: config.correctOnly,
    heldoutFraction: config.heldoutFraction,
    seed: config.seed,
  });
  if (data.train.length === 0) {
    throw new Error(
      `sft: no training episodes in ${config.data.join(", ")} (${JSON.stringify(data.counts)})`,
    );
  }
  const plan = sftBatchPlan(
    data.train.map((episode) => episode.ids.length),
    { buckets, tokensPerStep: config.tokensPerStep, seed: config.seed },
  );
  const heldout = data.heldout.slice(0, config.heldoutMaxEpisodes);
  const schedule = warmupCosine({
    peak: config.learningRate,
    warmupSteps: Math.min(config.warmupSteps, config.steps),
    totalSteps: config.steps,
    finalFraction: config.finalLearningRateFraction,
  });
  const evaluateHeldout = async (): Promise<number | null> => {
    if (heldout.length === 0) return null;
    const loss = await model.heldoutLoss(state.params, heldout);
    store.addMetrics(runId, state.step, { "loss/heldout": loss });
    return loss;
  };

  // ---- the loop ----------------------------------------------------------------------------------
  const started = performance.now();
  const seconds = () => elapsedBefore + (performance.now() - started) / 1000;
  let heldoutLoss: number | null = null;
  if (!resuming) {
    initialHeldoutLoss = await evaluateHeldout();
    heldoutLoss = initialHeldoutLoss;
  }
  const save = async () => {
    await model.saveCheckpoint(checkpointDir, state, { seconds: seconds(), initialHeldoutLoss });
    store.addArtifact(runId, { kind: "checkpoint", path: SFT_CHECKPOINT, step: state.step });
  };
  let loss = Number.NaN;
  let tokensSinceStart = 0;
  while (state.step < config.steps) {
    const batch = plan.batch(state.step);
    const episodes = batch.indices.map((i) => data.train[i]);
    const rows = Math.max(1, Math.floor(config.tokensPerStep / batch.length));
    const microBatches = makeTokenBatches(episodes, {
      maxLen: modelConfig.maxLen,
      // Fixed shapes: every micro-batch of a bucket is [B, bucket length], short ones padded with
      // weight-0 rows, so a run compiles one program per bucket.
      microBatchSize: Math.max(1, Math.min(rows, Math.floor(config.microBatchTokens / batch.length))),
      lengthMultiple: batch.length,
      normalization: "token-mean",
    });
    const learningRate = schedule(state.step);
    const [next, result] = await model.trainer.step(state, microBatches, learningRate);
    state = next;
    if (!Number.isFinite(result.loss)) throw new Error(`sft: non-finite loss at step ${state.step}`);
    loss = result.loss;
    tokensSinceStart += episodes.reduce((n, episode) => n + episode.ids.length, 0);
    store.addMetrics(runId, state.step, {
      "loss/train": result.loss,
      "optim/grad_norm": result.gradNorm,
      "optim/learning_rate": learningRate,
      "data/row_length": batch.length,
      "data/rows": episodes.length,
      "data/epoch": batch.epoch,
      "memory/peak_rss_mb": peakRssMb(),
    });
    if (state.step % config.heldoutEvery === 0 || state.step === config.steps)
      heldoutLoss = await evaluateHeldout();
    options.onProgress?.({
      step: state.step,
      steps: config.steps,
      loss,
      heldoutLoss,
      tokensPerSecond: tokensSinceStart / Math.max(1e-9, (performance.now() - started) / 1000),
    });
    if (state.step % config.checkpointEvery === 0 || state.step === config.steps) await save();
    else if (options.signal?.aborted) await save();
    if (options.signal?.aborted && state.step < config.steps) {
      model.release(state);
      throw new Error(`sft: aborted at step ${state.step}; the checkpoint in ${checkpointDir} resumes it`);
    }
  }
  if (startStep >= config.steps) heldoutLoss = await evaluateHeldout();
  // Resumed after the last step (a kill between its checkpoint and the end): its loss is stored.
  if (Number.isNaN(loss))
    loss = store.metrics(runId, "loss/train").find((point) => point.step === state.step)?.value ?? Number.NaN;

  // ---- the fine-tuned model ---------------------------------------------------------------------
  const result: SftResult = {
    modelDir,
    steps: config.steps,
    startStep,
    finalLoss: loss,
    initialHeldoutLoss,
    finalHeldoutLoss: heldoutLoss,
    epochs: config.steps / plan.batchesPerEpoch,
    data: data.counts,
    seconds: seconds(),
    peakRssMb: 0,
  };
  await model.saveModel(modelDir, state.params, {
    name: config.name,
    kind: "sft",
    base: config.base,
    baseMetadata: model.baseMetadata,
    sftConfig: config as unknown as JsonValue,
    datasets: data.sources as unknown as JsonValue,
    result: result as unknown as JsonValue,
  });
  writeFileSync(join(modelDir, "training.json"), `${JSON.stringify(result, null, 2)}\n`);
  store.addArtifact(runId, { kind: "model", path: relative(options.runDir, modelDir), step: state.step });
  model.release(state);
  result.peakRssMb = peakRssMb();
  return result;
}
