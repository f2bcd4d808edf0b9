/**
 * RL through the gateway: a `rollout` for `trainRl` (src/rl/train.ts) that runs each episode of a
 * step as a user's agent, calling the live policy through `agentrl serve`'s server and the
 * recording gateway, in process. The gateway samples with the current parameters (the trainer
 * updates them between steps), so the trajectories carry exactly the ids and log-probs the update
 * needs; episode seeds, groups and ids are the trainer's. Sampling settings an agent sends are
 * ignored: the trainer's policy decides them (as agent-lightning's gateway forces its temperature).
 * The agent runs in slots (agent-source.ts: worker threads for a module, a process per episode for
 * a command). The slots, the gateway and the server stay up from one step to the next (a slot
 * imports its agent once per run, not once per step); `close()` ends them. An episode whose upstream call
 * failed carries an `infra` failure; an agent's own failure an `agent` one.
 */
import type { RunEpisodesOptions } from "../env/run-episodes.ts";
import { type Gateway, startGateway } from "../gateway/server.ts";
import { httpUpstream } from "../gateway/upstream.ts";
import { startChatServer } from "../serve/server.ts";
import { infraFailure } from "../types/failure.ts";
import type { Policy } from "../types/policy.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { upstreamFailed } from "./agent-runner.ts";
import { type AgentSource, openSlot } from "./agent-source.ts";
import { runAgentEpisode } from "./run-episode.ts";
import type { AgentSlot } from "./slot.ts";
import { startToolsServer, type ToolsServer } from "./tools-server.ts";
import type { AgentFunction } from "./types.ts";

export interface AgentRolloutOptions {
  /** An agent function (run in process) or where the agent comes from. */
  agent: AgentFunction | AgentSource;
  /** Milliseconds an episode may run (default 120 000). */
  timeoutMs?: number;
  /** Episodes running at once (default: the trainer's batch size). */
  concurrency?: number;
  /** Prefix breaks seen so far (the trajectories themselves record theirs). */
  onPrefixBreaks?: (count: number) => void;
}

/** A rollout whose slots, gateway and server stay up between the trainer's steps. */
export interface AgentRollout {
  (options: RunEpisodesOptions): Promise<Trajectory[]>;
  /** Ends the slots, the gateway and the server (call it when training ends, however it ends). */
  close(): Promise<void>;
}

interface Kept {
  /** The server settings it was opened with: another batch size or turn budget opens anew. */
  key: string;
  gateway: Gateway;
  close(): Promise<void>;
  tools: ToolsServer | null;
  slots: AgentSlot[];
}

export function agentRollout(agentOptions: AgentRolloutOptions): AgentRollout {
  const source: AgentSource =
    typeof agentOptions.agent === "function"
      ? { kind: "function", agent: agentOptions.agent }
      : agentOptions.agent;
  const token = "agentrl-rollout";
  /** The trainer's policy of the running step: the server samples from it through `live`. */
  let current: Policy | null = null;
  let kept: Kept | null = null;

  const open = async (key: string, batch: number, maxTurnTokens: number, first: Policy): Promise<Kept> => {
    // The server must not close the trainer's policy: the trainer owns it.
    const live: Policy = {
      id: first.id,
      protocol: first.protocol,
      ...(first.tokenizer ? { tokenizer: first.tokenizer } : {}),
      act: (contexts, actOptions) => (current ?? first).act(contexts, actOptions),
      release: (ids) => (current ?? first).release?.(ids),
      close: async () => {},
    };
    const server = await startChatServer({
      loadPolicy: () => live,
      // The trainer scores what it sampled at its own temperature: an agent's sampling fields are ignored.
      requestSampling: false,
      model: "live",
      port: 0,
      maxBatch: batch,
      defaults: { maxTokens: maxTurnTokens },
      log: () => {},
    });
    const gateway = await startGateway({
      upstream: httpUpstream({ baseURL: server.url, model: "live" }),
      token,
      policyId: first.id,
      log: () => {},
    });
    const tools = source.kind === "command" ? await startToolsServer(token) : null;
    const slots: AgentSlot[] = [];
    return {
      key,
      gateway,
      tools,
      slots,
      async close() {
        await Promise.all(slots.map((slot) => slot.close()));
        await tools?.close();
        await gateway.close();
        await server.close();
      },
    };
  };
  const close = async () => {
    const ending = kept;
    kept = null;
    await ending?.close();
  };

  const rollout = async (options: RunEpisodesOptions): Promise<Trajectory[]> => {
    current = options.policy;
    const batch = Math.max(1, options.batchSize ?? 64);
    const maxTurnTokens = options.budgets?.maxTurnTokens ?? 32;
    const key = `${batch}/${maxTurnTokens}`;
    if (kept && kept.key !== key) await close();
    kept ??= await open(key, batch, maxTurnTokens, options.policy);
    const { gateway, tools, slots } = kept;
    try {
      const out: Trajectory[] = new Array(options.episodes.length);
      let next = 0;
      let breaks = 0;
      const worker = async (slotIndex: number) => {
        const slotId = `s${slotIndex}`;
        // a slot (a worker thread, with the agent imported) serves every step of the run
        slots[slotIndex] ??= openSlot(source, slotId, gateway, token);
        const slot = slots[slotIndex];
        while (next < options.episodes.length) {
          const index = next++;
          const spec = options.episodes[index];
          const { trajectory, prefixBreaks } = await runAgentEpisode({
            gateway,
            slot,
            slotId,
            toolsURL: (task) =>
              tools && task.worldSeed !== undefined ? tools.worldURL(task.worldSeed) : undefined,
            task: spec.task,
            key: spec.id ?? `${spec.task.id}/${index}`,
            seed: spec.seed,
            verify: options.verify,
            apiKey: token,
            timeoutMs: agentOptions.timeoutMs ?? 120_000,
            ...(options.signal ? { signal: options.signal } : {}),
          });
          breaks += prefixBreaks;
          if (upstreamFailed(trajectory))
            trajectory.failure = infraFailure("upstream-failed", "an upstream call of the episode failed");
          out[index] = { ...trajectory, ...(spec.group !== undefined ? { group: spec.group } : {}) };
          await options.onEpisode?.(out[index]);
        }
      };
      // Slots of a module or command hold a thread or process each: at most 16 unless asked.
      const concurrency =
        agentOptions.concurrency ?? (source.kind === "function" ? batch : Math.min(batch, 16));
      const workers = Math.min(concurrency, options.episodes.length);
      await Promise.all(Array.from({ length: workers }, (_, slotIndex) => worker(slotIndex)));
      agentOptions.onPrefixBreaks?.(breaks);
      return out;
    } catch (error) {
      // a failed or stopped step leaves nothing half-used behind
      await close();
      throw error;
    }
  };
  return Object.assign(rollout, { close });
}
