/**
 * `agentrl export` and `agentrl import`: a run's trajectories to and from OpenAI chat JSONL.
 *
 *   agentrl export runs/rollout-20250101-120000 --out sft.jsonl --correct-only
 *   agentrl export runs/eval-1 --out plain.jsonl --no-lossless     (for OpenAI's fine-tuning API)
 *   agentrl import other-tool.jsonl --run runs/imported            (creates the run directory)
 *   agentrl export hf models/base-strong --out base-strong-hf        (a model, see export-hf.ts)
 *   agentrl export gguf hf:Qwen3-0.6B --out qwen3.gguf --type q8_0   (for llama.cpp, see export-gguf.ts)
 *
 * Lines carry the full trajectory under `agentrl` unless `--no-lossless`; importing such a line
 * reproduces the trajectory exactly. Tool specs come from the run (recorded by the command that
 * made it); a run without them gets specs derived from the tool calls seen, with empty
 * descriptions. See src/store/openai-chat.ts for the message mapping.
 */
import { basename, dirname } from "node:path";
import type { Command } from "commander";
import {
  createRunDirectoryStaged,
  directoryRun,
  exportOpenAiJsonl,
  type ImportSummary,
  importOpenAiJsonl,
  isRunDirectory,
  openRunDirectory,
  type Store,
  type TrajectoryFilter,
} from "../../store/index.ts";
import { registerExportGguf } from "./export-gguf.ts";
import { registerExportHf } from "./export-hf.ts";
import { parseChoice, parseNumber } from "./options.ts";

const FORMATS = ["openai-jsonl"] as const;

interface ExportCommandOptions {
  format: string;
  out: string;
  run?: string;
  correctOnly?: boolean;
  lossless: boolean;
  family?: string;
  step?: string;
  systemPrompt?: string;
  json?: boolean;
}

interface ImportCommandOptions {
  run: string;
  json?: boolean;
}

/** The run id named by `--run`, or the run the directory stands for. */
function chooseRun(store: Store, directory: string, runId: string | undefined): string {
  return runId === undefined ? directoryRun(store, directory).id : store.requireRun(runId).id;
}

export function register(program: Command): void {
  const exportCommand = program
    .command("export")
    .description("write a run's trajectories as OpenAI chat JSONL (lossless by default)")
    .argument("<runDir>", "run directory (holds store.sqlite)")
    .requiredOption("--out <file>", "JSONL file to write (replaced when complete)")
    .option("--format <format>", `output format (${FORMATS.join(", ")})`, "openai-jsonl")
    .option("--run <id>", "run inside the store (default: the run named like the directory)")
    .option("--correct-only", "only trajectories whose answer was correct")
    .option("--no-lossless", "omit the `agentrl` record (OpenAI's fine-tuning API rejects unknown keys)")
    .option("--family <family>", "only trajectories of this task family")
    .option("--step <n>", "only trajectories of this RL step")
    .option("--system-prompt <text>", "system message to put first in every conversation")
    .option("--json", "print the summary as JSON")
    .action(async (runDir: string, options: ExportCommandOptions) => {
      parseChoice("--format", options.format, FORMATS);
      const filter: TrajectoryFilter = {};
      if (options.family !== undefined) filter.family = options.family;
      if (options.step !== undefined)
        filter.step = parseNumber("--step", options.step, { integer: true, min: 0 });
      const store = openRunDirectory(runDir, { readOnly: true });
      try {
        const runId = chooseRun(store, runDir, options.run);
        const summary = await exportOpenAiJsonl(store, runId, options.out, {
          correctOnly: options.correctOnly,
          lossless: options.lossless,
          filter,
          systemPrompt: options.systemPrompt,
        });
        const tools = summary.tools.map((tool) => tool.name);
        if (options.json) {
          console.log(
            JSON.stringify({
              run: runId,
              out: options.out,
              format: options.format,
              written: summary.written,
              lossless: options.lossless,
              correctOnly: Boolean(options.correctOnly),
              tools,
              toolsFrom: summary.toolsFrom,
            }),
          );
        } else {
          console.log(`wrote ${summary.written} trajectories of run ${runId} to ${options.out}`);
          console.log(`tools (${summary.toolsFrom}): ${tools.join(", ") || "(none)"}`);
        }
      } finally {
        store.close();
      }
    });
  // `export hf <modelDir>` and `export gguf <model>`: commander dispatches to them when the first
  // operand is "hf" or "gguf".
  registerExportHf(exportCommand);
  registerExportGguf(exportCommand);

  program
    .command("import")
    .description("read OpenAI chat JSONL into a run (created as a dataset run if the directory is new)")
    .argument(
      "<file>",
      "JSONL file: agentrl exports import exactly, other chat lines as unscored trajectories",
    )
    .requiredOption("--run <runDir>", "run directory to add the trajectories to")
    .option("--json", "print the counts as JSON")
    .action(async (file: string, options: ImportCommandOptions) => {
      // All or nothing: into an existing run in one transaction; a new run directory is built
      // aside and moved into place only once the whole file is in (see createRunDirectoryStaged).
      const existing = isRunDirectory(options.run);
      let runId: string;
      let summary: ImportSummary;
      if (existing) {
        const store = openRunDirectory(options.run);
        try {
          runId = directoryRun(store, options.run).id;
          summary = await importOpenAiJsonl(store, runId, file);
        } finally {
          store.close();
        }
      } else {
        runId = basename(options.run);
        ({ value: summary } = await createRunDirectoryStaged(
          {
            root: dirname(options.run),
            id: runId,
            kind: "dataset",
            config: { source: file, format: "openai-jsonl" },
          },
          async ({ store, run }) => {
            const imported = await importOpenAiJsonl(store, run.id, file);
            store.finishRun(run.id, "completed", imported);
            return imported;
          },
        ));
      }
      if (options.json) {
        console.log(JSON.stringify({ file, run: runId, created: !existing, ...summary }));
      } else {
        console.log(
          `imported ${summary.imported} of ${summary.lines} lines into run ${runId}` +
            ` (${summary.duplicates} already there, ${summary.lossless} lossless); ${summary.tools} tool specs`,
        );
      }
    });
}
