/**
 * The agent of an RL run (`agentrl train rl --agent <module>` or `--agent-cmd "<command>"`), kept in
 * the run's config beside the RL fields (`agent: { module, timeoutMs }` or `{ command, timeoutMs }`),
 * so `--resume` rolls out the same agent without being told again. The RL config itself stays
 * strict (src/rl/config.ts); this only adds the one field.
 */
import { existsSync } from "node:fs";
import { parseRlConfig, type RlConfig } from "../rl/config.ts";

export interface RunAgent {
  /** The module as `--agent` named it (relative to the working directory it was started from). */
  module?: string;
  /** The command as `--agent-cmd` gave it (in place of a module). */
  command?: string;
  /** Milliseconds an episode may run. */
  timeoutMs: number;
}

/** An RL run's stored config: the RL config, plus the agent when the run rolls one out. */
export type RlRunConfig = RlConfig & { agent?: RunAgent };

/** Validates a stored or fresh RL run config; the error names the bad `agent` field. */
export function parseRlRunConfig(raw: unknown): RlRunConfig {
  const { agent, ...rest } = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
  const config = parseRlConfig(rest);
  if (agent === undefined) return config;
  const value = agent as Partial<RunAgent> | null;
  if (typeof value?.command === "string" && value.command !== "" && value.module === undefined) {
    if (typeof value.timeoutMs !== "number" || !(value.timeoutMs > 0))
      throw new Error(
        `invalid RL config: agent.timeoutMs must be a positive number, got ${JSON.stringify(value.timeoutMs)}`,
      );
    return { ...config, agent: { command: value.command, timeoutMs: value.timeoutMs } };
  }
  if (typeof value?.module !== "string" || value.module === "")
    throw new Error(
      `invalid RL config: agent.module must be the path of the agent module (or agent.command the command of --agent-cmd), got ${JSON.stringify(value?.module)}`,
    );
  if (typeof value.timeoutMs !== "number" || !(value.timeoutMs > 0))
    throw new Error(
      `invalid RL config: agent.timeoutMs must be a positive number, got ${JSON.stringify(value.timeoutMs)}`,
    );
  return { ...config, agent: { module: value.module, timeoutMs: value.timeoutMs } };
}

/**
 * The agent a resumed run rolls out: the one it was started with. Giving `--agent` again is allowed
 * only with the same module; a run started without one cannot switch to one (its episodes so far
 * came from the episode loop). A module that is gone is a clear error, not a silent in-process run.
 */
export function resumedRunAgent(
  stored: RlRunConfig,
  flag: string | undefined,
  runDir: string,
  commandFlag?: string,
): RunAgent | null {
  if (!stored.agent) {
    if (flag !== undefined || commandFlag !== undefined)
      throw new Error(
        `--resume ${runDir}: the run was started without --agent (its episodes come from the episode loop); resume it without --agent`,
      );
    return null;
  }
  if (stored.agent.command !== undefined) {
    if (flag !== undefined || (commandFlag !== undefined && commandFlag !== stored.agent.command))
      throw new Error(
        `--resume ${runDir}: the run rolls out the command ${JSON.stringify(stored.agent.command)}; leave --agent and --agent-cmd out to resume with it`,
      );
    return stored.agent;
  }
  if (commandFlag !== undefined)
    throw new Error(
      `--resume ${runDir}: the run rolls out the agent module ${stored.agent.module}, not a command; leave --agent-cmd out`,
    );
  if (flag !== undefined && flag !== stored.agent.module)
    throw new Error(
      `--resume ${runDir}: the run rolls out the agent ${stored.agent.module}, not ${flag}; leave --agent out to resume with its own`,
    );
  if (!existsSync(stored.agent.module as string))
    throw new Error(
      `--resume ${runDir}: the run's agent module ${stored.agent.module} is gone (no such file from ${process.cwd()}); restore it, or resume from the directory the run was started in`,
    );
  return stored.agent;
}
