/**
 * `agentrl train`: the training commands, each a subcommand registered on one `train` parent:
 * `train sft` (src/cli/commands/train-sft.ts) and `train rl` (src/cli/commands/train-rl.ts).
 */
import type { Command } from "commander";
import { registerRl } from "./train-rl.ts";
import { registerSft, trainCommand } from "./train-sft.ts";

export function register(program: Command): void {
  const train = trainCommand(program);
  registerSft(train);
  registerRl(train);
}
