/**
 * `agentrl tool`: call one tool of the embedded world from the shell and print its `ToolResult` as
 * JSON (status, content, injected, refs/value, latencyMs).
 *
 *   agentrl tool search zenda --seed 3            → the document of zenda in world 3
 *   agentrl tool search "population of zenda" --top-k 2 --noise 0.4 --noise-seed 7
 *   agentrl tool calc 1991 - 1850                 → {"status":"ok","content":"141",…}
 *   agentrl tool calc -- "-5 + 3"                 (`--` before an expression that starts with -)
 *   agentrl tool specs                            → the tools as a policy sees them (JSON schemas)
 *
 * The words of the query or expression may be given unquoted: they are joined with spaces.
 */
import type { Command } from "commander";
import { callTool } from "../../tools/call-tool.ts";
import { uniformNoise } from "../../tools/noise.ts";
import { toolSpec } from "../../tools/spec.ts";
import { worldTools } from "../../tools/world-tools.ts";
import { generateWorld } from "../../world/index.ts";
import { addToolNoiseOptions, numberOption } from "./options.ts";

interface ToolCommandOptions {
  seed: number;
  topK: number;
  noise: number;
  noiseSeed?: number;
  timeout: number;
}

function addCommonOptions(command: Command): Command {
  return addToolNoiseOptions(command).option(
    "--timeout <ms>",
    "abandon the call after this many milliseconds",
    numberOption("--timeout", { min: 1 }),
    10_000,
  );
}

/** The world's tools with the command's noise; `documents` is empty for calc (it needs no world). */
async function runTool(
  name: "search" | "calc",
  text: string,
  options: ToolCommandOptions,
  documents: () => { id: string; title: string; text: string }[],
): Promise<void> {
  const tools = worldTools(
    { documents: documents() },
    {
      topK: options.topK,
      noise: options.noise > 0 ? uniformNoise(options.noise) : undefined,
      seed: options.noiseSeed ?? options.seed,
    },
  );
  const tool = tools.find((candidate) => candidate.name === name)!;
  const result = await callTool(tool, { [tool.textArgument]: text }, { timeoutMs: options.timeout });
  console.log(JSON.stringify(result, null, 2));
}

export function register(program: Command): void {
  const tool = program
    .command("tool")
    .description("Call one tool of the embedded world from the shell and print its result as JSON");

  addCommonOptions(
    tool
      .command("search")
      .description("BM25 search over the documents of a generated world")
      .argument("<query...>", "what to search for (words are joined with spaces)")
      .option("--seed <n>", "world seed", numberOption("--seed", { integer: true, min: 0 }), 0)
      .option(
        "--top-k <k>",
        "documents per result",
        numberOption("--top-k", { integer: true, min: 1, max: 100 }),
        1,
      ),
  ).action(async (words: string[], options: ToolCommandOptions) => {
    await runTool("search", words.join(" "), options, () => generateWorld(options.seed).documents);
  });

  addCommonOptions(
    tool
      .command("calc")
      .description("Evaluate arithmetic (+ - * / % ** and parentheses) with the calc tool")
      .argument("<expression...>", "the expression (words are joined with spaces; put -- before a leading -)")
      .option(
        "--seed <n>",
        "seed used for the noise draws when --noise-seed is absent",
        numberOption("--seed", { integer: true, min: 0 }),
        0,
      ),
  ).action(async (words: string[], options: Omit<ToolCommandOptions, "topK">) => {
    await runTool("calc", words.join(" "), { ...options, topK: 1 }, () => []);
  });

  tool
    .command("specs")
    .description(
      "Print the world's tools as a policy sees them: name, description, JSON schema, text argument",
    )
    .option(
      "--top-k <k>",
      "documents per search result",
      numberOption("--top-k", { integer: true, min: 1, max: 100 }),
      1,
    )
    .action((options: { topK: number }) => {
      const specs = worldTools({ documents: [] }, { topK: options.topK }).map(toolSpec);
      console.log(JSON.stringify(specs, null, 2));
    });
}
