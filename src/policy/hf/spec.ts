import { z } from "zod";
import { HF_SAVE_DTYPES } from "./config.ts";

/** The `hf:<folder>` policy spec (kept apart from load.ts so resolving other specs loads no engine). */
export const HF_PREFIX = "hf:";

/** The folder of an `hf:<folder>` policy spec, or null for another spec. */
export function parseHfSpec(spec: string): string | null {
  if (!spec.startsWith(HF_PREFIX)) return null;
  const folder = spec.slice(HF_PREFIX.length);
  if (folder === "") throw new Error(`policy "${spec}": hf: needs a checkpoint folder (hf:<folder>)`);
  return folder;
}

/** True for a training base given as `hf:<folder>` (a Hugging Face checkpoint, trained with LoRA). */
export function isHfBase(base: string): boolean {
  return base.startsWith(HF_PREFIX);
}

/** LoRA settings (checked against the model, with the valid target names, by lora.ts's resolveLoraConfig). */
export const LoraSettingsSchema = z
  .object({
    rank: z.number().int().min(1).optional(),
    alpha: z.number().positive().optional(),
    targets: z.array(z.string()).min(1).optional(),
    dropout: z.number().min(0).lt(1).optional(),
    rslora: z.boolean().optional(),
  })
  .strict();

/**
 * A config's `saveDtype` field of an `hf:` base: the dtype the final model folder is written in
 * (absent: the base checkpoint's own, as its config.json states it; the CLI's `--save-dtype`).
 */
export const HfSaveDTypeSchema = z.enum(HF_SAVE_DTYPES, {
  error: `must be one of ${HF_SAVE_DTYPES.map((name) => `"${name}"`).join(", ")} (the dtype of the final hf: model folder; absent: the base's own)`,
});

/** Why a config's `saveDtype` is refused without an `hf:` base (the SFT and RL configs say the same). */
export const SAVE_DTYPE_NEEDS_HF =
  "is for an hf:<folder> base (the dtype of its final model folder); a lab checkpoint is saved in float32: leave saveDtype out";

/**
 * A config's `lora` field of an `hf:` base: LoRA settings (absent: PEFT's defaults), or `false`:
 * no adapter, every weight of the checkpoint trained (full fine-tuning; the CLI's
 * `--full-finetune`).
 */
export const HfTuningSchema = z.union([z.literal(false), LoraSettingsSchema], {
  error:
    "must be LoRA settings { rank, alpha, targets, dropout, rslora } or false (full fine-tuning of the hf: checkpoint)",
});
