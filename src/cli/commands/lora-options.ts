/**
 * `--policy hf:<folder>` and the LoRA flags of `train rl` and `train sft`: a Hugging Face
 * checkpoint is trained with a LoRA adapter on its frozen weights (full fine-tuning of one is not
 * supported). Each bad flag is refused naming the flag and the valid values.
 */
import type { Command } from "commander";
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
}

/** Adds `--policy` and the LoRA flags to a train command. */
export function addLoraOptions(command: Command): Command {
  return command
    .option(
      "--policy <spec>",
      "hf:<folder>: train a Hugging Face checkpoint folder with LoRA (the same as --base hf:<folder>)",
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
    .option("--lora-dropout <p>", "dropout on the adapter's input in training, in [0, 1) (default 0)");
}

/**
 * The base (`--policy hf:<folder>` or `--base`) and the LoRA settings of the flags; `fileBase`
 * is the config file's base. LoRA flags need an hf: base.
 */
export function loraFlagsFrom(flags: LoraFlags, fileBase?: string): { base?: string; lora?: LoraSettings } {
  if (flags.policy !== undefined && flags.base !== undefined)
    throw new Error("give either --policy hf:<folder> or --base, not both");
  if (flags.policy !== undefined && parseHfSpec(flags.policy) === null)
    throw new Error(
      `--policy must be hf:<folder> (a Hugging Face checkpoint folder, trained with LoRA), got "${flags.policy}"; a lab checkpoint goes in --base`,
    );
  const base = flags.policy ?? flags.base;
  const lora: LoraSettings = {};
  if (flags.loraRank !== undefined) {
    if (flags.loraRank.trim() === "0")
      throw new Error(
        '--lora-rank must be an integer >= 1, got "0" (full fine-tuning of an hf: checkpoint is not supported: it trains a LoRA adapter)',
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
  if (given && !(effectiveBase && parseHfSpec(effectiveBase) !== null)) {
    const flag = `--lora-${Object.keys(lora)[0]}`;
    throw new Error(`${flag} needs a Hugging Face checkpoint: --policy hf:<folder>`);
  }
  return { ...(base !== undefined ? { base } : {}), ...(given ? { lora } : {}) };
}
