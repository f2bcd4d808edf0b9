/**
 * The pretraining config: one validated object, a doc line per field, defaults in one place. A bad
 * field fails before any work with its path and the valid values.
 */
import { z } from "zod";
import { CORPUS_MIXES } from "./corpus.ts";

export const PretrainConfigSchema = z
  .object({
    /** Name of the base; the checkpoint goes to `<out>/<name>`. */
    name: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, "lower-case letters, digits, '.', '_' or '-'"),
    /** Corpus mix: `strong` or `weak` (see src/pretrain/corpus.ts). */
    mix: z.enum(Object.keys(CORPUS_MIXES) as ["strong", "weak"]),
    /** Tool noise in corpus episodes (overrides the mix's own rate when set). */
    noise: z.number().min(0).max(1).optional(),
    model: z
      .object({
        dModel: z.number().int().positive(),
        nLayers: z.number().int().positive(),
        nHeads: z.number().int().positive(),
        dFF: z.number().int().positive(),
        maxLen: z.number().int().min(64).max(1024),
      })
      .strict(),
    /**
     * Loss weight of the prompt and observation tokens relative to the policy's own (1). 0 trains
     * on the policy's tokens only; a positive weight also teaches the model to read: an
     * observation opens with the entity the query named, so predicting it is copying practice.
     */
    contextLossWeight: z.number().min(0).max(1),
    /** Start from this checkpoint's weights (continued pretraining) instead of a fresh init. */
    init: z.string().min(1).optional(),
    /** Optimizer steps. */
    steps: z.number().int().positive(),
    /** Stop after this many steps although the schedule spans `steps` (a stage of a longer run). */
    stopAfter: z.number().int().positive().optional(),
    /** Padded tokens per step (each step is one bucket: tokensPerStep / T rows). */
    tokensPerStep: z.number().int().min(64),
    /** Peak learning rate (AdamW), reached after `warmupSteps`, then cosine to 10%. */
    learningRate: z.number().positive().max(1),
    warmupSteps: z.number().int().min(0),
    weightDecay: z.number().min(0),
    maxGradNorm: z.number().positive(),
    /** Seed of initialisation and of the corpus stream. */
    seed: z.number().int().min(0),
    /** Save a resumable checkpoint every this many steps. */
    checkpointEvery: z.number().int().positive(),
    /** Episodes per family for the model card's pass@1 (temperature 1, test worlds). */
    cardEpisodes: z.number().int().min(0),
    /** Folder the finished base is written to. */
    out: z.string().min(1),
  })
  .strict();

export type PretrainConfig = z.infer<typeof PretrainConfigSchema>;

export const DEFAULT_PRETRAIN_CONFIG: PretrainConfig = {
  name: "base-strong",
  mix: "strong",
  model: { dModel: 128, nLayers: 4, nHeads: 4, dFF: 512, maxLen: 256 },
  contextLossWeight: 0,
  steps: 400,
  tokensPerStep: 8192,
  learningRate: 2e-3,
  warmupSteps: 30,
  weightDecay: 0.1,
  maxGradNorm: 1,
  seed: 1,
  checkpointEvery: 50,
  cardEpisodes: 200,
  out: "models",
};

/** Validates a partial config over the defaults; the error names every bad field. */
export function parsePretrainConfig(input: unknown): PretrainConfig {
  const merged = {
    ...DEFAULT_PRETRAIN_CONFIG,
    ...(input as object),
    model: { ...DEFAULT_PRETRAIN_CONFIG.model, ...((input as { model?: object })?.model ?? {}) },
  };
  const result = PretrainConfigSchema.safeParse(merged);
  if (!result.success) {
    const problems = result.error.issues.map(
      (issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`,
    );
    throw new Error(`invalid pretrain config:\n  ${problems.join("\n  ")}`);
  }
  if (result.data.model.dModel % result.data.model.nHeads !== 0) {
    throw new Error("invalid pretrain config:\n  model.dModel: must be divisible by model.nHeads");
  }
  return result.data;
}
