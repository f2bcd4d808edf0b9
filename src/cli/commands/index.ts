/** Every subcommand of `agentrl`, in the order `--help` lists them. */
import type { Command } from "commander";
import * as boundary from "./boundary.ts";
import * as data from "./data.ts";
import * as demo from "./demo.ts";
import * as doctor from "./doctor.ts";
import * as evalCommand from "./eval.ts";
import * as exportCommands from "./export.ts";
import * as gateway from "./gateway.ts";
import * as mcp from "./mcp.ts";
import * as orchestra from "./orchestra.ts";
import * as passk from "./passk.ts";
import * as pretrain from "./pretrain.ts";
import * as recipe from "./recipe.ts";
import * as rollout from "./rollout.ts";
import * as serve from "./serve.ts";
import * as tasks from "./tasks.ts";
import * as tool from "./tool.ts";
import * as train from "./train.ts";
import * as ui from "./ui.ts";
import * as verify from "./verify.ts";
import * as verl from "./verl.ts";
import * as verlAgentServer from "./verl-agent-server.ts";
import * as world from "./world.ts";

export const commands: ReadonlyArray<(program: Command) => void> = [
  recipe.register,
  demo.register,
  world.register,
  tool.register,
  rollout.register,
  exportCommands.register,
  evalCommand.register,
  boundary.register,
  passk.register,
  serve.register,
  gateway.register,
  verlAgentServer.register,
  pretrain.register,
  data.register,
  train.register,
  tasks.register,
  mcp.register,
  orchestra.register,
  ui.register,
  verify.register,
  verl.register,
  doctor.register,
];
