/**
 * The SFT config: one validated object, a doc line per field, defaults in one place. A bad field
 * fails before any work with its path, the problem and (for choices) the valid values.
 */
import { z } from "zod";
import { HfSaveDTypeSchema, HfTuningSchema, SAVE_DTYPE_NEEDS_HF } from "../policy/hf/spec.ts";

export const SftConfigSchema = z
  .object({
    /** Name of the fine-tuned model (recorded in its metadata). */
    name: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, "lower-case letters, digits, '.', '_' or '-'"),
    /**
     * Checkpoint directory of the base model to start from (a shipped base, e.g. models/base-strong),
     * or `hf:<folder>`: a Hugging Face checkpoint, fine-tuned with LoRA on its frozen weights or in
     * full (`lora`).
     */
    base: z.string().min(1),
    /** Dataset directories (`agentrl data collect|stitch|import`); their trajectories are pooled. */
    data: z.array(z.string().min(1)).min(1),
    /** Train only on trajectories whose answer was correct. */
    correctOnly: z.boolean(),
    /** Where the fine-tuned checkpoint is written (default: `<run directory>/model`). */
    out: z.string().min(1).optional(),
    /** Optimizer steps. */
    steps: z.number().int().positive(),
    /** Padded tokens per step: each step is one length bucket, `tokensPerStep / T` rows of T tokens. */
    tokensPerStep: z.number().int().min(16),
    /** Most B·T tokens per micro-batch; a larger step is accumulated over micro-batches. */
    microBatchTokens: z.number().int().min(16),
    /** Row lengths of the length buckets, ascending, each ≤ the model's maxLen (default 64, 128, maxLen). */
    buckets: z.array(z.number().int().min(16)).min(1).optional(),
    /** Peak learning rate (AdamW), reached after `warmupSteps`, then cosine to `finalLearningRateFraction` of it. */
    learningRate: z.number().positive().max(1),
    warmupSteps: z.number().int().min(0),
    finalLearningRateFraction: z.number().min(0).max(1),
    weightDecay: z.number().min(0),
    /** Clip the global gradient norm to this. */
    maxGradNorm: z.number().positive(),
    /** Fraction of the tasks held out for the held-out loss (split by task id, so held-out tasks are unseen). */
    heldoutFraction: z.number().min(0).max(0.9),
    /** Most held-out episodes scored per evaluation. */
    heldoutMaxEpisodes: z.number().int().positive(),
    /** Compute the held-out loss every this many steps (and before the first and after the last). */
    heldoutEvery: z.number().int().positive(),
    /** Save a resumable checkpoint every this many steps. */
    checkpointEvery: z.number().int().positive(),
    /** Seed of the held-out split and the data order. */
    seed: z.number().int().min(0),
    /**
     * How an `hf:` base is trained: LoRA settings (PEFT's r, lora_alpha, target_modules,
     * lora_dropout; missing ones take LORA_DEFAULTS; the field absent: LoRA with the defaults), or
     * `false`: full fine-tuning, every weight trained (the CLI's `--full-finetune`).
     */
    lora: HfTuningSchema.optional(),
    /**
     * The dtype an `hf:` base's final model folder (merged or fully fine-tuned) is written in:
     * float32, bfloat16 or float16 (absent: the base's own; the CLI's `--save-dtype`). Resumable
     * checkpoints stay float32.
     */
    saveDtype: HfSaveDTypeSchema.optional(),
  })
  .strict();

export type SftConfig = z.infer<typeof SftConfigSchema>;

export const DEFAULT_SFT_CONFIG: Omit<SftConfig, "data"> & { data: string[] } = {
  name: "sft",
  base: "models/base-strong",
  data: [],
  correctOnly: true,
  steps: 300,
  tokensPerStep: 4096,
  microBatchTokens: 8192,
  learningRate: 5e-4,
  warmupSteps: 20,
  finalLearningRateFraction: 0.1,
  weightDecay: 0.01,
  maxGradNorm: 1,
  heldoutFraction: 0.1,
  heldoutMaxEpisodes: 128,
  heldoutEvery: 50,
  checkpointEvery: 50,
  seed: 1,
};

/** Validates a partial config over the defaults; the error names every bad field. */
export function parseSftConfig(input: unknown): SftConfig {
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    throw new Error("invalid sft config: expected a JSON object");
  }
  const result = SftConfigSchema.safeParse({ ...DEFAULT_SFT_CONFIG, ...input });
  if (!result.success) {
    const problems = result.error.issues.map((issue) => {
      const path = issue.path.join(".") || "(root)";
      const keys =
        issue.code === "unrecognized_keys"
          ? ` (valid fields: ${Object.keys(SftConfigSchema.shape).join(", ")})`
          : "";
      return `${path}: ${issue.message}${keys}`;
    });
    throw new Error(`invalid sft config:\n  ${problems.join("\n  ")}`);
  }
  const config = result.data;
  if (config.lora === false && !config.base.startsWith("hf:"))
    throw new Error(
      "invalid sft config:\n  lora: false (full fine-tuning) is for an hf:<folder> base; a lab base is always trained in full: leave lora out",
    );
  if (config.lora && !config.base.startsWith("hf:"))
    throw new Error("invalid sft config:\n  lora: LoRA needs an hf:<folder> base");
  if (config.saveDtype !== undefined && !config.base.startsWith("hf:"))
    throw new Error(`invalid sft config:\n  saveDtype: ${SAVE_DTYPE_NEEDS_HF}`);
  const buckets = config.buckets ?? [];
  if (buckets.some((b, i) => i > 0 && b <= buckets[i - 1])) {
    throw new Error("invalid sft config:\n  buckets: must be strictly ascending");
  }
  return config;
}
