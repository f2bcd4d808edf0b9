/**
 * Where a run's agent comes from, and the slots it runs in (slot.ts):
 *
 * - `function`: an agent function in this process (the library API, tests);
 * - `module`: `--agent <module>`, one worker thread per slot (worker-slot.ts);
 * - `command`: `--agent-cmd "<command>"`, one process per episode (command-slot.ts).
 */
import type { Gateway } from "../gateway/server.ts";
import { commandSlot } from "./command-slot.ts";
import { functionSlot } from "./function-slot.ts";
import { type AgentSlot, slotEnvironment } from "./slot.ts";
import type { AgentFunction } from "./types.ts";
import { workerSlot } from "./worker-slot.ts";

export type AgentSource =
  | { kind: "function"; agent: AgentFunction }
  | { kind: "module"; path: string; memoryMb?: number }
  | { kind: "command"; command: string };

/** Heap limit of an `--agent` slot unless `--agent-memory` says otherwise. */
export const DEFAULT_SLOT_MEMORY_MB = 2048;

/** How the source is named in configs and policy ids (`agent:<name>@<policy>`). */
export function agentSourceName(source: AgentSource): string {
  if (source.kind === "command") return `cmd:${source.command}`;
  if (source.kind === "module") return source.path;
  return "function";
}

/** Slot `slotId` of a run behind `gateway`, its clients keyed with `apiKey`. */
export function openSlot(source: AgentSource, slotId: string, gateway: Gateway, apiKey: string): AgentSlot {
  if (source.kind === "function") return functionSlot(source.agent);
  if (source.kind === "module")
    return workerSlot({
      path: source.path,
      slotURL: gateway.slotURL(slotId),
      env: slotEnvironment(gateway.slotURL(slotId), apiKey, gateway.model),
      memoryMb: source.memoryMb ?? DEFAULT_SLOT_MEMORY_MB,
    });
  // A process per episode gets the episode's own URL: a process left over from an earlier
  // episode could then never send calls into this one.
  return commandSlot({
    command: source.command,
    env: (episode) =>
      slotEnvironment(episode.baseURL.replace(/\/v1$/, ""), episode.apiKey, episode.model, episode.toolsURL),
  });
}

/** The agent options `evaluateAgent` and `collectAgentDataset` share. */
export interface AgentSourceOptions {
  /** Path of the agent module (`--agent`; recorded in the config). */
  agentPath?: string;
  /** The loaded agent, run in process (the library API); `agentPath` then only names it. */
  agent?: AgentFunction;
  /** A command run per episode (`--agent-cmd`), in place of a module. */
  agentCommand?: string;
  /** Heap limit of each `--agent` slot in MB (default 2048). */
  agentMemoryMb?: number;
}

/** The source the options name; exactly one of the module and the command. */
export function agentSourceOf(options: AgentSourceOptions): AgentSource {
  const given = [options.agentPath, options.agentCommand].filter((value) => value !== undefined);
  if (given.length !== 1)
    throw new Error("give the agent as exactly one of a module (--agent) and a command (--agent-cmd)");
  if (options.agentCommand !== undefined) {
    if (options.agentCommand.trim() === "") throw new Error("--agent-cmd: the command is empty");
    return { kind: "command", command: options.agentCommand };
  }
  if (options.agent) return { kind: "function", agent: options.agent };
  if (options.agentMemoryMb !== undefined && !(options.agentMemoryMb >= 16))
    throw new Error(`--agent-memory: expected at least 16 (MB), got ${options.agentMemoryMb}`);
  return {
    kind: "module",
    path: options.agentPath as string,
    ...(options.agentMemoryMb !== undefined ? { memoryMb: options.agentMemoryMb } : {}),
  };
}
