/**
 * The RL config: one validated object, a doc line per field, defaults in one place
 * (`DEFAULT_RL_CONFIG`). A bad field fails before any work with its path, the problem and, for
 * choices, the valid values (estimators, reward presets, aggregation modes, families).
 */
import { z } from "zod";
import { HfSaveDTypeSchema, HfTuningSchema, SAVE_DTYPE_NEEDS_HF } from "../policy/hf/spec.ts";
import { REWARD_PRESETS, type RewardSpec, resolveRewardSpec } from "../reward/index.ts";
import { NOISE_MODES, validateNoise } from "../tools/noise.ts";
import { TASK_FAMILIES } from "../types/task.ts";
import { ADVANTAGE_ESTIMATOR_NAMES } from "./advantages/index.ts";
import { AGGREGATION_MODES } from "./aggregation.ts";
import { KL_ESTIMATORS } from "./loss.ts";

/** Estimators the trainer can run: all of them (`gae`, MT-PPO, adds a value head to the model). */
export const RL_ESTIMATORS = ADVANTAGE_ESTIMATOR_NAMES;

const quoted = (names: readonly string[]) => names.map((name) => `"${name}"`).join(", ");

const estimator = z.string().superRefine((name, context) => {
  if ((RL_ESTIMATORS as string[]).includes(name)) return;
  context.addIssue({
    code: "custom",
    message: `unknown estimator "${name}"; valid: ${quoted(RL_ESTIMATORS)}`,
  });
});

const reward = z.union([z.string(), z.record(z.string(), z.unknown())]).superRefine((value, context) => {
  try {
    if (typeof value === "string") resolveRewardSpec(value);
    else {
      if (!Array.isArray(value.outcome)) throw new Error("a reward spec needs an `outcome` list of terms");
      resolveRewardSpec(value as unknown as RewardSpec);
    }
  } catch (error) {
    const presets = typeof value === "string" ? "" : ` (or a preset: ${quoted(Object.keys(REWARD_PRESETS))})`;
    context.addIssue({ code: "custom", message: `${(error as Error).message}${presets}` });
  }
});

const noise = z
  .union([
    z.number(),
    z.object(Object.fromEntries(NOISE_MODES.map((mode) => [mode, z.number().optional()]))).strict(),
  ])
  .superRefine((value, context) => {
    try {
      if (typeof value === "number") {
        if (!(value >= 0 && value <= 1))
          throw new Error(`a total failure rate must be in [0, 1], got ${value}`);
      } else validateNoise(value);
    } catch (error) {
      context.addIssue({ code: "custom", message: (error as Error).message });
    }
  });

const family = z.enum(TASK_FAMILIES);

export const RlConfigSchema = z
  .object({
    /** Name of the trained model (recorded in its metadata and the run id). */
    name: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, "lower-case letters, digits, '.', '_' or '-'"),
    /**
     * Checkpoint directory of the policy to start from (and the frozen KL reference), or
     * `hf:<folder>`: a Hugging Face checkpoint, trained with LoRA on its frozen weights or fully
     * fine-tuned (`lora`).
     */
    base: z.string().min(1),
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
    /** Where the final model is written (default `<run directory>/model`). */
    out: z.string().min(1).optional(),
    /** RL steps (one rollout batch and its PPO update each). */
    steps: z.number().int().positive(),
    /** Seed of task draws, episode seeds and mini-batch order: a seed reproduces a run. */
    seed: z.number().int().min(0),
    /** Task families to train on (world train split), in equal shares. Ignored with taskIds/taskFile. */
    families: z.array(family).min(1),
    /** Train on these task ids only (e.g. from model-aware selection), drawn without replacement per step. */
    taskIds: z.array(z.string().min(1)).min(1).optional(),
    /** A task file: `tasks.jsonl` of `agentrl data select` (one Task per line), a JSON list of ids or Tasks, or one id per line. */
    taskFile: z.string().min(1).optional(),
    /** World tasks drawn per world (more worlds per step with a smaller value). */
    perWorld: z.number().int().positive(),
    /** Groups (tasks) per step after dynamic sampling. */
    tasksPerStep: z.number().int().positive(),
    /** Rollouts per task (the GRPO group). */
    groupSize: z.number().int().min(2),
    /** Sampling temperature of the rollouts, also the temperature of the loss's log-probs. */
    temperature: z.number().positive().max(10),
    /** Tool noise during rollouts: a total failure rate (split over the modes) or a rate per mode. */
    noise,
    /** Episode budgets (maxTurns, maxTokens, maxTurnTokens, maxFormatErrors, toolTimeoutMs, verifierTimeoutMs); missing ones take the env defaults. */
    budgets: z
      .object({
        maxTurns: z.number().int().positive().optional(),
        maxTokens: z.number().int().positive().optional(),
        maxTurnTokens: z.number().int().positive().optional(),
        maxFormatErrors: z.number().int().positive().optional(),
        toolTimeoutMs: z.number().int().positive().optional(),
        verifierTimeoutMs: z.number().int().positive().optional(),
      })
      .strict(),
    /** Reward: a preset name or a RewardSpec object (src/reward/spec.ts). */
    reward,
    /** Advantage estimator (src/rl/advantages/). */
    estimator,
    /** Estimator options (epsilon, normalization, turnWeight, turnDiscount, stepWeight, gamma, lambda, whiten); missing ones take ADVANTAGE_DEFAULTS. */
    advantage: z
      .object({
        epsilon: z.number().min(0).optional(),
        normalization: z.enum(["std", "none"]).optional(),
        turnWeight: z.number().optional(),
        turnDiscount: z.number().min(0).max(1).optional(),
        stepWeight: z.number().optional(),
        gamma: z.number().min(0).max(1).optional(),
        lambda: z.number().min(0).max(1).optional(),
        whiten: z.boolean().optional(),
      })
      .strict(),
    /** GiGPO's "same state": the last observation (`observation`) or the whole history (`history`). */
    anchors: z.enum(["observation", "history"]),
    /** Drop groups without signal and sample more (DAPO's dynamic sampling). */
    dynamicSampling: z.boolean(),
    /** Most extra rollouts (episodes) per step spent refilling dropped groups. */
    maxExtraRollouts: z.number().int().min(0),
    /** Passes of PPO over each step's batch. */
    ppoEpochs: z.number().int().positive(),
    /** Optimizer steps per epoch (the batch is split into this many mini-batches). */
    miniBatches: z.number().int().positive(),
    /** ε_low of the clip range [1 − ε_low, 1 + ε_high]. */
    clipLow: z.number().positive().lt(1),
    /** ε_high (clip-higher: larger than ε_low keeps low-probability tokens able to grow). */
    clipHigh: z.number().positive(),
    /** Loss aggregation (src/rl/aggregation.ts documents each mode's length bias). */
    aggregation: z.enum(AGGREGATION_MODES),
    /** L of seq-mean-token-sum-norm (default: the episode's policy-token budget). */
    normLength: z.number().int().positive().optional(),
    /** Weight of the KL penalty to the frozen base (0: off, no reference model kept). */
    klCoef: z.number().min(0),
    /** KL estimator on log-probs: k1 = log p − log q, k3 = exp(q − p) − (q − p) − 1. */
    klEstimator: z.enum(KL_ESTIMATORS),
    /** Weight of the entropy bonus (0: off). */
    entropyCoef: z.number().min(0),
    /** Weight of the critic's clipped value loss (`gae` only; it must be > 0 there, or the critic never learns). */
    valueCoef: z.number().min(0),
    /** The value may move this far from its value at sampling time before its loss is clipped (verl's cliprange_value). */
    valueClip: z.number().positive(),
    /** Let the value loss train the shared trunk too (default false: only the value head learns from it). */
    valueGradient: z.boolean(),
    /**
     * The value head's learning rate as a multiple of `learningRate`. Adam moves a weight by about
     * the learning rate per update whatever the gradient, so at the policy's 2e-4 a fresh head's
     * values would move by ~1e-3 per step, far too slowly to track returns of order 1 (verl also
     * gives its critic a larger learning rate than the actor).
     */
    valueLearningRateScale: z.number().positive(),
    /** Peak learning rate (AdamW). */
    learningRate: z.number().positive().max(1),
    /** Linear warm-up steps, then cosine to `finalLearningRateFraction` of the peak (1: constant). */
    warmupSteps: z.number().int().min(0),
    finalLearningRateFraction: z.number().min(0).max(1),
    weightDecay: z.number().min(0),
    /** Clip the global gradient norm to this. */
    maxGradNorm: z.number().positive(),
    /** Most B·T tokens per micro-batch (gradients are summed over micro-batches: exact). The engine
     * runs one micro-batch at a time, so the wasm heap (capped at 4 GiB) is set by one micro-batch,
     * not their count: measured 0.65 GiB for one or eight 2048-token micro-batches on the base. */
    microBatchTokens: z.number().int().min(64),
    /**
     * Episodes decoded together during rollouts and evaluations (KV-cache slots). Measured here (2
     * shared cores, 4-layer d=128 base, 64 episodes): 16 slots ran 13 episodes/s on lookup tasks,
     * 32 → 10, 64 → 6, 128 → 3.5: every decode and prefill call computes all slots, so a large
     * cache costs more than the extra calls of a small one.
     */
    rolloutBatch: z.number().int().positive(),
    /** Save a resumable checkpoint every this many steps (and after the last). */
    checkpointEvery: z.number().int().positive(),
    /** Checkpoint directories kept on disk (the newest ones; 0 keeps all). */
    keepCheckpoints: z.number().int().min(0),
    /** Live boundary tracking every this many steps (and at the start and the end); 0: off. */
    evalEvery: z.number().int().min(0),
    /** Held-out tasks (test split) of the boundary tracking. */
    evalTasks: z.number().int().positive(),
    /** Samples per held-out task: pass@k is tracked up to k = evalSamples. */
    evalSamples: z.number().int().min(2),
    /** Seed of the held-out task set and of its samples (fixed for the whole run). */
    evalSeed: z.number().int().min(0),
    /** Families of the held-out set (default: `families`). */
    evalFamilies: z.array(family).min(1).optional(),
    /** Sampling of the held-out evaluation (the paper's curves: 0.6 / 0.95). */
    evalTemperature: z.number().positive().max(10),
    evalTopP: z.number().gt(0).max(1),
    /** Total tool failure rate during the held-out evaluation. */
    evalNoise: z.number().min(0).max(1),
    /** pass@k_large must fall and pass@1 rise by more than this to flag sharpening. */
    sharpeningTolerance: z.number().min(0),
  })
  .strict()
  .superRefine((config, context) => {
    if (config.estimator === "gae" && !(config.valueCoef > 0)) {
      context.addIssue({
        code: "custom",
        path: ["valueCoef"],
        message: `estimator "gae" trains a critic: valueCoef must be > 0, got ${config.valueCoef}`,
      });
    }
    if (!config.base.startsWith("hf:") && config.lora !== undefined) {
      context.addIssue({
        code: "custom",
        path: ["lora"],
        message:
          config.lora === false
            ? "false (full fine-tuning) is for an hf:<folder> base; a lab base is always trained in full: leave lora out"
            : "LoRA needs an hf:<folder> base",
      });
    }
    if (!config.base.startsWith("hf:") && config.saveDtype !== undefined) {
      context.addIssue({
        code: "custom",
        path: ["saveDtype"],
        message: SAVE_DTYPE_NEEDS_HF,
      });
    }
    if (config.taskIds && config.taskFile) {
      context.addIssue({ code: "custom", path: ["taskFile"], message: "give taskIds or taskFile, not both" });
    }
  });

export type RlConfig = z.infer<typeof RlConfigSchema>;

export const DEFAULT_RL_CONFIG: RlConfig = {
  name: "rl",
  base: "models/base-strong",
  steps: 100,
  seed: 1,
  families: [...TASK_FAMILIES],
  perWorld: 2,
  tasksPerStep: 16,
  groupSize: 8,
  temperature: 1,
  noise: 0,
  budgets: {},
  reward: "exact-match",
  estimator: "grpo",
  advantage: {},
  anchors: "observation",
  dynamicSampling: true,
  maxExtraRollouts: 128,
  ppoEpochs: 1,
  miniBatches: 1,
  clipLow: 0.2,
  clipHigh: 0.28,
  aggregation: "token-mean",
  klCoef: 0,
  klEstimator: "k3",
  entropyCoef: 0,
  valueCoef: 0.5,
  valueClip: 0.5,
  valueGradient: false,
  valueLearningRateScale: 10,
  learningRate: 2e-4,
  warmupSteps: 0,
  finalLearningRateFraction: 1,
  weightDecay: 0,
  maxGradNorm: 1,
  microBatchTokens: 2048,
  rolloutBatch: 16,
  checkpointEvery: 10,
  keepCheckpoints: 3,
  evalEvery: 10,
  evalTasks: 32,
  evalSamples: 32,
  evalSeed: 7,
  evalTemperature: 0.6,
  evalTopP: 0.95,
  evalNoise: 0,
  sharpeningTolerance: 0.01,
};

/** The valid field names, for error messages. */
export const RL_CONFIG_FIELDS = Object.keys(DEFAULT_RL_CONFIG)
  .concat(["out", "taskIds", "taskFile", "normLength", "evalFamilies", "lora", "saveDtype"])
  .sort();

/** Validates a partial config over the defaults; the error names every bad field. */
export function parseRlConfig(input: unknown): RlConfig {
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    throw new Error("invalid rl config: expected a JSON object");
  }
  const result = RlConfigSchema.safeParse({ ...DEFAULT_RL_CONFIG, ...input });
  if (!result.success) {
    const problems = result.error.issues.map((issue) => {
      const path = issue.path.join(".") || "(root)";
      const keys =
        issue.code === "unrecognized_keys" ? ` (valid fields: ${RL_CONFIG_FIELDS.join(", ")})` : "";
      return `${path}: ${issue.message}${keys}`;
    });
    throw new Error(`invalid rl config:\n  ${problems.join("\n  ")}`);
  }
  return result.data;
}
