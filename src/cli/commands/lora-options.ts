/**
 * `--policy hf:<folder>` and the LoRA and full fine-tuning flags of `train rl` and `train sft`: a
 * Hugging Face checkpoint is trained with a LoRA adapter on its frozen weights (the default: the
 * `--lora-*` flags, PEFT's defaults for those not given), or every weight of it is trained with
 * `--full-finetune` (the config's `lora: false`; TRL's SFTTrainer/GRPOTrainer without a
 * `peft_config`). `--full-finetune` with a `--lora-*` flag, `--lora-rank 0`, either without an
 * `hf:` base, and a `--lora-*` flag over a config file's `lora: false` are refused. Each bad flag
 * is refused naming the flag and the valid values. `--save-dtype` (hf: only) sets the dtype of the
 * final model folder (default: the base's own).
 */
import type { Command } from "commander";
import { HF_SAVE_DTYPES, type HfSaveDType } from "../../policy/hf/config.ts";
import { GPT2_LORA_TARGETS, LORA_DEFAULTS, LORA_TARGETS, type LoraSettings } from "../../policy/hf/lora.ts";

/** Every PEFT module name of a supported architecture (the checkpoint's own are checked when it loads). */
const TARGET_NAMES: readonly string[] = [...LORA_TARGETS, ...GPT2_LORA_TARGETS];

import { parseHfSpec } from "../../policy/hf/spec.ts";
import { parseNumber } from "./options.ts";

export interface LoraFlags {
  policy?: string;
  base?: string;
  loraRank?: string;
  loraAlpha?: string;
  loraTargets?: string;
  loraDropout?: string;
  fullFinetune?: boolean;
  saveDtype?: string;
}

/** Adds `--policy` and the LoRA flags to a train command. */
export function addLoraOptions(command: Command): Command {
  return command
    .option(
      "--policy <spec>",
      "hf:<folder>: train a Hugging Face checkpoint folder, with LoRA or --full-finetune (the same as --base hf:<folder>)",
    )
    .option("--lora-rank <r>", `LoRA rank, an integer >= 1 (hf: only; default ${LORA_DEFAULTS.rank})`)
    .option(
      "--lora-alpha <alpha>",
      `LoRA alpha, > 0; the scale is alpha / rank (default ${LORA_DEFAULTS.alpha})`,
    )
    .option(
      "--lora-targets <list>",
      `comma-separated PEFT module names: ${LORA_TARGETS.join(", ")} (Qwen3, Llama; default ${LORA_DEFAULTS.targets.join(",")}), or ${GPT2_LORA_TARGETS.join(", ")} (GPT-2; default c_attn)`,
    )
    .option("--lora-dropout <p>", "dropout on the adapter's input in training, in [0, 1) (default 0)")
    .option(
      "--full-finetune",
      "hf: only: train every weight of the checkpoint instead of a LoRA adapter (the weights, their gradients and two AdamW moments each are held: memory in docs/real-checkpoints.md); no --lora-* flag with it",
    )
    .option(
      "--save-dtype <dtype>",
      `hf: only: the dtype of the final model folder (merged or fully fine-tuned): ${HF_SAVE_DTYPES.join(", ")} (default: the base checkpoint's own, as its config.json states it; resumable checkpoints and the adapter stay float32)`,
    );
}

/**
 * The base (`--policy hf:<folder>` or `--base`), the LoRA settings and the saved dtype of the
 * flags; `fileBase` is the config file's base. LoRA flags and `--save-dtype` need an hf: base.
 */
export function loraFlagsFrom(
  flags: LoraFlags,
  fileBase?: string,
): { base?: string; lora?: LoraSettings | false; saveDtype?: HfSaveDType } {
  if (flags.policy !== undefined && flags.base !== undefined)
    throw new Error("give either --policy hf:<folder> or --base, not both");
  if (flags.policy !== undefined && parseHfSpec(flags.policy) === null)
    throw new Error(
      `--policy must be hf:<folder> (a Hugging Face checkpoint folder, trained with LoRA or in full), got "${flags.policy}"; a lab checkpoint goes in --base`,
    );
  const base = flags.policy ?? flags.base;
  const lora: LoraSettings = {};
  if (flags.loraRank !== undefined) {
    if (flags.loraRank.trim() === "0")
      throw new Error(
        '--lora-rank must be an integer >= 1, got "0"; for full fine-tuning of the hf: checkpoint give --full-finetune (and no --lora-* flag)',
      );
    lora.rank = parseNumber("--lora-rank", flags.loraRank, { integer: true, min: 1 });
  }
  if (flags.loraAlpha !== undefined) {
    lora.alpha = parseNumber("--lora-alpha", flags.loraAlpha, { min: 0 });
    if (lora.alpha === 0) throw new Error(`--lora-alpha must be a number > 0, got "${flags.loraAlpha}"`);
  }
  if (flags.loraTargets !== undefined) {
    const targets = flags.loraTargets.split(",").map((name) => name.trim());
    for (const target of targets)
      if (!TARGET_NAMES.includes(target))
        throw new Error(
          `--lora-targets: "${target}" is not a module LoRA can adapt; valid: ${LORA_TARGETS.join(", ")} (Qwen3, Llama) or ${GPT2_LORA_TARGETS.join(", ")} (GPT-2)`,
        );
    lora.targets = targets;
  }
  if (flags.loraDropout !== undefined) {
    lora.dropout = parseNumber("--lora-dropout", flags.loraDropout, { min: 0, max: 1 });
    if (lora.dropout >= 1) throw new Error(`--lora-dropout must be in [0, 1), got "${flags.loraDropout}"`);
  }
  const given = Object.keys(lora).length > 0;
  const effectiveBase = base ?? fileBase;
  const isHf = effectiveBase !== undefined && parseHfSpec(effectiveBase) !== null;
  const saved = saveDtypeFlag(flags.saveDtype, isHf);
  if (flags.fullFinetune) {
    if (given)
      throw new Error(
        `--full-finetune trains every weight, with no adapter: drop --lora-${Object.keys(lora)[0]} (the --lora-* flags set up a LoRA adapter), or drop --full-finetune`,
      );
    if (!isHf) throw new Error("--full-finetune needs a Hugging Face checkpoint: --policy hf:<folder>");
    return { ...(base !== undefined ? { base } : {}), lora: false, ...saved };
  }
  if (given && !isHf) {
    const flag = `--lora-${Object.keys(lora)[0]}`;
    throw new Error(`${flag} needs a Hugging Face checkpoint: --policy hf:<folder>`);
  }
  return { ...(base !== undefined ? { base } : {}), ...(given ? { lora } : {}), ...saved };
}

/** `--save-dtype`, checked: one of HF_SAVE_DTYPES, with an hf: base. */
function saveDtypeFlag(value: string | undefined, isHf: boolean): { saveDtype?: HfSaveDType } {
  if (value === undefined) return {};
  if (!(HF_SAVE_DTYPES as readonly string[]).includes(value))
    throw new Error(`--save-dtype must be one of ${HF_SAVE_DTYPES.join(", ")}, got "${value}"`);
  if (!isHf) throw new Error("--save-dtype needs a Hugging Face checkpoint: --policy hf:<folder>");
  return { saveDtype: value as HfSaveDType };
}

/**
 * The config's `lora` field after the flags: `--full-finetune` replaces the file's, LoRA flags
 * update its settings field by field. A LoRA flag over a file's `lora: false` is refused.
 */
export function loraField(fileLora: unknown, flagLora: LoraSettings | false | undefined): unknown {
  if (flagLora === undefined) return fileLora;
  if (flagLora === false) return false;
  if (fileLora === false)
    throw new Error(
      `--lora-${Object.keys(flagLora)[0]}: the config file sets lora: false (full fine-tuning, no adapter); drop the flag, or set lora to LoRA settings in the file`,
    );
  return { ...(fileLora as object | undefined), ...flagLora };
}
