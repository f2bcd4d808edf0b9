/**
 * `agentrl`: the command line. Each subcommand lives in ./commands/<name>.ts and registers itself
 * on the program; `--help` works on every one of them.
 */
import { Command } from "commander";
import { ENGINES, parseEngine, setEngine } from "../engine/backend.ts";
import { commands } from "./commands/index.ts";

const [major] = process.versions.node.split(".").map(Number);
if (major < 24) {
  console.error(
    `agentrl needs Node >= 24 (this is ${process.versions.node}); run it through npm: npx agentrl …`,
  );
  process.exit(1);
}

export function buildProgram(): Command {
  const program = new Command();
  program
    .name("agentrl")
    .description("Train and measure tool-using agents with reinforcement learning")
    .showHelpAfterError()
    .option(
      "--engine <name>",
      `numeric engine for the embedded model: ${ENGINES.join(" or ")} (default: AGENTRL_ENGINE, else onnx)`,
    )
    .exitOverride((error) => {
      throw error;
    })
    .hook("preAction", (command) => {
      const engine = command.opts().engine;
      if (engine === undefined) return;
      setEngine(parseEngine(engine, "--engine"));
      // Child processes (recipe stages, workers) start on the same engine.
      process.env.AGENTRL_ENGINE = engine;
    });
  for (const register of commands) register(program);
  return program;
}

/** Runs the command line; errors print one clear line (no stack) and set a non-zero exit code. */
export async function main(argv: readonly string[] = process.argv): Promise<void> {
  try {
    await buildProgram().parseAsync(argv as string[]);
  } catch (error) {
    const code = (error as { exitCode?: number }).exitCode;
    if (code !== undefined) process.exit(code);
    console.error(`agentrl: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
}

if (import.meta.main) await main();
