/**
 * Runs `agentrl` subcommands in process for tests: a fresh program with the given registrations,
 * commander's exits turned into exceptions, and what the command prints captured.
 */
import { Command } from "commander";

export interface CliOutput {
  /** console.log lines (stdout). */
  out: string[];
  /** console.error lines. */
  err: string[];
}

function overrideExits(command: Command): void {
  command.exitOverride();
  command.configureOutput({ writeErr: () => {}, writeOut: () => {} });
  for (const sub of command.commands) overrideExits(sub);
}

/** Parses `args` (without `node agentrl`) through the commands `register` adds. */
export async function runCli(
  register: ((program: Command) => void) | ((program: Command) => void)[],
  args: readonly string[],
): Promise<CliOutput> {
  const program = new Command();
  for (const add of Array.isArray(register) ? register : [register]) add(program);
  overrideExits(program);
  const output: CliOutput = { out: [], err: [] };
  const { log, error } = console;
  console.log = (...parts: unknown[]) => output.out.push(parts.join(" "));
  console.error = (...parts: unknown[]) => output.err.push(parts.join(" "));
  try {
    await program.parseAsync(["node", "agentrl", ...args]);
  } finally {
    console.log = log;
    console.error = error;
  }
  return output;
}
