/**
 * `agentrl export gguf`: a model as one GGUF file for llama.cpp (and Ollama and LM Studio, which
 * run it): see src/policy/hf/gguf-export.ts.
 *
 *   agentrl export gguf hf:Qwen3-0.6B --out qwen3.gguf --type q8_0
 *   agentrl export gguf runs/rl-1/adapter --out tuned.gguf           (LoRA merged into its base)
 *   agentrl export gguf models/base-strong --out base-strong.gguf --type f32
 *   llama-cli -m qwen3.gguf -p "Hello"
 */
import type { Command } from "commander";
import { exportGguf } from "../../policy/hf/gguf-export.ts";
import { GGUF_FILE_TYPES } from "../../policy/hf/gguf-tensors.ts";
import { parseChoice } from "./options.ts";

interface ExportGgufOptions {
  out?: string;
  type: string;
  base?: string;
  json?: boolean;
}

/** Adds `gguf` under the `export` command. */
export function registerExportGguf(exportCommand: Command): void {
  exportCommand
    .command("gguf")
    .description(
      "write a model as one GGUF file for llama.cpp, Ollama and LM Studio (hf: checkpoints, LoRA adapters merged into their base, lab models)",
    )
    .argument(
      "<model>",
      "hf: checkpoint folder, a run's model or adapter folder (merged into its base), or a lab model directory",
    )
    .option("--out <file>", "GGUF file to write (replaced when complete)")
    .option("--type <type>", `tensor type (${GGUF_FILE_TYPES.join(", ")}; norms and biases stay f32)`, "f16")
    .option(
      "--base <dir>",
      "an adapter's base checkpoint folder (default: the one adapter_config.json names)",
    )
    .option("--json", "print the summary as JSON")
    .action(async (model: string, _: unknown, command: Command) => {
      // `export`'s own --out and --json parse first and take those flags wherever they stand.
      const options = command.optsWithGlobals<ExportGgufOptions>();
      if (options.out === undefined) throw new Error("export gguf: --out <file> is required");
      const type = parseChoice("--type", options.type, GGUF_FILE_TYPES);
      const summary = await exportGguf(model, options.out, { type, base: options.base });
      if (options.json) {
        console.log(JSON.stringify(summary));
        return;
      }
      const mb = (summary.bytes / 2 ** 20).toFixed(1);
      console.log(
        `wrote ${summary.architecture} ${summary.type} (${summary.parameters} parameters, ${summary.tensors} tensors, ${mb} MiB) to ${summary.out}`,
      );
      console.log(
        `tokenizer ${summary.tokenizer}, vocabulary ${summary.vocabSize}, chat template ${summary.chatTemplate ? "included" : "none"}`,
      );
      for (const note of summary.notes) console.log(`note: ${note}`);
    });
}
