/**
 * `agentrl export hf`: a lab model directory as a Hugging Face checkpoint (GPT-2) that
 * transformers, vLLM and verl load, and `--policy hf:<out>` runs as the lab's policy (its chat
 * template writes the lab's text protocol).
 *
 *   agentrl export hf models/base-strong --out base-strong-hf
 *   python -c "from transformers import AutoModelForCausalLM as M; M.from_pretrained('base-strong-hf')"
 */
import type { Command } from "commander";
import { exportHfCheckpoint } from "../../policy/hf/export-hf.ts";

interface ExportHfOptions {
  out?: string;
  json?: boolean;
}

/** Adds `hf` under the `export` command. */
export function registerExportHf(exportCommand: Command): void {
  exportCommand
    .command("hf")
    .description(
      "write a lab model directory as a Hugging Face checkpoint (GPT-2: transformers, vLLM, verl and --policy hf: load it)",
    )
    .argument("<modelDir>", "lab model directory (models/base-strong, a run's model)")
    .option("--out <dir>", "folder to write (created; refused when it exists and is not empty)")
    .option("--json", "print the summary as JSON")
    .action(async (modelDir: string, _: unknown, command: Command) => {
      // `export`'s own --out and --json parse first and take those flags wherever they stand:
      // read them with the parent's.
      const options = command.optsWithGlobals<ExportHfOptions>();
      if (options.out === undefined) throw new Error("export hf: --out <dir> is required");
      const summary = await exportHfCheckpoint(modelDir, options.out);
      if (options.json) {
        console.log(JSON.stringify(summary));
      } else {
        console.log(
          `wrote ${summary.architecture} (${summary.parameters} parameters, vocabulary ${summary.vocabSize}) to ${summary.out}: ${summary.files.join(", ")}`,
        );
      }
    });
}
